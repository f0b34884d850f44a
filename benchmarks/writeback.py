"""The host's page-cache writeback on the tail: Linux's defaults against the testbed's continuous writeback.

One freshly started shaped testbed (25 MB/s links, the demo's workload: 1-KB records, acks=all, 6 partitions),
warmed until its JIT is quiet. Then `--pairs` pairs of arms, each pair in a new random order: `stock` (the
writeback settings this machine had before any testbed changed them) and `smooth` (testbed.writeback.SMOOTH). Each
arm sets its values, then runs the maximum rate for `--max-s` seconds (where the dirty data grows fastest) and a
fixed `--rate` for `--fixed-s` seconds. Per run: the p99, p99.9 and largest end-to-end latency, the seconds over
the SLO, the seconds the active controller moved in (loadgen.tail.controller_moves), the longest log-flush time
in one second, and the most dirty page cache seen (/proc/meminfo, every second).

    .venv/bin/python benchmarks/writeback.py [--pairs 3] [--rate 5000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from _common import bench, demo_workload, log, result_file, testbed

from loadgen.tail import controller_moves
from records.seconds import BrokerSecond
from testbed import netns, writeback

SLO_MS = 100.0


class DirtyPeak:
    """The most dirty page cache (MB) seen by a thread reading /proc/meminfo every second, since `reset`."""

    def __init__(self) -> None:
        self.peak = 0.0
        threading.Thread(target=self._run, daemon=True).start()  # ends with the benchmark

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            for ln in Path("/proc/meminfo").read_text().splitlines():
                if ln.startswith("Dirty:"):
                    self.peak = max(self.peak, int(ln.split()[1]) / 1024)

    def reset(self) -> float:
        peak, self.peak = self.peak, 0.0
        return peak


def one(tb: Any, tmp: Path, name: str, rate: float | None, secs: float, dirty: DirtyPeak) -> dict[str, Any]:
    """One run of the demo's workload at `rate` msg/s (None: the maximum rate) and what it met."""
    wl = demo_workload(tmp / f"{name}.json", name, {"acks": "all"}, "max" if rate is None else rate, secs)
    dirty.reset()
    d = bench(tb, wl, tmp / name, SLO_MS)
    rows = pq.read_table(tmp / name / "broker_metrics.parquet").to_pylist()
    measure = [r for r in rows if r.get("phase") == "measure"]
    lat = d["end_to_end_latency_ms"]
    row = {
        "rate_msg_s": rate,
        "seconds": secs,
        "p99_e2e_ms": lat.get("p99"),
        "p999_e2e_ms": lat.get("p99.9"),
        "max_e2e_ms": lat.get("max"),
        "above_slo_s": (d.get("tail") or {}).get("above_slo"),
        "controller_moves_s": len(controller_moves([BrokerSecond.of(r) for r in measure])),
        "log_flush_ms_max": max((r.get("log_flush_ms_per_s") or 0.0 for r in measure), default=None),
        "dirty_mb_peak": round(dirty.reset(), 1),
        "consume_mb_s": d.get("consume_mb_s"),
    }
    log(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("rate_msg_s", "seconds")))
    return row


def summary(runs: list[dict[str, Any]], arm: str, kind: str) -> dict[str, Any]:
    mine = [r for r in runs if r["arm"] == arm and r["kind"] == kind]
    out: dict[str, Any] = {"n": len(mine)}
    for k in ("p99_e2e_ms", "p999_e2e_ms", "max_e2e_ms", "above_slo_s", "dirty_mb_peak", "log_flush_ms_max"):
        vals = [r[k] for r in mine if r[k] is not None]
        out[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)} if vals else None
    out["controller_moves_s"] = sum(r["controller_moves_s"] for r in mine)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rate", type=float, default=5000, help="the fixed-rate runs' msg/s")
    ap.add_argument("--max-s", type=float, default=60)
    ap.add_argument("--fixed-s", type=float, default=60)
    ap.add_argument("--warm-up", type=float, default=180)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1 pair of 20-s runs after a 60-s warm-up")
    a = ap.parse_args()
    if a.quick:
        a.pairs, a.max_s, a.fixed_s, a.warm_up = 1, 20, 20, 60
    if not netns.can_shape()[0] or not os.access(writeback.PROC / "dirty_background_bytes", os.W_OK):
        sys.exit("needs root: the shaped testbed and /proc/sys/vm")
    stock = writeback.found()
    arms = {"stock": writeback.as_found(stock), "smooth": dict(writeback.SMOOTH)}
    rng = random.Random(a.seed)
    runs: list[dict[str, Any]] = []
    t0 = time.monotonic()
    dirty = DirtyPeak()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        with testbed(tmp / "tb", warm_up_s=a.warm_up, network="shaped", nic_mb_s=25.0, subnet="198.18.3") as tb:
            for p in range(a.pairs):
                for arm in rng.sample(sorted(arms), 2):
                    writeback.put(arms[arm])
                    log(f"pair {p + 1}/{a.pairs}, {arm}: {writeback.read()}")
                    time.sleep(5)  # the previous arm's dirty data written back
                    for kind, rate, secs in (("max", None, a.max_s), ("fixed", a.rate, a.fixed_s)):
                        row = one(tb, tmp, f"{arm}-{kind}-{p}", rate, secs, dirty)
                        runs.append({"arm": arm, "kind": kind, "pair": p, **row})
    writeback.put(arms["stock"])
    figures = {k: {arm: summary(runs, arm, k) for arm in arms} for k in ("max", "fixed")}
    for kind, by in figures.items():
        for arm, s in by.items():
            p99 = s["p99_e2e_ms"] or {}
            p999 = s["p999_e2e_ms"] or {}
            print(
                f"{kind:5} {arm:6} n={s['n']}: p99 median {p99.get('median')} ms ({p99.get('min')}-{p99.get('max')}), "
                f"p99.9 median {p999.get('median')} ms, controller moved in {s['controller_moves_s']} s, "
                f"dirty peak median {(s['dirty_mb_peak'] or {}).get('median')} MB"
            )
    settings = {"stock": stock, "smooth": writeback.SMOOTH}
    wall = round(time.monotonic() - t0)
    result_file("writeback", {"args": vars(a), "settings": settings, "wall_s": wall, "figures": figures, "runs": runs})


if __name__ == "__main__":
    main()
