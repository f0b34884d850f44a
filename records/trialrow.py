"""One row of a study's trials table (`analysis/trials.parquet`), typed: what the advisor and the reports judge a
trial by. The table's Spark schema is derived from this record (`spark_schema`), so the two cannot drift; a row of
an older study's table lacks the newer columns, which read as None.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.typed import from_json


@dataclass(frozen=True)
class TrialRow:
    """A trial's figures, measured evidence and configs as the analysis tabled them (None: not measured)."""

    trial_id: str = ""
    stage: str | None = None
    number: int | None = None
    baseline: str | None = None
    state: str | None = None
    fail_reason: str | None = None
    started_ns: int | None = None
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the swept keys and the workload's
    config: Mapping[str, str] | None = None
    broker: Mapping[str, str] | None = None
    message_bytes: int | None = None
    mb_s: float | None = None  # the study's objective: objective says which
    objective: str | None = None
    throughput_mb_s: float | None = None
    sustainable_mb_s: float | None = None
    windows_mb_s: tuple[float, ...] | None = None
    window_cv: float | None = None
    publish_mb_s: float | None = None
    produce_mb_s: float | None = None
    replicate_mb_s: float | None = None
    consume_mb_s: float | None = None
    replication_ratio: float | None = None
    ceiling_mb_s: float | None = None
    fraction_of_ceiling: float | None = None
    bound: str | None = None
    bound_reason: str | None = None
    broker_in_max_mb_s: float | None = None
    broker_out_max_mb_s: float | None = None
    request_handler_idle: float | None = None
    request_handler_idle_min: float | None = None
    network_processor_idle: float | None = None
    under_replicated_seconds: int | None = None
    replica_lag_max: float | None = (
        None  # the furthest follower behind its leader, messages (ReplicaFetcherManager MaxLag)
    )
    controller_bad_seconds: int | None = None  # measured seconds without exactly one active controller
    # per pair of shaped-testbed hosts ("b1/b2"): TCP data segments sent and retransmitted over the run, and the
    # median over its readings of the pair's smoothed round trip (testbed.links)
    link_data_segs: Mapping[str, int] | None = None
    link_retrans: Mapping[str, int] | None = None
    link_rtt_ms: Mapping[str, float] | None = None
    broker_cpu: float | None = None
    leader_share: float | None = None  # the busiest broker's share of the produce bytes (1/N when balanced)
    # the brokers' counters over the measure window (spark.series.evidence)
    produce_requests_per_s: float | None = None
    records_per_request: float | None = None
    bytes_per_request: float | None = None
    log_flushes_per_request: float | None = None
    log_flush_ms: float | None = None
    isr_shrinks: float | None = None
    isr_expands: float | None = None
    # a produce request's time split, ms per request (cluster.metrics.PRODUCE_TIMES)
    produce_queue_ms: float | None = None
    produce_local_ms: float | None = None
    produce_remote_ms: float | None = None
    produce_response_queue_ms: float | None = None
    produce_response_send_ms: float | None = None
    produce_total_ms: float | None = None
    # a follower's fetch: queued for a request handler, and in all (ms per fetch; cluster.metrics.FOLLOWER_TIMES)
    follower_fetch_queue_ms: float | None = None
    follower_fetch_total_ms: float | None = None
    client_loop_cpu_max: float | None = None
    # the producers' own statistics (librdkafka's; drivers.api.CLIENT_STATS), medians over the measured seconds
    client_queue_ms: float | None = None
    client_rtt_ms: float | None = None
    client_inflight: float | None = None
    batch_bytes: float | None = None
    batch_records: float | None = None
    rate_mode: str | None = None  # "max-rate" | "fixed-rate": latency means something only at a fixed rate
    consumer_loop_cpu_max: float | None = None
    # the consumers as the load generator saw them: MB/s received, and how many received nothing
    client_consume_mb_s: float | None = None
    consumers_idle: int | None = None
    topic_config: Mapping[str, str] | None = None
    measure_seconds: int | None = None
    second_mean_mb_s: float | None = None
    second_std_mb_s: float | None = None
    second_cv: float | None = None
    second_min_mb_s: float | None = None
    second_max_mb_s: float | None = None
    worst_second_publish_p99_ms: float | None = None
    buffer_full_events: int | None = None
    machine_cpu_percent: float | None = None
    client_bound: bool | None = None
    lost: int | None = None
    warnings: tuple[str, ...] | None = None

    # the latency percentiles of its run, from result.json (records.study.trial_row), ms
    publish_p50_ms: float | None = None
    publish_p99_ms: float | None = None
    publish_p999_ms: float | None = None
    publish_max_ms: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p99_ms: float | None = None
    e2e_p999_ms: float | None = None
    e2e_max_ms: float | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> TrialRow:
        """A row from a table or a live sample: a missing value (None, pandas' NaN) takes the field's default,
        columns it does not know are left out."""
        return from_json(cls, {k: v for k, v in row.items() if not missing(v)}, "trial row")

    @property
    def rate(self) -> float:
        """mb_s of a trial with a measurement (advisor.trials.complete keeps only those); raises on one without."""
        if self.mb_s is None:
            raise ValueError(f"trial {self.trial_id or '?'} has no measurement (mb_s)")
        return float(self.mb_s)


def missing(v: Any) -> bool:
    """Whether a table's value is absent: None, or the NaN pandas reads a null number as."""
    return v is None or (isinstance(v, float) and math.isnan(v))


_SPARK = {str: "string", int: "long", float: "double", bool: "boolean"}


def _spark_type(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return _spark_type(inner)
    if origin is tuple:
        return f"array<{_spark_type(args[0])}>"
    if origin is Mapping:
        return f"map<{_spark_type(args[0])},{_spark_type(args[1])}>"
    return _SPARK[hint]


def spark_schema() -> list[tuple[str, str]]:
    """The trials table's columns and Spark types, in the record's order."""
    hints = typing.get_type_hints(TrialRow)
    return [(f.name, _spark_type(hints[f.name])) for f in dataclasses.fields(TrialRow)]
