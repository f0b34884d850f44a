"""The analysis job: a study's files in, Parquet tables out (runs/<study>/analysis/).

    trials.parquet      one row per trial: params, produce/replicate/consume MB/s (broker JMX), % of the
                        ceiling, the binding resource and why, latency percentiles, stability over seconds
                        and windows, broker pool idle fractions, under-replicated seconds
    params.parquet      per stage, per swept parameter, per value: trials, mean/median/max MB/s, p99 e2e
                        (the marginal effect curves of docs/reference.md §1)
    importance.parquet  per stage, per parameter: Optuna's PED-ANOVA importance, computed from the records
    pareto.parquet      the non-dominated trials over the study's objectives
    series.parquet      per trial, per second: client and broker rates, latency p99, idle, under-replicated

The per-second Parquet files (the bulk: one row per worker or broker per second) are read and aggregated
by Spark, so the same job runs on `local[*]` or a standalone cluster (`spark://…`) unchanged.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor import ceiling as ceiling_model
from advisor import diagnose
from records import analysis as tables
from records import run as runs
from records import study as studies
from records.analysis import TRIAL_FIELDS

MB = 1e6
OBJECTIVE_COLUMNS = {  # objective → (trials column, maximize?)
    "throughput_mb_s": ("mb_s", True),
    "p99_publish_ms": ("publish_p99_ms", False),
    "p99_e2e_ms": ("e2e_p99_ms", False),
}
NOT_SEARCH = ("baseline", "confirm", "sweep", "bench")  # stages whose trials are not a one-factor search


def _trial_id_col() -> Any:
    from pyspark.sql import functions as F

    return F.element_at(F.split(F.col("_metadata.file_path"), "/"), -2)


def per_second(spark: Any, study: studies.Study) -> Any:
    """Client and broker figures per trial per second (a full outer join: either side may be missing)."""
    from pyspark.sql import functions as F

    samples = [str(d.resolve() / runs.SAMPLES) for d in study.trial_dirs if (d / runs.SAMPLES).exists()]
    # a run without broker metrics (a cluster whose exporters kafkatune does not know) writes an empty table
    brokers = [str(d.resolve() / runs.BROKER_METRICS) for d in study.trial_dirs if runs.has_broker_metrics(d)]
    out = None
    if samples:
        s = spark.read.parquet(*samples).withColumn("trial_id", _trial_id_col())
        prod = F.col("role") == "producer"
        cons = F.col("role") == "consumer"
        out = s.groupBy("trial_id", "second").agg(
            F.first("phase").alias("phase"),
            (F.sum(F.when(prod, F.col("bytes")).otherwise(0)) / MB).alias("client_produce_mb_s"),
            (F.sum(F.when(cons, F.col("bytes")).otherwise(0)) / MB).alias("client_consume_mb_s"),
            F.sum(F.when(prod, F.col("msgs")).otherwise(0)).alias("produce_msgs"),
            F.sum(F.when(cons, F.col("msgs")).otherwise(0)).alias("consume_msgs"),
            F.sum("buffer_full").alias("buffer_full"),
            F.sum("errors").alias("errors"),
            F.max(F.when(prod, F.col("latency_p99_ms"))).alias("publish_p99_ms"),
            F.max(F.when(cons, F.col("latency_p99_ms"))).alias("e2e_p99_ms"),
            F.countDistinct(F.when(prod, F.col("worker"))).alias("producers"),
            F.countDistinct(F.when(cons, F.col("worker"))).alias("consumers"),
        )
    if brokers:
        b = spark.read.parquet(*brokers).withColumn("trial_id", _trial_id_col())
        b = b.withColumn("in_mb_s", (F.col("bytes_in_per_s") + F.col("replication_bytes_in_per_s")) / MB).withColumn(
            "out_mb_s", (F.col("bytes_out_per_s") + F.col("replication_bytes_out_per_s")) / MB
        )
        bs = b.groupBy("trial_id", "second").agg(
            F.first("phase").alias("broker_phase"),
            (F.sum("bytes_in_per_s") / MB).alias("produce_mb_s"),
            (F.sum("replication_bytes_in_per_s") / MB).alias("replicate_mb_s"),
            (F.sum("bytes_out_per_s") / MB).alias("consume_mb_s"),
            F.max("in_mb_s").alias("broker_in_max_mb_s"),
            F.max("out_mb_s").alias("broker_out_max_mb_s"),
            F.avg("request_handler_idle").alias("request_handler_idle"),
            F.min("request_handler_idle").alias("request_handler_idle_min"),
            F.avg("network_processor_idle").alias("network_processor_idle"),
            F.max("under_replicated").alias("under_replicated"),
            F.avg("process_cpu_load").alias("broker_cpu"),
        )
        if out is None:
            out = bs.withColumnRenamed("broker_phase", "phase")
        else:
            out = (
                out.join(bs, ["trial_id", "second"], "full")
                .withColumn("phase", F.coalesce("phase", "broker_phase"))
                .drop("broker_phase")
            )
    return out


def per_trial_measure(series: Any) -> dict[str, dict[str, Any]]:
    """The measure-phase aggregates of every trial (a small result: one row per trial)."""
    from pyspark.sql import functions as F

    cols = set(series.columns)
    aggs = [F.count(F.lit(1)).alias("measure_seconds")]
    if "client_consume_mb_s" in cols:
        aggs += [
            F.avg("client_consume_mb_s").alias("second_mean_mb_s"),
            F.stddev_samp("client_consume_mb_s").alias("second_std_mb_s"),
            F.min("client_consume_mb_s").alias("second_min_mb_s"),
            F.max("client_consume_mb_s").alias("second_max_mb_s"),
            F.sum("buffer_full").alias("buffer_full_seconds_total"),
            F.max("publish_p99_ms").alias("worst_second_publish_p99_ms"),
            F.max("producers").alias("producer_workers"),
            F.max("consumers").alias("consumer_workers"),
        ]
    if "produce_mb_s" in cols:
        aggs += [
            F.avg("produce_mb_s").alias("produce_mb_s"),
            F.avg("replicate_mb_s").alias("replicate_mb_s"),
            F.avg("consume_mb_s").alias("consume_mb_s"),
            F.avg("broker_in_max_mb_s").alias("broker_in_max_mb_s"),
            F.avg("broker_out_max_mb_s").alias("broker_out_max_mb_s"),
            F.avg("request_handler_idle").alias("request_handler_idle"),
            F.min("request_handler_idle_min").alias("request_handler_idle_min"),
            F.avg("network_processor_idle").alias("network_processor_idle"),
            F.sum(F.when(F.col("under_replicated") > 0, 1).otherwise(0)).alias("under_replicated_seconds"),
            F.avg("broker_cpu").alias("broker_cpu"),
        ]
    rows = series.filter(F.col("phase") == "measure").groupBy("trial_id").agg(*aggs).collect()
    return {r["trial_id"]: r.asDict() for r in rows}


def _schema(fields: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in fields)


def trial_table(
    study: studies.Study, meta: list[dict[str, Any]], agg: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    c = ceiling_model.from_profile(study.profile, rf=study.rf)
    out = []
    for m in meta:
        a = agg.get(m["trial_id"], {})
        row: dict[str, Any] = {k: None for k, _ in TRIAL_FIELDS}
        row.update({k: v for k, v in m.items() if k in row})
        row.update({k: v for k, v in a.items() if k in row})
        row["params"] = {**m["broker"], **m["config"]}
        w = m["windows_mb_s"]
        row["window_cv"] = statistics.stdev(w) / statistics.mean(w) if len(w) > 1 and statistics.mean(w) else None
        mean, std = a.get("second_mean_mb_s"), a.get("second_std_mb_s")
        row["second_cv"] = std / mean if mean and std is not None else None
        if row["produce_mb_s"] is None:
            row["produce_mb_s"] = m.get("record_produce_mb_s")
        if row["produce_mb_s"] and row["replicate_mb_s"] is not None:
            row["replication_ratio"] = row["replicate_mb_s"] / row["produce_mb_s"]
        row["ceiling_mb_s"] = c.mb_s if c else None
        row["fraction_of_ceiling"] = m["mb_s"] / c.mb_s if c and m["mb_s"] is not None else None
        d = diagnose.binding(row, study.profile)
        row["bound"], row["bound_reason"] = d.bound, d.reason
        for k in ("under_replicated_seconds", "measure_seconds"):
            row[k] = int(row[k]) if row[k] is not None else None
        out.append(row)
    return out


def importance_rows(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PED-ANOVA (Optuna) per search stage, from the records alone (no storage needed)."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for t in trials:
        if t["state"] == "complete" and t["mb_s"] is not None and not t["stage"].startswith(NOT_SEARCH):
            by_stage.setdefault(t["stage"], []).append(t)
    rows = []
    for stage, ts in by_stage.items():
        keys = sorted({k for t in ts for k in t["params"]})
        varying = [k for k in keys if len({t["params"].get(k) for t in ts}) > 1 and all(k in t["params"] for t in ts)]
        if len(ts) < 4 or not varying:
            continue
        dists: dict[str, Any] = {}
        for k in varying:
            vals = [t["params"][k] for t in ts]
            try:
                nums = [float(v) for v in vals]
            except ValueError:
                dists[k] = CategoricalDistribution(sorted(set(vals)))
                continue
            lo, hi = min(nums), max(nums)
            ints = all(n.is_integer() for n in nums)
            dists[k] = IntDistribution(int(lo), int(hi)) if ints else FloatDistribution(lo, hi)
        st = optuna.create_study(direction="maximize")
        for t in ts:
            params: dict[str, Any] = {}
            for k in varying:
                v = t["params"][k]
                dk = dists[k]
                params[k] = (
                    v
                    if isinstance(dk, CategoricalDistribution)
                    else (int(float(v)) if isinstance(dk, IntDistribution) else float(v))
                )
            st.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=t["mb_s"]))
        try:
            imp = get_param_importances(st, evaluator=PedAnovaImportanceEvaluator(), normalize=True)
        except Exception:  # too few trials above the quantile: no importance for this stage
            continue
        rows += [
            {"stage": stage, "param": k, "importance": float(v), "evaluator": "ped-anova", "n_trials": len(ts)}
            for k, v in imp.items()
        ]
    return rows


BINS = 6  # a numeric parameter with more than BIN_ABOVE distinct values is shown in BINS quantile bins
BIN_ABOVE = 8


def params_table(spark: Any, trials_df: Any) -> Any:
    """Per stage and swept parameter, the trials grouped by value (or by quantile bin for a continuous one)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    search = trials_df.filter(
        (F.col("state") == "complete")
        & F.col("mb_s").isNotNull()
        & ~F.col("stage").rlike("^(" + "|".join(NOT_SEARCH) + ")")
    )
    ex = search.select(
        "trial_id", "stage", F.explode("params").alias("param", "value"), "mb_s", "e2e_p99_ms"
    ).withColumn("num", F.expr("try_cast(value AS DOUBLE)"))
    shape = (
        ex.groupBy("stage", "param")
        .agg(
            F.countDistinct("value").alias("n_values"),
            F.count("num").alias("n_num"),
            F.count(F.lit(1)).alias("n"),
        )
        .filter("n_values > 1")
        .withColumn("binned", (F.col("n_values") > BIN_ABOVE) & (F.col("n_num") == F.col("n")))
    )
    ordered = Window.partitionBy("stage", "param").orderBy("num", "trial_id")
    ex = (
        ex.join(shape.select("stage", "param", "binned"), ["stage", "param"])
        .withColumn("bin", F.ntile(BINS).over(ordered))
        .withColumn("key", F.when(F.col("binned"), F.col("bin").cast("string")).otherwise(F.col("value")))
    )

    def label(c: str) -> Any:
        return F.regexp_replace(F.col(c).cast("string"), r"\.0$", "")

    g = (
        ex.groupBy("stage", "param", "key")
        .agg(
            F.first("binned").alias("binned"),
            F.first("value").alias("first_value"),
            F.min("num").alias("lo"),
            F.max("num").alias("hi"),
            F.count(F.lit(1)).alias("trials"),
            F.avg("mb_s").alias("mean_mb_s"),
            F.percentile_approx("mb_s", 0.5).alias("median_mb_s"),
            F.max("mb_s").alias("max_mb_s"),
            F.min("mb_s").alias("min_mb_s"),
            F.avg("e2e_p99_ms").alias("mean_e2e_p99_ms"),
            F.sort_array(F.collect_list("trial_id")).alias("trial_ids"),
        )
        .withColumn(
            "value",
            F.when(F.col("binned"), F.concat(label("lo"), F.lit("–"), label("hi"))).otherwise(F.col("first_value")),
        )
        .withColumn("value_num", F.when(F.col("binned"), (F.col("lo") + F.col("hi")) / 2).otherwise(F.col("lo")))
        .drop("key", "first_value", "lo", "hi")
    )
    stage_mean = search.groupBy("stage").agg(F.avg("mb_s").alias("stage_mean_mb_s"))
    w = Window.partitionBy("stage", "param")
    return (
        g.join(stage_mean, "stage")
        .withColumn("effect", F.col("mean_mb_s") / F.col("stage_mean_mb_s") - 1)
        .withColumn("best_value", F.col("mean_mb_s") == F.max("mean_mb_s").over(w))
        .select(
            "stage",
            "param",
            "value",
            "value_num",
            "binned",
            "trials",
            "mean_mb_s",
            "median_mb_s",
            "max_mb_s",
            "min_mb_s",
            "mean_e2e_p99_ms",
            "effect",
            "best_value",
            "trial_ids",
            "stage_mean_mb_s",
        )
        .orderBy("stage", "param", "value_num", "value")
    )


