"""Does a sustainable rate reproduce? Independent searches of the same configuration on freshly started testbeds.

The shaped testbed of `make demo` (25 MB/s links, 1-KB records, acks=all, 6 partitions, SLO p99 end-to-end
≤ 100 ms). For each of `--testbeds` testbeds, started fresh and warmed until the brokers' JIT is quiet: `--reps`
rounds, each running `kafkatune bench` (producerRate 0: its own probe, its own search, loadgen.search) once per
configuration in a new random order. Then, at `--fraction` (80 %) of each configuration's pooled sustainable rate,
`--fixed-runs` interleaved fixed-rate runs of `--fixed-s` seconds (the operator's next runs), each with its tail
budget (loadgen.tail).

It prints and writes (benchmarks/results/reproducibility.json) per configuration: every search's rate, the largest
/ smallest, each testbed's mean with its 95 % interval and whether it covers the pooled mean; per fixed-rate run its
p99, the largest / smallest p99, and the tail budget of one run at the sustainable rate and of one at the fraction.

    .venv/bin/python benchmarks/reproducibility.py [--testbeds 2] [--reps 3] [--quick]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import bench as run_bench
from _common import demo_workload, log, result_file, testbed

from core import stats
from core.typed import to_json
from testbed import netns

# The client's own defaults: librdkafka's 1,000,000-byte batches (with the harness's 5 requests in flight,
# drivers.kafka), not Kafka's Java defaults of 16,384 that a sweep's kafka-defaults baseline sets. Result files up to
# reproducibility_20261202.json name this configuration "kafka-defaults".
CONFIGS: dict[str, dict[str, Any]] = {
    "client-defaults": {"acks": "all"},
    "demo-best": {"acks": "all", "batch.size": 140000},  # the demo study's recommendation (issue 35)
}
NIC_MB_S = 25.0
SLO_MS = 100.0


def bench(tb: Any, wl: Path, out: Path) -> dict[str, Any]:
    """`kafkatune bench WL --json` on the testbed against the study's SLO (its tail budget is in the line)."""
    return run_bench(tb, wl, out, SLO_MS)


def searches(tb: Any, tmp: Path, reps: int, testbed_no: int, rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in CONFIGS}
    for r in range(reps):
        order = list(CONFIGS)
        rng.shuffle(order)
        for name in order:
            wl = demo_workload(tmp / f"{name}.json", f"repro-{name}", CONFIGS[name], 0, 0.1)
            d = bench(tb, wl, tmp / f"t{testbed_no}-{name}-{r}")
            sus = d["sustainable"]
            steps = [(round(st["rate_msg_s"]), st["held"], len(st["judged_s"])) for st in sus["steps"]]
            row = {
                "testbed": testbed_no,
                "round": r,
                "rate_msg_s": sus["rate_msg_s"],
                "mb_s": sus["mb_s"],
                "probe_msg_s": sus["probe_msg_s"],
                "steps": steps,
                "remeasured": sus["remeasured"],
                "wall_s": round(d["wall_s"], 1),
                "tail": d.get("tail"),
            }
            out[name].append(row)
            log(
                f"testbed {testbed_no} round {r} {name}: {_rate(sus['rate_msg_s'])} ({sus['note']}), "
                f"{len(steps)} steps, {d['wall_s']:.0f} s"
            )
    return out


def _rate(msg_s: float | None) -> str:
    return "no rate held" if msg_s is None else f"{msg_s:,.0f} msg/s"


def fixed_runs(tb: Any, tmp: Path, rates: dict[str, float], n: int, secs: float) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in CONFIGS}
    for i in range(n):
        for name in CONFIGS:
            wl = demo_workload(
                tmp / f"fixed-{name}.json", f"repro-fixed-{name}", CONFIGS[name], round(rates[name]), secs
            )
            d = bench(tb, wl, tmp / f"fixed-{name}-{i}")
            p99 = d["end_to_end_latency_ms"]["p99"]
            out[name].append(
                {
                    "rate_msg_s": round(rates[name]),
                    "p99_e2e_ms": p99,
                    "consume_msg_s": d["consume_msg_s"],
                    "lost": d["lost"],
                    "tail": d.get("tail"),
                }
            )
            log(f"fixed {name} at {rates[name]:,.0f} msg/s run {i}: p99 e2e {p99} ms")
    return out


