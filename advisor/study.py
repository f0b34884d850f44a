"""Everything the advisor concludes about one study, computed once for `advise`, `plan --from` and `report`.

From the study's analysis (run first when missing): the recommendations, the best trial and Kafka's
defaults as measured, each swept parameter's effect against run-to-run noise, what the study traded in
durability, and capacity plans at its measured efficiency.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from advisor import analysis, diagnose
from advisor import plan as planner
from advisor.context import Context
from advisor.noise import Effect, effects
from advisor.recommendation import Recommendation
from advisor.rules import recommend
from advisor.trials import chosen_trial, complete, defaults_trial, representative
from core.acks import acks as producer_acks
from records.analysis import AnalysisSummary, load_table, read_analysis_summary
from records.confirmation import DEFAULTS, Arm
from records.profile import Limits
from records.study import Study, open_study, spec_copy
from records.summary import Summary, read_summary
from records.trialrow import TrialRow


@dataclass(frozen=True)
class StudyAdvice:
    study: Study
    analysis: Path  # the study's analysis folder (records.analysis): its other tables are read from there
    trials: pd.DataFrame  # the analysis tables (records.analysis), as data frames
    params: pd.DataFrame
    summary: AnalysisSummary | None  # the analysis summary (records.analysis); None: not analysed
    sweep: Summary | None  # the sweep's summary.json (records.summary): confirmation, effects, intervals
    recommendations: list[Recommendation]
    effects: list[Effect]
    best: TrialRow | None  # the run the study is diagnosed by (advisor.trials.chosen_trial)
    defaults: TrialRow | None
    ceiling_mb_s: float | None


def context(study: Study, sweep: Summary | None) -> Context:
    """What the rules know of the study beyond its tables."""
    return Context(brokers=study.brokers, rf=study.rf, study=study.name, sweep=sweep)


def candidate(sweep: Summary | None, label: str | None) -> Arm | None:
    """A confirmation candidate of the sweep's summary (its runs, trial ids, interval): `label`, or the chosen
    (recommended) one when `label` is None."""
    return sweep.confirmation.arm(label) if sweep and sweep.confirmation else None


def advise(root: Path, master: str | None = None, progress: Callable[[str], None] = print) -> StudyAdvice:
    """The study's advice; its analysis runs first when it is missing (Spark at `master`)."""
    study = open_study(root)
    an = analysis.ensure(study.root, master, progress)
    trials, params = load_table(an, "trials"), load_table(an, "params")
    sweep = read_summary(study.root)
    defaults = candidate(sweep, DEFAULTS)
    return StudyAdvice(
        study=study,
        analysis=an,
        trials=trials,
        params=params,
        summary=read_analysis_summary(an),
        sweep=sweep,
        recommendations=recommend(trials, params, context(study, sweep)),
        effects=effects(trials, params),
        best=chosen_trial(trials, sweep),
        defaults=(representative(trials, list(defaults.trial_ids)) if defaults else None) or defaults_trial(trials),
        ceiling_mb_s=_first(trials["ceiling_mb_s"]) if "ceiling_mb_s" in trials else None,
    )


def _first(col: pd.Series) -> float | None:
    """The first non-zero, non-missing value of a column."""
    vals = col[col.notna() & (col != 0)]
    return float(vals.iloc[0]) if len(vals) else None


def key_gains(best: TrialRow, found: list[Effect]) -> dict[str, tuple[float, str]]:
    """Per key of the best configuration: its own measured effect, where its stage swept it (MB/s, and how)."""
    out = {}
    for e in found:
        if e.delta > 0 and str(best.params.get(e.param)) == str(e.best.value):
            out[e.param] = (e.delta, f"{e.param}={e.best.value} vs the worst value in its stage")
    return out


def swept_keys(study: Study, params: pd.DataFrame) -> set[str]:
    """The keys the study swept (its spec, and the params table)."""
    keys = set(spec_copy(study.root).swept)
    return keys | (set(params["param"]) if not params.empty else set())


def _flushed(p: Mapping[str, Any]) -> bool:
    e = diagnose.flush_every(p)
    ms = p.get("log.flush.interval.ms")
    return (e is not None and e <= diagnose.FSYNC_EVERY) or (ms not in (None, "None", "") and float(ms) <= 1000)


def durability(trials: pd.DataFrame) -> list[str]:
    """What relaxing acks or forcing flushes bought and cost, when the study varied them."""
    done = complete(trials)
    if done.empty:
        return []
    done = done.assign(
        acks=done["params"].map(producer_acks),
        flushed=done["params"].map(_flushed).astype(bool),
    )

    def best(df: pd.DataFrame) -> pd.Series:
        return df.nlargest(1, "mb_s").iloc[0]

    lines = []
    sync = done[done["acks"] == "all"]
    for a in ("1", "0"):
        loose = done[done["acks"] == a]
        if not loose.empty and not sync.empty:
            bl, bs = best(loose), best(sync)
            lines.append(
                f"acks={a}: best {bl['mb_s']:.2f} MB/s ({bl['trial_id']}) vs acks=all {bs['mb_s']:.2f} MB/s "
                f"({bs['trial_id']}): {bl['mb_s'] - bs['mb_s']:+.2f} MB/s. Given up: "
                + (
                    "every acknowledgement (a record can be lost without the producer knowing)"
                    if a == "0"
                    else "the followers' copy before the ack (a leader failure can lose acknowledged records)"
                )
                + "; min.insync.replicas=2 no longer protects acknowledged writes."
            )
    f, nf = done[done["flushed"]], done[~done["flushed"]]
    if not f.empty and not nf.empty:
        bf, bn = best(f), best(nf)
        lines.append(
            f"forced flushes: best {bf['mb_s']:.2f} MB/s ({bf['trial_id']}) vs {bn['mb_s']:.2f} MB/s without "
            f"({bn['trial_id']}). Without them durability rests on replication: an acknowledged record is on "
            "min.insync.replicas=2 brokers' page caches, and is lost only if all of them fail before writeback."
        )
    return lines


def plans(
    trials: pd.DataFrame, study: Study, best: TrialRow | None, sweep: Summary | None = None
) -> list[planner.Plan]:
    """Capacity plans for 70 % of the best measured rate, then 2× and 10× that, on the study's cluster shape;
    on the confirmed configuration's repeats when the sweep confirmed one."""
    chosen = candidate(sweep, None)
    confirmed = chosen.trial_ids if chosen else ()
    if not best or not study.profile or not Limits.of(study.profile).nic_mb_s:
        return []
    safe = best.rate * 0.7
    out = []
    for mult in (1, 2, 10):
        try:
            out.append(
                planner.plan(safe * mult, rf=study.rf, trials=trials, profile=study.profile, confirmed=confirmed)
            )
        except Exception:
            continue
    return out
