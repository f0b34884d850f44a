"""Does the advice's fix for a planted latency problem, applied alone, hold the SLO? Measured, not assumed.

On a private loopback testbed (three brokers, RF 3, min.insync.replicas 2), warmed until the brokers' JIT is quiet,
SLO p99 end-to-end ≤ 100 ms, for each plant:

1. the plant's workload (1-KB records, 6 partitions, one producer and one consumer, acks=all, a fixed rate far below
   what the cluster carries) run once with `kafkatune bench`;
2. `kafkatune advise RUN --json` on that run: its first recommendation, which must name the planted setting;
3. that recommendation's action applied alone to the plant's workload (each key to the producer or the consumer as
   brokerconf.catalogue places it, nothing else changed); then the plant, the fixed workload and a control (the
   plant's keys at Kafka's defaults) run `--repeats` times each in rounds (plant, fix, defaults, plant, ...), each
   run its own `kafkatune bench`.

Plants (issue 36's): a producer at linger.ms=1000 with 1-MiB batches (they never fill at this rate: each record
waits for the linger), and a consumer at fetch.min.bytes=10 MB with fetch.wait.max.ms=500 (each fetch waits 500 ms
for bytes that do not come).

It prints and writes benchmarks/results/fixes_alone.json: per plant the advice (rule, title, action); per arm each
run's p99 end-to-end, lost count and tail budget in short (the seconds above the SLO by first cause, loadgen.tail),
the runs that held the SLO out of n, and the median and range of the p99s.

    .venv/bin/python benchmarks/fixes_alone.py [--repeats 4] [--rate 500] [--seconds 20] [--keep DIR | --replay DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, bench, by_cause, demo_workload, log, median, result_file, testbed

from brokerconf import catalogue

SLO_MS = 100.0
ARMS = ("plant", "fix", "defaults")  # the order of each round
PLANTS: dict[str, dict[str, dict[str, Any]]] = {
    "linger": {"producerConfig": {"linger.ms": 1000, "batch.size": 1048576}},
    "fetch": {"consumerConfig": {"fetch.min.bytes": 10485760, "fetch.wait.max.ms": 500}},
}


def workload_configs(configs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The client configs a workload file holds for `configs`: acks=all beneath the producer's."""
    return {
        "producerConfig": {"acks": "all", **configs.get("producerConfig", {})},
        "consumerConfig": dict(configs.get("consumerConfig", {})),
    }


def workload(path: Path, name: str, configs: dict[str, dict[str, Any]], rate: float, seconds: float) -> Path:
    """The plant's bench workload file at `rate` msg/s for `seconds` after a 3-s warm-up; `configs` holds the
    producerConfig and consumerConfig on top of acks=all. A file already there is kept (--replay reads it)."""
    if path.exists():
        return path
    c = workload_configs(configs)
    return demo_workload(path, name, c["producerConfig"], rate, seconds, consumer=c["consumerConfig"])


def advise(run: Path) -> dict[str, Any]:
    """`kafkatune advise RUN --json`: its first recommendation. Exits the benchmark when advise fails or is silent."""
    cmd = [sys.executable, "-m", "kafkatune", "advise", str(run), "--json"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"advise failed ({proc.returncode}): {proc.stderr[-2000:]}")
    recs = json.loads(proc.stdout)["recommendations"]
    if not recs:
        sys.exit(f"advise made no recommendation for {run}")
    return dict(recs[0])


# Keys a fix may set that the sweep does not sweep (so brokerconf.catalogue does not place them): their client.
NOT_SWEPT = {"fetch.wait.max.ms": "consumer"}


