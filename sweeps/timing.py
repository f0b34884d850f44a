"""Where a sweep's wall clock went, read from its trial records: measuring, or everything around it.

Each trial record's `phases_s` (sweeps.trial) carries its runs' own phases (loadgen.runner: topic creation,
the drain after the producers' end, stopping the workers, deleting the topic) and the seconds the protocol
spent warming up and measuring; the trial's `apply_s` and `total_s` bound the rest. A ramp trial's
`ramp_*` keys are its ramp run's; its tail phases are its max-rate run's only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PARTS = {
    "windows": "the measurement windows (the objective is computed from these; a ramp's steps)",
    "run warm-up": "each run's warm-up at load before its windows (the trial protocol)",
    "worker start": "topic creation and starting the worker processes",
    "ready wait": "consumers assigned and producers connected, the start delay, the rest of each run",
    "drain / stop": "after the producers' end: the drain, stopping the workers, deleting the topic",
    "record": "building and writing the run record",
    "apply": "broker configs applied and read back (rolling restarts included)",
    "restart warm-up": "load after a rolling restart, before the trial's run",
    "between trials": "the sweep's own work: sampling, storage, progress, start and end of the study",
}


def breakdown(trials: Iterable[Mapping[str, Any]], wall_s: float) -> dict[str, Any]:
    """Seconds per part (PARTS) over `trials` (trial.json documents, failed ones included), their count, the
    wall clock and the share of it not spent in windows."""
    out = dict.fromkeys(PARTS, 0.0)
    total = 0.0
    n = 0
    for t in trials:
        n += 1
        ph = t.get("phases_s") or {}
        done = t.get("state") == "complete"
        windows = (ph.get("windows", 0.0) + ph.get("ramp_windows", 0.0)) if done else 0.0
        warm = ph.get("warmup", 0.0) + ph.get("ramp_warmup", 0.0)
        runs = ph.get("run", 0.0) + ph.get("ramp", 0.0)
        tail = ph.get("after_produce_end", 0.0) + ph.get("stop_workers", 0.0) + ph.get("delete_topics", 0.0)
        start = ph.get("create_topics", 0.0)
        out["windows"] += windows
        out["run warm-up"] += min(warm, max(0.0, runs - windows))
        out["worker start"] += start
        out["drain / stop"] += tail
        out["ready wait"] += max(0.0, runs - windows - warm - start - tail)
        out["record"] += ph.get("record", 0.0)
        apply_s = t.get("apply_s") or 0.0
        out["apply"] += apply_s
        out["restart warm-up"] += max(0.0, t.get("total_s", 0.0) - apply_s - runs - ph.get("record", 0.0))
        total += t.get("total_s", 0.0)
    out["between trials"] = max(0.0, wall_s - total)
    return {
        "seconds": {k: round(v, 1) for k, v in out.items()},
        "trials": n,
        "wall_s": round(wall_s, 1),
        "not_measuring": round(1 - out["windows"] / wall_s, 4) if wall_s else None,
        "not_measuring_warmups_counted": round(1 - (out["windows"] + out["run warm-up"]) / wall_s, 4)
        if wall_s
        else None,
    }
