"""The per-second job: every trial's client and broker figures, second by second (series.parquet), and
their measure-phase aggregates per trial.

The per-second Parquet files of the run records (the bulk: one row per worker or broker per second) are
read and aggregated by Spark, so the same job runs on `local[*]` or a standalone cluster unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.metrics import FOLLOWER_TIMES, PRODUCE_TIMES
from core.units import MB
from records import run as runs
from records.study import Study

# Cluster-wide per-second counter rates whose window totals the diagnosis reads (cluster.metrics): summed over
# brokers each second, then over the measure seconds, and divided by each other in `evidence`.
EVIDENCE = (
    "messages_in_per_s",
    "produce_requests_per_s",
    "log_flushes_per_s",
    "log_flush_ms_per_s",
    "isr_shrinks_per_s",
    "isr_expands_per_s",
    "follower_fetches_per_s",
    *(f"{k}_per_s" for k in (*PRODUCE_TIMES, *FOLLOWER_TIMES)),
)


def _trial_id_col() -> Any:
    from pyspark.sql import functions as F

    return F.element_at(F.split(F.col("_metadata.file_path"), "/"), -2)


def per_second(spark: Any, study: Study) -> Any:
    """Client and broker figures per trial per second (a full outer join: either side may be missing)."""
    from pyspark.sql import functions as F

    samples = [str(d.resolve() / runs.SAMPLES) for d in study.trial_dirs if (d / runs.SAMPLES).exists()]
    # a run without broker metrics (a cluster whose exporters kafkatune does not know) writes an empty table
    brokers = [str(d.resolve() / runs.BROKER_METRICS) for d in study.trial_dirs if runs.has_broker_metrics(d)]
    out = _client_seconds(spark, samples) if samples else None
    if not brokers:
        return out
    bs = _broker_seconds(spark, brokers)
    if out is None:
        return bs.withColumnRenamed("broker_phase", "phase")
    return (
        out.join(bs, ["trial_id", "second"], "full")
        .withColumn("phase", F.coalesce("phase", "broker_phase"))
        .drop("broker_phase")
    )


def _client_seconds(spark: Any, samples: list[str]) -> Any:
    """Per trial per second, the load generator's side: MB/s and records each way, buffer-full events, errors,
    the workers' worst p99 and how many workers reported."""
    from pyspark.sql import functions as F

    s = spark.read.parquet(*samples).withColumn("trial_id", _trial_id_col())
    prod = F.col("role") == "producer"
    cons = F.col("role") == "consumer"
    return s.groupBy("trial_id", "second").agg(
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


def _broker_seconds(spark: Any, brokers: list[str]) -> Any:
    """Per trial per second, the brokers' side (cluster.metrics): MB/s by kind, the busiest broker each way, idle
    shares, under-replication, the controller quorum, CPU and the evidence counters (`broker_phase`: the phase)."""
    from pyspark.sql import functions as F

    b = spark.read.parquet(*brokers).withColumn("trial_id", _trial_id_col())
    b = b.withColumn("in_mb_s", (F.col("bytes_in_per_s") + F.col("replication_bytes_in_per_s")) / MB).withColumn(
        "out_mb_s", (F.col("bytes_out_per_s") + F.col("replication_bytes_out_per_s")) / MB
    )
    return b.groupBy("trial_id", "second").agg(
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
        *([F.max("replica_max_lag").alias("replica_lag_max")] if "replica_max_lag" in b.columns else []),
        # a healthy KRaft quorum has exactly one active controller at every sample (cluster.metrics)
        *(
            [F.max((F.col("active_controllers") != 1).cast("int")).alias("controller_bad")]
            if "active_controllers" in b.columns
            else []
        ),
        F.avg("process_cpu_load").alias("broker_cpu"),
        # the busiest broker's produce bytes this second; over the window against all brokers' (leader_share)
        F.max("bytes_in_per_s").alias("produce_max_b_s"),
        *[F.sum(c).alias(c) for c in EVIDENCE if c in b.columns],
    )


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
            # the busiest broker's share of the produce bytes: 1/N with leaders balanced, 1.0 when one leads all; a
            # ratio of the window's sums, not a mean of each second's: a broker's sample that lands in the next
            # second (scrape jitter) would otherwise read as a second led by another broker
            F.when(F.sum("produce_mb_s") > 0, F.sum("produce_max_b_s") / (F.sum("produce_mb_s") * MB)).alias(
                "leader_share"
            ),
            *([F.max("replica_lag_max").alias("replica_lag_max")] if "replica_lag_max" in cols else []),
            # null when the controller is not on the scraped nodes (cluster.metrics leaves the column out then)
            *([F.sum("controller_bad").alias("controller_bad_seconds")] if "controller_bad" in cols else []),
            *[F.sum(c).alias(f"sum_{c}") for c in EVIDENCE if c in cols],
        ]
    rows = series.filter(F.col("phase") == "measure").groupBy("trial_id").agg(*aggs).collect()
    return {r["trial_id"]: r.asDict() for r in rows}


def evidence(a: Mapping[str, Any]) -> dict[str, float | None]:
    """What the brokers' counters say over a trial's measure window (`a`: per_trial_measure's row): produce
    requests per second, records and bytes per request, the produce request's time split (ms per request,
    PRODUCE_TIMES), log flushes per produce request and their mean time, ISR shrinks and expands."""

    def total(c: str) -> float | None:
        v = a.get(f"sum_{c}")
        return float(v) if v is not None else None

    def per(x: float | None, y: float | None) -> float | None:
        return x / y if x is not None and y else None

    req, secs = total("produce_requests_per_s"), a.get("measure_seconds")
    flushes = total("log_flushes_per_s")
    produced = a.get("produce_mb_s")
    out: dict[str, float | None] = {
        "produce_requests_per_s": per(req, secs),
        "records_per_request": per(total("messages_in_per_s"), req),
        "bytes_per_request": per(produced * MB * secs, req) if produced is not None and secs else None,
        "log_flushes_per_request": per(flushes, req),
        "log_flush_ms": per(total("log_flush_ms_per_s"), flushes),
        "isr_shrinks": total("isr_shrinks_per_s"),
        "isr_expands": total("isr_expands_per_s"),
    }
    out.update({k: per(total(f"{k}_per_s"), req) for k in PRODUCE_TIMES})
    out.update({k: per(total(f"{k}_per_s"), total("follower_fetches_per_s")) for k in FOLLOWER_TIMES})
    return out
