"""Where a staged sweep's wall clock goes: measuring, or everything around it.

Starts a private loopback testbed, warms it until the brokers' JIT is quiet (240 s at the most), runs
`kafkatune sweep SPEC` (default benchmarks/sweep_overhead.yaml: 30 search trials in three stages with producer,
dynamic broker and one restart-only key, then the confirmation) and prints the breakdown its summary.json keeps
(`this_invocation.breakdown`, sweeps.timing, from the trial records), in seconds and as a share of the sweep's
wall clock:

    windows          the measurement windows (what the objective is computed from)
    run warm-up      each run's own warm-up at load, before its windows (part of the trial protocol)
    worker start     topic creation and starting the worker processes
    ready wait       consumers assigned and producers connected, plus the common start delay
    drain / stop     after the producers' end: the drain, stopping the workers, deleting the topic
    record           building and writing the run record
    apply            broker configs applied and read back (a rolling restart included)
    restart warm-up  load after a rolling restart, before the trial's run
    measured again   attempts set aside (an unplanned event or a compiling JIT in the window), the wait or warm-up
                     after each
    between trials   the sweep's own work: sampling, storage, progress, start and end of the study

then one JSON line of the same figures, and the study's warm-up check (sweeps.timing.warmup_check: whether the
runs' warm-up was long enough; per second of the warm-up and of the window's first 3, the median ratio of
consumed bytes to the window's median second). "Not measuring" is the wall clock minus the windows; the share with
the runs' warm-ups counted as measuring is printed next to it. Last, from the trial records, how many cores the
brokers' JIT compilers took during the windows (broker_rates.jit_compile_cores), in the trials that followed a
rolling restart and in the others, and each group's throughput: a restart's warm-up that ends too soon shows
as compiling brokers and a lower rate in the trial after it.

    .venv/bin/python benchmarks/sweep_overhead.py [--spec benchmarks/sweep_overhead.yaml]
    .venv/bin/python benchmarks/sweep_overhead.py --study runs/sweep-overhead   # a finished study
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, median, sweep, testbed


def report(b: dict[str, Any]) -> None:
    """Print the study summary's breakdown (sweeps.timing) as a table, then as one JSON line."""
    wall = b["wall_s"]
    print(f"{'part':<16} {'seconds':>9} {'share':>7}")
    for k, v in b["seconds"].items():
        print(f"{k:<16} {v:>9.1f} {v / wall:>7.1%}")
    print(f"{'wall clock':<16} {wall:>9.1f}   ({b['trials']} trial runs)")
    print(f"not measuring: {b['not_measuring']:.1%} of the wall clock", end=" ")
    print(f"({b['not_measuring_warmups_counted']:.1%} counting the runs' warm-ups as measuring)")
    print(json.dumps({"bench": "sweep_overhead", **b}))


def after_restarts(study: Path) -> dict[str, Any]:
    """Median JIT cores and MB/s over the windows of the trials run right after a rolling restart and of the rest."""
    groups: dict[str, dict[str, list[float]]] = {"after restart": {}, "others": {}}
    for f in sorted((study / "trials").glob("*/trial.json")):
        t = json.loads(f.read_text())
        m = t.get("measured") or {}
        jit = (m.get("broker_rates") or {}).get("jit_compile_cores")
        if jit is None or m.get("throughput_mb_s") is None:
            continue
        g = groups["after restart" if t.get("restarts") else "others"]
        g.setdefault("jit_cores", []).append(jit)
        g.setdefault("mb_s", []).append(m["throughput_mb_s"])
    out: dict[str, Any] = {}
    for name, g in groups.items():
        if g:
            out[name] = {
                "n": len(g["mb_s"]),
                "jit_cores": round(median(g["jit_cores"]), 3),
                "mb_s": round(median(g["mb_s"]), 2),
            }
            print(
                f"{name:<14} n={out[name]['n']:<3} brokers' JIT {out[name]['jit_cores']:.2f} cores, "
                f"{out[name]['mb_s']:.1f} MB/s (medians over the windows)"
            )
    print(json.dumps({"bench": "sweep_overhead_jit", **out}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", type=Path, default=REPO / "benchmarks" / "sweep_overhead.yaml")
    ap.add_argument("--study", type=Path, default=None, help="Print the figures of this finished study; run nothing.")
    a = ap.parse_args()
    if a.study:
        s, study = json.loads((a.study / "summary.json").read_text()), a.study
    else:
        work = Path(tempfile.mkdtemp(prefix="kt-overhead-bench-"))
        with testbed(work / "tb", warm_up_s=240) as tb:
            s, study, _ = sweep(tb, a.spec.resolve(), work / "runs")
    report(s["this_invocation"]["breakdown"])
    wc = s["this_invocation"].get("warmup_check")  # sweeps.timing.warmup_check (studies since it exists)
    if wc:
        print(f"warm-up check: {wc['verdict']}")
        warm = [f"{x['median']:.2f}" for x in wc["seconds"]]  # the warm-up's seconds, then the window's first
        cut = math.ceil(wc["warmup_s"])
        print(f"  median ratio per second: {', '.join(warm[:cut])} | window: {', '.join(warm[cut:])}")
    after_restarts(study)


if __name__ == "__main__":
    main()
