"""The analysis job: a study's files in, Parquet tables out (runs/<study>/analysis/, records.analysis).

    trials.parquet      one row per trial: params, produce/replicate/consume MB/s (broker JMX), % of the
                        ceiling, the binding resource and why, latency percentiles, stability over seconds
                        and windows, broker pool idle fractions, under-replicated seconds
    params.parquet      per stage, per swept parameter, per value: trials, mean/median/max MB/s, p99 e2e
                        (the marginal effect curves of docs/reference.md §1)
    importance.parquet  per stage, per parameter: Optuna's PED-ANOVA importance, computed from the records
    pareto.parquet      the non-dominated trials over the study's objectives
    series.parquet      per trial, per second: client and broker rates, latency p99, idle, under-replicated

Spark computes; the judgement of each trial (its ceiling and binding resource) is the advisor's, passed in
as `judge` (advisor.analysis runs this job with it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.typed import to_json
from records import analysis as tables
from records import run as runs
from records import study as studies
from records.analysis import TRIAL_FIELDS
from spark.series import per_second, per_trial_measure
from spark.tables import Judge, importance_rows, params_table, pareto_table, schema, trial_table


def analyze(
    root: Path,
    spark: Any,
    out_dir: Path | None = None,
    progress: Callable[[str], None] = lambda m: None,
    *,
    judge: Judge,
) -> tables.AnalysisSummary:
    """Run every table for one study; returns the analysis summary (also written as summary.json)."""
    t0 = time.perf_counter()
    study = studies.open_study(Path(root))
    out = (out_dir or tables.analysis_dir(study.root)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    meta = studies.trial_rows(study)
    n_samples = sum(runs.sample_rows(d) for d in study.trial_dirs)
    progress(f"{study.name}: {len(meta)} trials, {n_samples:,} per-second samples ({spark.sparkContext.master})")
    counts: dict[str, int] = {}
    agg = _series(spark, study, out, counts)
    progress(f"per-second series: {counts.get('series', 0):,} rows")
    trials = trial_table(study, meta, agg, judge)
    trials_df = spark.createDataFrame([to_json(t) for t in trials], schema=schema(TRIAL_FIELDS)).orderBy(
        "started_ns", "trial_id"
    )
    trials_df.coalesce(1).write.mode("overwrite").parquet(str(tables.table_path(out, "trials")))
    # the tables below read the rows written, not the Python rows again: each of their queries would send those
    # through Spark's Python workers once more
    trials_df = spark.read.parquet(str(tables.table_path(out, "trials")))
    counts["trials"] = len(trials)
    params = params_table(spark, trials_df)
    params.coalesce(1).write.mode("overwrite").parquet(str(tables.table_path(out, "params")))
    counts["params"] = spark.read.parquet(str(tables.table_path(out, "params"))).count()
    imp = importance_rows(trials)
    spark.createDataFrame(imp, schema=tables.IMPORTANCE_FIELDS).coalesce(1).write.mode("overwrite").parquet(
        str(tables.table_path(out, "importance"))
    )
    counts["importance"] = len(imp)
    pareto = pareto_table(trials_df, study.objectives)
    pareto.coalesce(1).write.mode("overwrite").parquet(str(tables.table_path(out, "pareto")))
    counts["pareto"] = spark.read.parquet(str(tables.table_path(out, "pareto"))).count()
    summary = tables.AnalysisSummary(
        study=study.name,
        kind=study.kind,
        synthetic=study.synthetic,
        objectives=tuple(study.objectives),
        trials=len(meta),
        samples=n_samples,
        rows=counts,
        tables={t: str(tables.table_path(out, t)) for t in tables.TABLES if t in counts},
        master=spark.sparkContext.master,
        spark_version=spark.version,
        seconds=round(time.perf_counter() - t0, 2),
    )
    tables.write_summary(out, summary)
    progress(f"analysis written to {out} in {summary.seconds:.1f} s")
    return summary


def _series(spark: Any, study: studies.Study, out: Path, counts: dict[str, int]) -> dict[str, dict[str, Any]]:
    """series.parquet written (its rows counted in `counts`); returns each trial's measure-phase aggregates."""
    series = per_second(spark, study)
    if series is None:
        return {}
    series.orderBy("trial_id", "second").write.mode("overwrite").parquet(str(tables.table_path(out, "series")))
    series = spark.read.parquet(str(tables.table_path(out, "series")))
    counts["series"] = series.count()
    return per_trial_measure(series)
