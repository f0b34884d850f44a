"""Where a sweep's wall clock went, read from its trial records: measuring, or everything around it.

Each trial record's `phases_s` (sweeps.trial) carries its runs' own phases (loadgen.runner: topic creation,
the drain after the producers' end, stopping the workers, deleting the topic) and the seconds the protocol
spent warming up and measuring; the trial's `apply_s` and `total_s` bound the rest. A ramp trial's
`ramp_*` keys are its ramp run's; its tail phases are its max-rate run's only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from records.summary import Breakdown, CurveSecond, WarmupCheck
from records.trial import TrialRecord

PARTS = {
    "windows": "the measurement windows (the objective is computed from these; a ramp's steps)",
    "run warm-up": "each run's warm-up at load before its windows (the trial protocol)",
    "worker start": "topic creation and starting the worker processes",
    "between steps": "a search's seconds not judged between its first step and its last: each step's first "
    "second and the lead before it, the drain after a missed step",
    "ready wait": "consumers assigned and producers connected, the start delay, the rest of each run",
    "drain / stop": "after the producers' end: the drain, stopping the workers, deleting the topic",
    "record": "building and writing the run record",
    "apply": "broker configs applied and read back (rolling restarts included)",
    "restart warm-up": "load after a rolling restart, before the trial's run",
    "measured again": "attempts set aside (an unplanned event or a compiling JIT in the window) and the wait or "
    "warm-up after each",
    "between trials": "the sweep's own work: sampling, storage, progress, start and end of the study",
}


def unjudged_s(trial: TrialRecord) -> float:
    """The seconds of a trial's search (loadgen.search) from its first step's start to its last judged second that
    no step judged: transitions and settling, the price of each step beyond its own length."""
    steps = trial.steps
    judged = [sec for st in steps for sec in st.judged_s]
    if not judged:
        return 0.0
    return float(max(judged) - steps[0].start_s + 1 - len(judged))


def breakdown(trials: Iterable[TrialRecord], wall_s: float) -> Breakdown:
    """Seconds per part (PARTS) over `trials` (failed ones included), their count, the wall clock and the share of
    it not spent in windows."""
    out = dict.fromkeys(PARTS, 0.0)
    total = 0.0
    n = 0
    for t in trials:
        n += 1
        ph = t.phases
        done = t.complete
        windows = (ph.windows + ph.ramp_windows) if done else 0.0
        warm = ph.warmup + ph.ramp_warmup
        runs = ph.run + ph.ramp
        tail = ph.after_produce_end + ph.stop_workers + ph.delete_topics
        start = ph.create_topics
        out["windows"] += windows
        out["run warm-up"] += min(warm, max(0.0, runs - windows))
        out["worker start"] += start
        out["drain / stop"] += tail
        between = unjudged_s(t) if done else 0.0
        out["between steps"] += between
        out["ready wait"] += max(0.0, runs - windows - warm - start - tail - between)
        out["record"] += ph.record
        apply_s = t.apply_s or 0.0
        out["apply"] += apply_s
        # the rest of the trial's time: its restart warm-up, if it had one, and the sweep's own work around it
        rest = max(0.0, t.total_s - apply_s - runs - ph.record)
        restart = min(rest, w.s if (w := t.restart_warmup) else 0.0)
        again = min(rest - restart, sum(a.s or 0.0 for a in t.aside))
        out["restart warm-up"] += restart
        out["measured again"] += again
        out["between trials"] += rest - restart - again
        total += t.total_s
    out["between trials"] += max(0.0, wall_s - total)
    return Breakdown(
        {k: round(v, 1) for k, v in out.items()},
        n,
        round(wall_s, 1),
        round(1 - out["windows"] / wall_s, 4) if wall_s else None,
        round(1 - (out["windows"] + out["run warm-up"]) / wall_s, 4) if wall_s else None,
    )


# The warm-up check: a second whose median ratio to the windows' median second is at least LEVEL is at the
# windows' level; fewer than MIN_TRIALS complete max-rate trials are too few to judge (one second of one run on
# this testbed ranges from 0.2 to 2.2 times the window's median).
LEVEL = 0.9
MIN_TRIALS = 5


def warmup_check(trials: Iterable[TrialRecord], warmup_s: float) -> WarmupCheck | None:
    """Whether the runs' warm-up (`warmup_s`) was long enough, from the complete trials' warm-up curves
    (sweeps.protocol.warmup_curve: the warm-up's seconds and the window's first ones): per second, the median
    ratio to the window's median second, its range and n; `level_from`, the first second from which every later
    one of the curve was at LEVEL or more; and the verdict in words. None when no trial has a curve."""
    curves = [c for t in trials if t.complete and (c := t.figures.warmup_curve)]
    if not curves:
        return None
    seconds = []
    for i in range(max(len(c) for c in curves)):
        xs = [c[i] for c in curves if i < len(c)]
        seconds.append(CurveSecond(i, round(statistics.median(xs), 3), min(xs), max(xs), len(xs)))
    n, warm = len(curves), math.ceil(warmup_s)
    level_from = next((i for i in range(len(seconds)) if all(s.median >= LEVEL for s in seconds[i:])), None)
    how = f"median over {n} trials of each second's consumed bytes / the window's median second"
    if n < MIN_TRIALS:
        verdict = f"{n} trial(s): too few to judge the warm-up ({MIN_TRIALS} needed)"
    elif level_from is None or level_from > warm:
        low = next((s for s in seconds[warm:] if s.median < LEVEL), seconds[-1])
        verdict = (
            f"too short: the windows began under their level (second {low.second} at {low.median:.2f}; "
            f"{how}); lengthen measurement.warmup_s"
        )
    elif (enough := max(1, level_from)) < warmup_s:  # never less than 1 s: the producers' first second
        verdict = (
            f"longer than needed: at the windows' level (≥ {LEVEL:g}) from second {level_from} ({how}); "
            f"a warm-up of {enough} s instead of {warmup_s:g} s would have saved "
            f"{warmup_s - enough:g} s a run on this cluster"
        )
    else:
        verdict = f"about right: the run reached the windows' level (≥ {LEVEL:g}) as they began ({how})"
    return WarmupCheck(warmup_s, n, LEVEL, level_from, tuple(seconds), verdict)