def with_fix(plant: dict[str, dict[str, Any]], action: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The plant's client configs with the action's keys set, each on the side the catalogue gives it."""
    out = {side: dict(cfg) for side, cfg in plant.items()}
    for key, value in action.items():
        scope = catalogue.CATALOGUE[key].scope if key in catalogue.CATALOGUE else NOT_SWEPT.get(key)
        if scope not in ("producer", "consumer"):
            sys.exit(f"the fix {key}={value} is not a client setting ({scope}): this benchmark applies client fixes")
        out.setdefault(f"{scope}Config", {})[key] = int(value)
    return out


def one(tb: Any, wl: Path, out: Path) -> dict[str, Any]:
    """One bench run of `wl` into `out` (with `tb` None: the run already there, read again; --replay)."""
    if tb is not None:
        bench(tb, wl, out, SLO_MS)
    return measured(out)


def measured(out: Path) -> dict[str, Any]:
    """A run's p99 end-to-end, lost count, received rate, and its tail budget in short (the seconds above the SLO
    and, per cause that was the first explanation of one, how many: loadgen.tail)."""
    s = json.loads((out / "result.json").read_text())["summary"]
    tail = s.get("tail") or {}
    primary = by_cause(tail)
    p99 = s["end_to_end_latency_ms"]["p99"]
    log(f"  {out.name}: p99 end-to-end {p99} ms, lost {s['lost']}; above the SLO {tail.get('above_slo')} s: {primary}")
    return {
        "p99_e2e_ms": p99,
        "lost": s["lost"],
        "consume_msg_s": s.get("consume_msg_s"),
        "above_slo_s": tail.get("above_slo"),
        "above_slo_by_cause": primary,
    }


def arm(runs: list[dict[str, Any]]) -> dict[str, Any]:
    p99s = [r["p99_e2e_ms"] for r in runs if r["p99_e2e_ms"] is not None]
    return {
        "runs": runs,
        "n": len(runs),
        "held": sum(1 for r in runs if r["p99_e2e_ms"] is not None and r["p99_e2e_ms"] <= SLO_MS and r["lost"] == 0),
        "p99_median_ms": median(p99s) if p99s else None,
        "p99_range_ms": [min(p99s), max(p99s)] if p99s else None,
    }


def plant(tb: Any, tmp: Path, name: str, rate: float, seconds: float, repeats: int) -> dict[str, Any]:
    cfg = PLANTS[name]
    log(f"plant {name}: {cfg}")
    wl_plant = workload(tmp / f"{name}-plant.json", f"{name}-plant", cfg, rate, seconds)
    one(tb, wl_plant, tmp / f"{name}-plant-0")
    rec = advise(tmp / f"{name}-plant-0")
    log(f"  advice: {rec['rule']}: {rec['title']} -> {rec['action']}")
    fixed = with_fix(cfg, rec["action"])
    if tb is None:  # --replay: the advice read again must be the fix the kept runs applied
        ran = json.loads((tmp / f"{name}-fix.json").read_text())
        if any(ran.get(side, {}) != cfg_ for side, cfg_ in workload_configs(fixed).items()):
            sys.exit(f"{name}: the advice read again ({rec['action']}) is not the fix the kept runs applied")
    wls = {
        "plant": wl_plant,
        "fix": workload(tmp / f"{name}-fix.json", f"{name}-fix", fixed, rate, seconds),
        # the control: the plant's keys at Kafka's defaults, what the fix is measured against besides the plant
        "defaults": workload(tmp / f"{name}-defaults.json", f"{name}-defaults", {}, rate, seconds),
    }
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in ARMS}
    for i in range(repeats):
        for a in ARMS:
            runs[a].append(one(tb, wls[a], tmp / f"{name}-{a}-{i + 1}"))
    return {
        "planted": cfg,
        "advice": {"rule": rec["rule"], "title": rec["title"], "action": rec["action"]},
        "fixed": fixed,
        **{a: arm(runs[a]) for a in ARMS},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=4, help="runs of each arm (plant, fix, defaults), in rounds")
    ap.add_argument("--rate", type=float, default=500.0, help="the fixed rate, msg/s of 1 KB")
    ap.add_argument("--seconds", type=float, default=20.0, help="each run's measured window")
    ap.add_argument("--quick", action="store_true", help="2 repeats of 10-s runs")
    ap.add_argument("--keep", metavar="DIR", help="keep every run's folder in DIR (default: removed at the end)")
    ap.add_argument("--replay", metavar="DIR", help="read the runs a --keep DIR kept again (same options): no testbed")
    a = ap.parse_args()
    repeats, seconds = (2, 10.0) if a.quick else (a.repeats, a.seconds)
    if a.keep and Path(a.keep).exists() and any(Path(a.keep).iterdir()):
        ap.error(f"--keep {a.keep}: not empty (an earlier run's workload files there would be run again)")
    if a.replay:  # the runs a --keep left, read again: no testbed
        got = {name: plant(None, Path(a.replay), name, a.rate, seconds, repeats) for name in PLANTS}
    else:
        with tempfile.TemporaryDirectory(prefix="kt-fixes-") as d, testbed(Path(d) / "tb", warm_up_s=90) as tb:
            runs = Path(a.keep) if a.keep else Path(d)
            runs.mkdir(parents=True, exist_ok=True)
            got = {name: plant(tb, runs, name, a.rate, seconds, repeats) for name in PLANTS}
    print("p99 end-to-end, ms: median [range] (runs within the SLO / n)")
    for name, g in got.items():
        print(f"{name}: advice {json.dumps(g['advice']['action'])}")
        for arm_name in ARMS:
            x = g[arm_name]
            print(f"  {arm_name:9} {x['p99_median_ms']} {x['p99_range_ms']} ({x['held']}/{x['n']})")
    result_file(
        "fixes_alone",
        {
            "slo_p99_e2e_ms": SLO_MS,
            "rate_msg_s": a.rate,
            "seconds": seconds,
            "repeats": repeats,
            "testbed": "loopback, warmed (benchmarks/_common.testbed, 90 s at the most)",
            # when the figures were read again from kept runs: their folder (the machine line is the reading's)
            "replayed_from": a.replay,
            "plants": got,
        },
    )


if __name__ == "__main__":
    main()