def summarise(found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, rows in found.items():
        rates = [r["mb_s"] for r in rows if r["mb_s"] is not None]
        if not rates:
            out[name] = {"n": 0, "missing": len(rows)}
            continue
        pooled = statistics.fmean(rates)
        per_tb = {}
        for tbn in sorted({r["testbed"] for r in rows}):
            vals = [r["mb_s"] for r in rows if r["testbed"] == tbn and r["mb_s"] is not None]
            iv = stats.mean_interval(vals)
            per_tb[str(tbn)] = {
                "mb_s": vals,
                "interval": to_json(iv),
                "covers_pooled_mean": iv.low is not None and iv.low <= pooled <= (iv.high or 0),
            }
        out[name] = {
            "n": len(rates),
            "mb_s": rates,
            "pooled_mean_mb_s": pooled,
            "largest_over_smallest": max(rates) / min(rates),
            "no_answer": len(rows) - len(rates),
            "per_testbed": per_tb,
            "median_wall_s": statistics.median(r["wall_s"] for r in rows),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--testbeds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3, help="searches per configuration per testbed")
    ap.add_argument("--fraction", type=float, default=0.8)
    ap.add_argument("--fixed-runs", type=int, default=5)
    ap.add_argument("--fixed-s", type=float, default=30)
    ap.add_argument("--warm-up", type=float, default=240, help="seconds of warm-up at the most (until JIT quiet)")
    ap.add_argument("--quick", action="store_true", help="1 testbed, 1 search each, 2 fixed runs of 10 s")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.quick:
        a.testbeds, a.reps, a.fixed_runs, a.fixed_s = 1, 1, 2, 10
    if not netns.can_shape()[0]:
        sys.exit(f"needs the shaped testbed: {netns.can_shape()[1]}")
    rng = random.Random(a.seed)
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in CONFIGS}
    fixed: dict[str, list[dict[str, Any]]] = {}
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for i in range(a.testbeds):
            with testbed(
                tmp / f"tb{i}", warm_up_s=a.warm_up, network="shaped", nic_mb_s=NIC_MB_S, subnet="198.18.2"
            ) as tb:
                for k, rows in searches(tb, tmp, a.reps, i, rng).items():
                    found[k] += rows
                if i == a.testbeds - 1:  # the fixed-rate runs on the last testbed, at the pooled rates
                    s = summarise(found)
                    rates = {k: a.fraction * s[k]["pooled_mean_mb_s"] * 1e6 / 1024 for k in CONFIGS if s[k]["n"]}
                    fixed = fixed_runs(tb, tmp, rates, a.fixed_runs, a.fixed_s)
    s = summarise(found)
    for name, runs in fixed.items():
        p99s = [r["p99_e2e_ms"] for r in runs if r["p99_e2e_ms"] is not None]
        s[name]["fixed"] = {
            "fraction": a.fraction,
            "seconds": a.fixed_s,
            "runs": runs,
            "all_within_slo": all(p <= SLO_MS for p in p99s) and len(p99s) == len(runs),
            "largest_over_smallest_p99": max(p99s) / min(p99s) if p99s else None,
        }
    for name, d in s.items():
        if not d.get("n"):
            print(f"{name}: no search found a rate")
            continue
        print(
            f"{name}: n={d['n']} sustainable MB/s {', '.join(f'{x:.2f}' for x in d['mb_s'])}; largest/smallest "
            f"{d['largest_over_smallest']:.2f}; pooled mean {d['pooled_mean_mb_s']:.2f}; per testbed "
            + "; ".join(
                f"#{k} {v['interval']['estimate']:.2f} [{v['interval']['low']}, {v['interval']['high']}]"
                f" covers {v['covers_pooled_mean']}"
                for k, v in d["per_testbed"].items()
            )
        )
        if "fixed" in d:
            f = d["fixed"]
            print(
                f"  at {f['fraction']:.0%}: p99 {[r['p99_e2e_ms'] for r in f['runs']]} ms, all within "
                f"{f['all_within_slo']}, largest/smallest {f['largest_over_smallest_p99']}"
            )
    result_file(
        "reproducibility",
        {"args": vars(a), "wall_s": round(time.monotonic() - t_start), "configs": s, "searches": found},
    )


if __name__ == "__main__":
    main()
