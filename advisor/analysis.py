"""The analysis of a study: Spark's tables (spark.analyze) with the advisor's judgement of every trial.

Each trial row gets the ceiling of its cluster (the ceiling model over the study's profile), its share of
it, and the resource that bound it (advisor.diagnose). `run` starts a Spark session for one analysis;
`ensure` analyses a study only when its tables are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from advisor import ceiling, diagnose, limit
from records import analysis as tables
from records.analysis import AnalysisSummary
from records.profile import Limits
from records.study import Study, open_study
from records.trialrow import TrialRow
from spark import analyze as job
from spark.session import session

Progress = Callable[[str], None]


def judge(study: Study, t: TrialRow) -> TrialRow:
    """A trial row with its ceiling_mb_s, fraction_of_ceiling, bound and bound_reason: for a sustainable-rate trial,
    the limit its search's steps show (advisor.limit), else what its run's figures show (advisor.diagnose)."""
    c = ceiling.from_profile(study.profile, rf=study.rf)
    d = diagnose.binding(t, study.profile)
    # a bench run's folder is its only trial, whatever it was named when analysed
    run = study.trial_dirs[0] if study.kind == "bench" else study.trial(t.trial_id)
    if t.objective == "sustainable_mb_s" and run is not None and d.bound != "small_batches":
        # a search's limit, read from its steps (advisor.limit); batches a small batch.size keeps small are small at
        # every step, so nothing about them rises from one step to the next for the steps to show
        d = limit.of_trial(run, Limits.of(study.profile).nic_mb_s) or d
    return replace(
        t,
        ceiling_mb_s=c.mb_s if c else None,
        fraction_of_ceiling=t.mb_s / c.mb_s if c and t.mb_s is not None else None,
        bound=d.bound,
        bound_reason=d.reason,
    )


def analyze(
    root: Path, spark: Any, out_dir: Path | None = None, progress: Progress = lambda m: None
) -> AnalysisSummary:
    """Every table for one study with `spark` (a session the caller owns); returns the analysis summary."""
    return job.analyze(root, spark, out_dir, progress, judge=judge)


def run(root: Path, master: str | None, out_dir: Path | None = None, progress: Progress = print) -> AnalysisSummary:
    """The analysis in a Spark session of its own (`master`: None for local[*], or any Spark master URL)."""
    open_study(root)  # bad folders fail here, before a JVM starts
    progress(f"starting Spark ({master or 'local[*]'}) …")
    s = session(master)
    try:
        return analyze(root, s, out_dir, progress)
    finally:
        s.stop()


def ensure(root: Path, master: str | None = None, progress: Progress = print) -> Path:
    """The study's analysis folder, analysing it first when its trials table is missing."""
    an = tables.analysis_dir(Path(root))
    if not tables.has_table(an, "trials"):
        progress(f"no analysis in {an} yet: running it")
        run(root, master, progress=progress)
    return an
