"""The analysis of a study: Parquet tables and a summary in `runs/<study>/analysis/`.

    trials.parquet      one row per trial (TRIAL_FIELDS)
    params.parquet      per stage, per swept parameter, per value (or quantile bin)
    importance.parquet  per stage, per parameter: Optuna's PED-ANOVA importance
    pareto.parquet      the non-dominated trials over the study's objectives
    series.parquet      per trial, per second: client and broker rates, latency p99, idle, under-replicated
    summary.json        schema_version, row counts, the tables' paths, the Spark that wrote them

Spark's own writer puts the tables where `table_path` says (a job may run on a cluster, so the files are
written by Spark, not by this process); reading them back for the advisor and reports happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import files
from records.study import LATENCY

SCHEMA_VERSION = 1
ANALYSIS = "analysis"
SUMMARY = "summary.json"
TABLES = ("trials", "params", "importance", "pareto", "series")

TRIAL_FIELDS: list[tuple[str, str]] = [
    ("trial_id", "string"),
    ("stage", "string"),
    ("number", "long"),
    ("baseline", "string"),
    ("state", "string"),
    ("fail_reason", "string"),
    ("started_ns", "long"),
    ("params", "map<string,string>"),
    ("config", "map<string,string>"),
    ("broker", "map<string,string>"),
    ("message_bytes", "long"),
    ("mb_s", "double"),  # the study's objective: objective says which
    ("objective", "string"),
    ("throughput_mb_s", "double"),
    ("sustainable_mb_s", "double"),
    ("windows_mb_s", "array<double>"),
    ("window_cv", "double"),
    ("publish_mb_s", "double"),
    ("produce_mb_s", "double"),
    ("replicate_mb_s", "double"),
    ("consume_mb_s", "double"),
    ("replication_ratio", "double"),
    ("ceiling_mb_s", "double"),
    ("fraction_of_ceiling", "double"),
    ("bound", "string"),
    ("bound_reason", "string"),
    ("broker_in_max_mb_s", "double"),
    ("broker_out_max_mb_s", "double"),
    ("request_handler_idle", "double"),
    ("request_handler_idle_min", "double"),
    ("network_processor_idle", "double"),
    ("under_replicated_seconds", "long"),
    ("replica_lag_max", "double"),  # the furthest follower behind its leader, messages (ReplicaFetcherManager MaxLag)
    ("controller_bad_seconds", "long"),  # measured seconds without exactly one active controller
    # per pair of shaped-testbed hosts ("b1/b2"): TCP data segments sent and retransmitted over the run, and the
    # median over its readings of the pair's smoothed round trip (testbed.links)
    ("link_data_segs", "map<string,long>"),
    ("link_retrans", "map<string,long>"),
    ("link_rtt_ms", "map<string,double>"),
    ("broker_cpu", "double"),
    ("leader_share", "double"),  # the busiest broker's share of the produce bytes (1/N when balanced)
    # the brokers' counters over the measure window (spark.series.evidence)
    ("produce_requests_per_s", "double"),
    ("records_per_request", "double"),
    ("bytes_per_request", "double"),
    ("log_flushes_per_request", "double"),
    ("log_flush_ms", "double"),
    ("isr_shrinks", "double"),
    ("isr_expands", "double"),
    # a produce request's time split, ms per request (cluster.metrics.PRODUCE_TIMES)
    ("produce_queue_ms", "double"),
    ("produce_local_ms", "double"),
    ("produce_remote_ms", "double"),
    ("produce_response_queue_ms", "double"),
    ("produce_response_send_ms", "double"),
    ("produce_total_ms", "double"),
    # a follower's fetch: queued for a request handler, and in all (ms per fetch; cluster.metrics.FOLLOWER_TIMES)
    ("follower_fetch_queue_ms", "double"),
    ("follower_fetch_total_ms", "double"),
    ("client_loop_cpu_max", "double"),
    # the producers' own statistics (librdkafka's; drivers.api.CLIENT_STATS), medians over the measured seconds
    ("client_queue_ms", "double"),
    ("client_rtt_ms", "double"),
    ("client_inflight", "double"),
    ("batch_bytes", "double"),
    ("batch_records", "double"),
    ("rate_mode", "string"),  # "max-rate" | "fixed-rate": latency means something only at a fixed rate
    ("consumer_loop_cpu_max", "double"),
    # the consumers as the load generator saw them: MB/s received, and how many received nothing
    ("client_consume_mb_s", "double"),
    ("consumers_idle", "long"),
    ("topic_config", "map<string,string>"),
    ("measure_seconds", "long"),
    ("second_mean_mb_s", "double"),
    ("second_std_mb_s", "double"),
    ("second_cv", "double"),
    ("second_min_mb_s", "double"),
    ("second_max_mb_s", "double"),
    ("worst_second_publish_p99_ms", "double"),
    ("buffer_full_events", "long"),
    ("machine_cpu_percent", "double"),
    ("client_bound", "boolean"),
    ("lost", "long"),
    ("warnings", "array<string>"),
    *[(c, "double") for c in LATENCY],
]
IMPORTANCE_FIELDS = "stage string, param string, importance double, evaluator string, n_trials long"


def analysis_dir(study_root: Path) -> Path:
    return study_root / ANALYSIS


def table_path(analysis: Path, name: str) -> Path:
    assert name in TABLES, name
    return analysis / f"{name}.parquet"


def has_table(analysis: Path, name: str) -> bool:
    return table_path(analysis, name).exists()


def load_table(analysis: Path, name: str) -> pd.DataFrame:
    """A table the job wrote, as a pandas DataFrame for the advisor and the reports (no Spark needed): maps
    as dicts, arrays as lists; a missing trials table is an empty frame with its columns."""
    p = table_path(Path(analysis), name)
    if not p.exists():
        return pd.DataFrame(columns=[n for n, _ in TRIAL_FIELDS] if name == "trials" else [])
    t = pq.read_table(p)
    df = t.to_pandas(maps_as_pydicts="strict")
    for f in t.schema:
        if pa.types.is_list(f.type):
            df[f.name] = df[f.name].map(lambda v: None if v is None else list(v))
    return df


def rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts with missing values as None (NaN read back as None), for judging one row at a time."""
    if df.empty:
        return []
    return [{str(k): (None if _missing(v) else v) for k, v in r.items()} for r in df.to_dict("records")]


def row(s: pd.Series | None) -> dict[str, Any] | None:
    """One row as a dict with missing values as None."""
    if s is None:
        return None
    return {str(k): (None if _missing(v) else v) for k, v in s.to_dict().items()}


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def write_summary(analysis: Path, summary: Mapping[str, Any]) -> dict[str, Any]:
    """Write the analysis summary; returns it as written (with its schema_version)."""
    doc = {"schema_version": SCHEMA_VERSION, **summary}
    files.write_json(analysis / SUMMARY, doc)
    return doc


def read_analysis_summary(analysis: Path) -> dict[str, Any]:
    """The analysis summary (`analyze`'s counts and what it read), empty when the study was not analysed; a sweep's
    own summary.json is records.summary's."""
    p = Path(analysis) / SUMMARY
    return files.read_json_object(p) if p.exists() else {}