def pareto_table(trials_df: Any, objectives: list[str]) -> Any:
    """Complete trials no other complete trial beats on every objective (a Spark anti-join)."""
    from functools import reduce

    from pyspark.sql import functions as F

    cols = [OBJECTIVE_COLUMNS[o] for o in objectives if o in OBJECTIVE_COLUMNS]
    cand = trials_df.filter(F.col("state") == "complete")
    for c, _ in cols:
        cand = cand.filter(F.col(c).isNotNull())
    a, b = cand.alias("a"), cand.alias("b")
    ge = [(F.col(f"b.{c}") >= F.col(f"a.{c}")) if mx else (F.col(f"b.{c}") <= F.col(f"a.{c}")) for c, mx in cols]
    gt = [(F.col(f"b.{c}") > F.col(f"a.{c}")) if mx else (F.col(f"b.{c}") < F.col(f"a.{c}")) for c, mx in cols]
    dominated = reduce(lambda x, y: x & y, ge) & reduce(lambda x, y: x | y, gt)
    front = a.join(b, dominated, "left_anti")
    return front.select("trial_id", "stage", "params", *[c for c, _ in cols], "fraction_of_ceiling", "bound").orderBy(
        F.col(cols[0][0]).desc()
    )


def analyze(
    root: Path,
    spark: Any,
    out_dir: Path | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> dict[str, Any]:
    """Run every table for one study; returns the analysis summary (also written as summary.json)."""
    t0 = time.perf_counter()
    study = studies.open_study(Path(root))
    out = (out_dir or tables.analysis_dir(study.root)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    meta = studies.trial_rows(study)
    n_samples = sum(runs.sample_rows(d) for d in study.trial_dirs)
    progress(f"{study.name}: {len(meta)} trials, {n_samples:,} per-second samples ({spark.sparkContext.master})")
    series = per_second(spark, study)
    counts: dict[str, int] = {}
    if series is not None:
        series = series.orderBy("trial_id", "second")
        series.write.mode("overwrite").parquet(str(tables.table_path(out, "series")))
        series = spark.read.parquet(str(tables.table_path(out, "series")))
        counts["series"] = series.count()
        agg = per_trial_measure(series)
    else:
        agg = {}
    progress(f"per-second series: {counts.get('series', 0):,} rows")
    trials = trial_table(study, meta, agg)
    trials_df = spark.createDataFrame(trials, schema=_schema(TRIAL_FIELDS)).orderBy("started_ns", "trial_id")
    trials_df.coalesce(1).write.mode("overwrite").parquet(str(tables.table_path(out, "trials")))
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
    summary = {
        "study": study.name,
        "kind": study.kind,
        "synthetic": study.synthetic,
        "objectives": study.objectives,
        "trials": len(meta),
        "samples": n_samples,
        "rows": counts,
        "tables": {t: str(tables.table_path(out, t)) for t in tables.TABLES if t in counts},
        "master": spark.sparkContext.master,
        "spark_version": spark.version,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    summary = tables.write_summary(out, summary)
    progress(f"analysis written to {out} in {summary['seconds']:.1f} s")
    return summary
