"""How the load generator's share of the CPUs changes what it measures, on the testbed where it runs beside the brokers.

Linux's autogroup scheduling (kernel.sched_autogroup_enabled) gives each session an equal share of a busy machine,
whatever its threads: each testbed broker runs in a session of its own, and `kafkatune bench` with its producer and
consumer processes in another. With three brokers busy on two cores the load generator, whose timestamps are the
measurement, then has a quarter of the machine. On the cluster kafkatune tunes the clients have hosts of their own.

Two arms, each `kafkatune bench` in a session of its own: `shared` at the autogroup's default nice 0 (as from a
shell), `first` at nice -10 (a weight about nine times a broker's, so it waits for a CPU only when it wants more
than the machine has). On one shaped testbed (25 MB/s links, the demo's workload: 1-KB records, 6 partitions,
acks=all, SLO p99 end-to-end <= 100 ms): `--searches` sustainable-rate searches per arm, interleaved in a random
order; then `--fixed-runs` fixed-rate runs of `--fixed-s` seconds per arm, interleaved, at `--fraction` of the
`shared` arm's mean sustainable rate. Per run: p99 end-to-end, seconds over the SLO with their primary causes
(loadgen.tail), rates. Printed side by side and kept in benchmarks/results/harness_share.json.

    .venv/bin/python benchmarks/harness_share.py [--searches 2] [--fixed-runs 5] [--fixed-s 30] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import bench, by_cause, demo_workload, log, result_file, testbed

from testbed import netns

ARMS: dict[str, int] = {"shared": 0, "first": -10}  # the bench session's autogroup nice value
NIC_MB_S = 25.0
SLO_MS = 100.0
PRODUCER = {"acks": "all"}


def session_at(nice: int) -> Callable[[], None]:
    """In the child before exec: a session of its own (a new autogroup), at autogroup nice `nice`."""

    def pre() -> None:
        os.setsid()
        with contextlib.suppress(OSError):
            Path("/proc/self/autogroup").write_text(str(nice))

    return pre


def brief(d: dict[str, Any]) -> dict[str, Any]:
    """What a run's JSON line says of its tail: p99, seconds over the SLO and their primary causes."""
    tail = d.get("tail") or {}
    primary = by_cause(tail)
    return {
        "p99_e2e_ms": d["end_to_end_latency_ms"]["p99"],
        "consume_msg_s": d["consume_msg_s"],
        "lost": d["lost"],
        "seconds": tail.get("seconds"),
        "above_slo_s": tail.get("above_slo"),
        "above_slo_by_cause": primary,
        "wall_s": round(d["wall_s"], 1),
    }


def searches(tb: Any, tmp: Path, n: int, rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in ARMS}
    for r in range(n):
        order = list(ARMS)
        rng.shuffle(order)
        for arm in order:
            wl = demo_workload(tmp / f"s-{arm}.json", f"share-{arm}", PRODUCER, 0, 0.1)
            d = bench(tb, wl, tmp / f"search-{arm}-{r}", SLO_MS, session_at(ARMS[arm]))
            sus = d["sustainable"]
            out[arm].append({"rate_msg_s": sus["rate_msg_s"], "mb_s": sus["mb_s"], **brief(d)})
            log(f"search {r} {arm}: {sus['rate_msg_s']} msg/s ({sus['note']}), {d['wall_s']:.0f} s")
    return out


def fixed(tb: Any, tmp: Path, rate: float, n: int, secs: float, rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in ARMS}
    for i in range(n):
        order = list(ARMS)
        rng.shuffle(order)
        for arm in order:
            wl = demo_workload(tmp / f"f-{arm}.json", f"share-fixed-{arm}", PRODUCER, round(rate), secs)
            row = brief(bench(tb, wl, tmp / f"fixed-{arm}-{i}", SLO_MS, session_at(ARMS[arm])))
            out[arm].append(row)
            log(f"fixed {i} {arm} at {rate:,.0f} msg/s: p99 {row['p99_e2e_ms']} ms, over {row['above_slo_by_cause']}")
    return out


def spread(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    xs = [r[key] for r in rows if r.get(key) is not None]
    if not xs:
        return {"n": 0}
    return {
        "n": len(xs),
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "largest_over_smallest": max(xs) / min(xs) if min(xs) else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--searches", type=int, default=2, help="sustainable-rate searches per arm")
    ap.add_argument("--fixed-runs", type=int, default=5, help="fixed-rate runs per arm")
    ap.add_argument("--fixed-s", type=float, default=30)
    ap.add_argument("--fraction", type=float, default=0.8, help="of the shared arm's mean sustainable rate")
    ap.add_argument("--warm-up", type=float, default=240)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1 search and 2 10-s fixed runs per arm: the pipeline")
    a = ap.parse_args()
    if a.quick:
        a.searches, a.fixed_runs, a.fixed_s = 1, 2, 10
    if not netns.can_shape()[0]:
        sys.exit(f"needs the shaped testbed: {netns.can_shape()[1]}")
    if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
        sys.exit("autogroup scheduling is off here (kernel.sched_autogroup_enabled): the arms would not differ")
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        with testbed(tmp / "tb", warm_up_s=a.warm_up, network="shaped", nic_mb_s=NIC_MB_S, subnet="198.18.9") as tb:
            found = searches(tb, tmp, a.searches, rng)
            held = [r["rate_msg_s"] for r in found["shared"] if r["rate_msg_s"]]
            runs = fixed(tb, tmp, a.fraction * statistics.fmean(held), a.fixed_runs, a.fixed_s, rng) if held else {}
    figures: dict[str, Any] = {"args": vars(a), "wall_s": round(time.monotonic() - t0), "arms": {}}
    for arm, nice in ARMS.items():
        f = runs.get(arm, [])
        figures["arms"][arm] = {
            "autogroup_nice": nice,
            "searches": found[arm],
            "sustainable_mb_s": spread(found[arm], "mb_s"),
            "fixed": f,
            "fixed_p99_e2e_ms": spread(f, "p99_e2e_ms"),
            "fixed_above_slo_s": sum(r["above_slo_s"] or 0 for r in f),
        }
        p = figures["arms"][arm]["fixed_p99_e2e_ms"]
        print(
            f"{arm:7s} (autogroup nice {nice:+d}): sustainable MB/s {[r['mb_s'] for r in found[arm]]}; "
            f"fixed p99 ms {[r['p99_e2e_ms'] for r in f]} (largest/smallest {p.get('largest_over_smallest')}), "
            f"{figures['arms'][arm]['fixed_above_slo_s']} s over the SLO"
        )
    result_file("harness_share" + ("_quick" if a.quick else ""), figures)


if __name__ == "__main__":
    main()
