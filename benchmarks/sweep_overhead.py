"""Where a staged sweep's wall clock goes: measuring, or everything around it.

Starts a private loopback testbed, warms it, runs `kafkatune sweep SPEC` (default
benchmarks/sweep_overhead.yaml: 30 search trials in three stages with producer, dynamic broker and one
restart-only key, then the confirmation) and reads the trial records back. Prints, in seconds and as a share
of the sweep's wall clock:

    windows          the measurement windows (what the objective is computed from)
    run warm-up      each run's own warm-up at load, before its windows (part of the trial protocol)
    worker start     topic creation and starting the worker processes
    ready wait       consumers assigned and producers connected, plus the common start delay
    drain / stop     after the producers' end: the drain, stopping the workers, deleting the topic
    record           building and writing the run record
    apply            broker configs applied and read back (a rolling restart included)
    restart warm-up  load after a rolling restart, before the trial's run
    between trials   the sweep's own work: sampling, storage, progress, start and end of the study

then one JSON line of the same figures. "Not measuring" is the wall clock minus the windows; the share with
the runs' warm-ups counted as measuring is printed next to it.

    .venv/bin/python benchmarks/sweep_overhead.py [--spec benchmarks/sweep_overhead.yaml]
    .venv/bin/python benchmarks/sweep_overhead.py --study runs/sweep-overhead   # a finished study (and its --spec)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import yaml
from _common import REPO, sweep, testbed

PARTS = ("windows", "run warm-up", "worker start", "ready wait", "drain / stop", "record", "apply",
         "restart warm-up", "between trials")  # fmt: skip


def breakdown(study: Path, wall_s: float, warmup_s: float) -> dict[str, float]:
    """Seconds per part, summed over every trial record of `study` (failed trials included); `warmup_s`: the
    spec's per-run warm-up (measurement.warmup_s)."""
    out = dict.fromkeys(PARTS, 0.0)
    trials = [json.loads(p.read_text()) for p in sorted(study.glob("trials/*/trial.json"))]
    for t in trials:
        ph = t.get("phases_s") or {}
        run, load = ph.get("run", 0.0), ph.get("warmup_and_windows", 0.0)
        windows = load - warmup_s if t.get("state") == "complete" and load else 0.0
        out["windows"] += windows
        out["run warm-up"] += load - windows
        out["worker start"] += ph.get("create_topics", 0.0)
        tail = ph.get("after_produce_end", 0.0) + ph.get("stop_workers", 0.0) + ph.get("delete_topics", 0.0)
        out["drain / stop"] += tail
        out["ready wait"] += max(0.0, run - load - ph.get("create_topics", 0.0) - tail)
        out["record"] += ph.get("record", 0.0)
        apply_s = t.get("apply_s") or 0.0
        out["apply"] += apply_s
        out["restart warm-up"] += max(0.0, t["total_s"] - apply_s - run - ph.get("record", 0.0))
    out["between trials"] = max(0.0, wall_s - sum(t["total_s"] for t in trials))
    out["trials"] = float(len(trials))
    return out


def report(parts: dict[str, float], wall_s: float) -> None:
    print(f"{'part':<16} {'seconds':>9} {'share':>7}")
    for k in PARTS:
        print(f"{k:<16} {parts[k]:>9.1f} {parts[k] / wall_s:>7.1%}")
    print(f"{'wall clock':<16} {wall_s:>9.1f}   ({parts['trials']:.0f} trial runs)")
    not_measuring = 1 - parts["windows"] / wall_s
    with_warmup = 1 - (parts["windows"] + parts["run warm-up"]) / wall_s
    print(f"not measuring: {not_measuring:.1%} of the wall clock", end=" ")
    print(f"({with_warmup:.1%} counting the runs' warm-ups as measuring)")
    figures = {
        "bench": "sweep_overhead",
        "wall_s": round(wall_s, 1),
        "trials": int(parts["trials"]),
        "seconds": {k: round(parts[k], 1) for k in PARTS},
        "not_measuring": round(not_measuring, 4),
        "not_measuring_warmups_counted": round(with_warmup, 4),
    }
    print(json.dumps(figures))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", type=Path, default=REPO / "benchmarks" / "sweep_overhead.yaml")
    ap.add_argument("--study", type=Path, default=None, help="Print the figures of this finished study; run nothing.")
    a = ap.parse_args()
    warmup = float(yaml.safe_load(a.spec.read_text())["measurement"]["warmup_s"])
    if a.study:
        s = json.loads((a.study / "summary.json").read_text())
        wall = s["this_invocation"]["wall_s"]
        report(breakdown(a.study, wall, warmup), wall)
        return
    work = Path(tempfile.mkdtemp(prefix="kt-overhead-bench-"))
    with testbed(work / "tb", warm_up_s=90) as tb:
        _, study, wall = sweep(tb, a.spec, work / "runs")
    report(breakdown(study, wall, warmup), wall)


if __name__ == "__main__":
    main()
