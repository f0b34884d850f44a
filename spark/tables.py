"""The per-trial tables of the analysis: trials, params (marginal effect per value), importance (Optuna's
PED-ANOVA), pareto (the non-dominated trials). Their schemas are records.analysis's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from functools import reduce
from typing import Any

from records.study import Study
from records.trialrow import TrialRow
from spark.series import evidence

OBJECTIVE_COLUMNS = {  # objective → (trials column, maximize?); mb_s is the study's objective (records.study)
    "sustainable_mb_s": ("mb_s", True),
    "throughput_mb_s": ("mb_s", True),
    "p99_publish_ms": ("publish_p99_ms", False),
    "p99_e2e_ms": ("e2e_p99_ms", False),
}
# stages whose trials are not a one-factor search
NOT_SEARCH = ("baseline", "confirm", "ablate", "written", "hold", "sweep", "bench")
# The judgement of one trial row (advisor.analysis.judge): the row with its ceiling_mb_s, fraction_of_ceiling, bound
# and bound_reason.
Judge = Callable[[Study, TrialRow], TrialRow]
_COLUMNS = frozenset(f.name for f in fields(TrialRow))
_COUNTS = ("under_replicated_seconds", "controller_bad_seconds", "measure_seconds")  # Spark's sums, as counts


def schema(fields: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in fields)


def trial_table(
    study: Study, meta: list[TrialRow], agg: Mapping[str, Mapping[str, Any]], judge: Judge
) -> list[TrialRow]:
    """One row per trial: what its records say (records.study.trial_row), its measure window's per-second
    aggregates (spark.series.per_trial_measure: `agg`, by trial id), and what `judge` (the advisor's ceiling model
    and diagnosis) makes of them."""
    out = []
    for m in meta:
        a = agg.get(m.trial_id, {})
        w = m.windows_mb_s or ()
        mean, std = a.get("second_mean_mb_s"), a.get("second_std_mb_s")
        changes = {k: v for k, v in a.items() if k in _COLUMNS}
        changes.update(evidence(a))
        changes.update({k: int(v) for k in _COUNTS if (v := changes.get(k)) is not None})
        changes["params"] = {**(m.broker or {}), **(m.config or {})}
        changes["window_cv"] = statistics.stdev(w) / statistics.mean(w) if len(w) > 1 and statistics.mean(w) else None
        changes["second_cv"] = std / mean if mean and std is not None else None
        row = replace(m, **changes)
        if row.produce_mb_s is None:  # no broker rows per second: the record's own broker rate
            row = replace(row, produce_mb_s=m.produce_mb_s)
        if row.produce_mb_s and row.replicate_mb_s is not None:
            row = replace(row, replication_ratio=row.replicate_mb_s / row.produce_mb_s)
        out.append(judge(study, row))
    return out


def importance_rows(trials: list[TrialRow]) -> list[dict[str, str | float]]:
    """PED-ANOVA (Optuna) per search stage, from the records alone (no storage needed)."""
    import optuna
    from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    by_stage: dict[str, list[TrialRow]] = {}
    for t in trials:
        if t.state == "complete" and t.mb_s is not None and t.stage and not t.stage.startswith(NOT_SEARCH):
            by_stage.setdefault(t.stage, []).append(t)
    rows: list[dict[str, str | float]] = []
    for stage, ts in by_stage.items():
        keys = sorted({k for t in ts for k in t.params})
        varying = [k for k in keys if len({t.params.get(k) for t in ts}) > 1 and all(k in t.params for t in ts)]
        if len(ts) < 4 or not varying:
            continue
        dists: dict[str, BaseDistribution] = {}
        for k in varying:
            vals = [t.params[k] for t in ts]
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
            params: dict[str, str | int | float] = {}
            for k in varying:
                v = t.params[k]
                dk = dists[k]
                params[k] = (
                    v
                    if isinstance(dk, CategoricalDistribution)
                    else (int(float(v)) if isinstance(dk, IntDistribution) else float(v))
                )
            st.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=t.mb_s))
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
    g = _per_value(_binned(search))
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


def _binned(search: Any) -> Any:
    """One row per search trial and swept parameter with its group `key`: the value, or the quantile bin of a
    numeric parameter that took more than BIN_ABOVE values (`binned`); parameters that took one value are left out."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

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
    return (
        ex.join(shape.select("stage", "param", "binned"), ["stage", "param"])
        .withColumn("bin", F.ntile(BINS).over(ordered))
        .withColumn("key", F.when(F.col("binned"), F.col("bin").cast("string")).otherwise(F.col("value")))
    )


def _per_value(ex: Any) -> Any:
    """The `_binned` rows grouped by stage, parameter and key: counts, rates and p99 of each value or bin, labelled
    by its value or its range ("lo–hi")."""
    from pyspark.sql import functions as F

    def label(c: str) -> Any:
        return F.regexp_replace(F.col(c).cast("string"), r"\.0$", "")

    return (
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


def pareto_table(trials_df: Any, objectives: list[str]) -> Any:
    """Complete trials no other complete trial beats on every objective (a Spark anti-join)."""
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
