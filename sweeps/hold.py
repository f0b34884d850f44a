"""The operating point: a rate at which the recommended configuration holds its SLO run after run, chosen from what
was measured and checked in a run of its own.

A sustainable rate is where the p99 reaches the SLO: an operator who runs there misses it about every other run. So
the rate is picked from the p99 measured against the rate, with the spread measured between runs:

    fit     every step of the chosen configuration's confirmation searches (loadgen.search) that was judged on its
            latency: log p99 = a + b·log rate, least squares weighted by each step's judged seconds (loadgen.knee).
            The spread σ is the residuals' weighted standard deviation over the long steps (at least half the
            search's max_step_s: the ones near the knee, as long as an operator's check), so it is the
            between-run spread of a p99 over that length, not the within-run one.
    pick    the highest rate whose predicted p99 plus `hold.z` spreads is within the SLO (`rate_for`), at most the
            lowest rate a repeat confirmed: with z 2.33 one run in a hundred misses, if the fit is right. A rate
            further below the lowest step than the steps span (Knee.floor) is no prediction: refused, not checked.
    check   one run at that rate for `hold.run_s` seconds, judged like a search step on all of them against the
            SLO times `hold.headroom` (1: the fit's margin is the headroom); a miss goes `hold.step` lower, at most
            `hold.tries` runs. The first rate that held is the answer.
    refuse  when the p99 does not grow with the rate (b < LOAD_SLOPE), or nothing held at all, lowering the rate
            cannot find one that holds; when the margin's rate is under the fit's floor, the steps cannot say
            which would: the sweep says so, with the causes the searches' tail budgets give for their seconds over the
            SLO (loadgen.tail), instead of trying rates until the tries run out.

Runs are Optuna trials of `<study>.hold` keyed `hold@<try>`, so a killed sweep resumes without running one twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from loadgen import tail
from loadgen.knee import Knee, fit_knee
from records.confirmation import Arm, Fit, OperatingPoint, Try
from records.result import Step
from records.study import TRIALS
from records.tail import TailTotal
from records.trial import TrialMeta, read_trial
from sweeps import storage
from sweeps.attrs import TrialAttrs
from sweeps.confirm import Phases


def tail_causes(run_dir: Path, trial_ids: Sequence[str]) -> TailTotal:
    """The tail budgets of every step these trials' searches judged, missed or held, added up (loadgen.tail.combine):
    why no rate held is in the seconds of the rates that were tried."""
    searches = [_steps(run_dir, tid) for tid in trial_ids]
    parts = [st.tail for steps in searches for st in steps if st.tail]
    return tail.combine(parts, runs=sum(1 for steps in searches if steps))


def _steps(run_dir: Path, trial_id: str) -> list[Step]:
    rec = read_trial(run_dir / TRIALS / trial_id)
    return rec.steps if rec is not None else []


def chosen_steps(run_dir: Path, trial_ids: Sequence[str]) -> list[Step]:
    """Every search step of these trials (their records' `measured.sustainable.steps`)."""
    return [st for tid in trial_ids for st in _steps(run_dir, tid)]


def refused(why: str, causes: TailTotal) -> OperatingPoint:
    """An operating point that was not looked for: no rate holds reliably, and what the tails say instead."""
    over = f"; the searches' {causes.above_slo_s} s over the SLO"
    named = (
        f"{over}: {causes.cause} in {causes.cause_share or 0:.0%} of them"
        if causes.cause
        else (f"{over}: no cause found" if causes.above_slo_s else "")
    )
    return OperatingPoint(False, not_load_driven=why + named, causes=causes)


def _tried(run_dir: Path, t: Any) -> Try:
    """One run at a fixed rate as the operating point lists it, read from the run folder's trial record (by its
    name: a study folder that was moved or copied still reads)."""
    a = TrialAttrs.of(t)
    trial_id = a.trial_id
    rec = read_trial(run_dir / TRIALS / trial_id)
    ran = rec.figures.hold if rec is not None else None
    if ran is not None:
        return replace(ran, trial_id=trial_id)
    # the run failed before measuring
    return Try(rec.hold_msg_s if rec is not None else None, False, a.fail_reason, trial_id=trial_id)


def _fit(knee: Knee | None) -> Fit | None:
    """The fit as summary.json keeps it (a Knee is one, with what is computed from it)."""
    return Fit(**asdict(knee)) if knee else None


def pick(knee: Knee | None, rates: Sequence[float], slo_ms: float, z: float) -> tuple[float | None, str]:
    """The first rate to check from the fit and the repeats' sustainable `rates` (None: none to look for), and why
    there is none: no repeat held, the tail is not load, or the margin's rate lies under the fit's floor."""
    if not rates:
        return None, "no repeat of the recommended configuration held a rate"
    if knee is None:
        return min(rates), ""
    rate = knee.rate_for(slo_ms, z)
    if rate is None:
        return None, knee.not_load() or "no rate is predicted to hold"
    if why := knee.below_range(rate):
        return None, why
    return min(rate, min(rates)), ""


def start(sw: Phases, chosen: Arm) -> tuple[float | None, Knee | None, str]:
    """The first rate to check (None: none to look for), the fit, and why there is none (`pick`)."""
    spec = sw.spec
    rates = [r for r in chosen.rates_msg_s if r is not None]
    knee = fit_knee(chosen_steps(sw.run_dir, chosen.trial_ids), spec.search.max_step_s // 2)
    first, why = pick(knee, rates, spec.slo.p99_e2e_ms or math.inf, spec.hold.z)
    return first, knee, why


def operating_point(sw: Phases, chosen: Arm, extend: Callable[[int], None]) -> OperatingPoint | None:
    """Run the chosen candidate's configuration at fixed rates from `start` down, until one holds; every run tried
    and the answer. `extend(1)` announces each run to the progress view before it starts."""
    spec = sw.spec
    if not (spec.sustainable and spec.hold.tries):
        return None
    first, knee, why = start(sw, chosen)
    if first is None:
        return replace(refused(why, tail_causes(sw.run_dir, chosen.trial_ids)), fit=_fit(knee))
    st = sw.study("hold")
    storage.recover_interrupted(st)
    tries: list[Try] = []
    for i in range(spec.hold.tries):
        key, rate = f"hold@{i + 1}", first * (1 - spec.hold.step) ** i
        if key not in storage.done_keys(st):
            if sw.out_of_time():
                break
            trial = st.ask()
            if storage.claim(st, trial, key):
                extend(1)
                sw.measure(st, trial, "hold", dict(chosen.config), TrialMeta(confirms=key, hold_msg_s=rate))
        done = [t for t in storage.counted(st) if TrialAttrs.of(t).key == key and t.state.name != "RUNNING"]
        if not done:
            break  # another worker runs it: its answer is in the study when that worker is done
        tries.append(_tried(sw.run_dir, done[0]))
        if tries[-1].held:
            break
    held = next((x for x in tries if x.held), None)
    h = spec.hold
    fitted = f"{h.z:g} spreads of the fitted p99 within the SLO" if knee else "the lowest rate a repeat confirmed"
    return OperatingPoint(
        held is not None,
        held.rate_msg_s if held else None,
        held.consume_mb_s if held else None,
        held.p99_e2e_ms if held else None,
        held.p99_publish_ms if held else None,
        h.run_s,
        h.headroom,
        tuple(tries),
        _fit(knee),
        knee.p99(first) if knee else None,
        how=f"the recommended configuration at one fixed rate for {h.run_s} s after a {spec.search.warmup_s}-s "
        f"warm-up, from {fitted} (at most the lowest rate a repeat confirmed), {h.step:.0%} lower per miss",
    )
