"""A run's per-second rows typed for the code that reads them back: the diagnosis of a search (advisor.limit) and the
tail budget (loadgen.tail).

The Parquet files keep every column their writers put there (cluster.metrics per broker, cluster.hoststats per
second of the brokers' machine, loadgen.result per worker); these types name the columns kafkatune reads, and are
built from a row at that edge only (`of`). A figure a row lacks (an older record, an exporter without that metric,
a NaN) is None, never 0, so no reader can count an unmeasured second as a quiet one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# One row of a per-second Parquet file as its writer builds it (cluster.metrics, cluster.hoststats, loadgen.result):
# column -> a number, a word (a second's phase, the busiest other process) or null. The types below read it.
Row = dict[str, float | str | None]

# The brokers' time per produce request is kept by part as counters of milliseconds (cluster.metrics.PRODUCE_TIMES):
# a row carries each as "<part>_per_s", e.g. produce_queue_ms_per_s, the milliseconds that part took in the second.
_PRODUCE_PART = ("produce_", "_ms_per_s")
PRODUCE_TOTAL = "produce_total_ms"  # Kafka's TotalTimeMs: the parts together


def figure(v: Any) -> float | None:
    """A row's value as a figure: None for a missing value, a NaN or a value that is not a number."""
    if v is None or isinstance(v, bool | str):
        return None
    f = float(v)
    return None if f != f else f


def figures(row: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, float | None]:
    """The row's named columns as figures (`figure`), a missing column None."""
    return {n: figure(row.get(n)) for n in names}


def _series(row: Mapping[str, Any], prefix: str, suffix: str) -> dict[str, float]:
    """The row's figures whose column starts with `prefix` and ends with `suffix`, keyed by what lies between."""
    out = {}
    for k, v in row.items():
        if k.startswith(prefix) and k.endswith(suffix) and len(k) > len(prefix) + len(suffix):
            f = figure(v)
            if f is not None:
                out[k[len(prefix) : len(k) - len(suffix)]] = f
    return out


@dataclass(frozen=True)
class BrokerSecond:
    """One broker's second (cluster.metrics.rates, with its second and phase of the run)."""

    broker_id: int
    second: int
    phase: str = ""
    interval_s: float | None = None  # since the broker's previous row: longer when it could not be scraped
    restarted: bool = False  # its process started again since its previous row (its counters reset)
    produce_requests_per_s: float | None = None
    # part of a produce request's time ("produce_queue_ms", …) -> ms it took over the second's requests together
    produce_ms_per_s: Mapping[str, float] = field(default_factory=dict)
    bytes_in_per_s: float | None = None  # from clients (Kafka counts replica fetches apart)
    bytes_out_per_s: float | None = None  # to clients
    replication_bytes_in_per_s: float | None = None
    replication_bytes_out_per_s: float | None = None
    request_handler_idle: float | None = None  # the share of the second the request-handler pool was idle
    network_processor_idle: float | None = None
    gc_pause_s_per_s: float | None = None
    jit_compile_s_per_s: float | None = None
    log_flush_ms_per_s: float | None = None
    isr_shrinks_per_s: float | None = None
    isr_expands_per_s: float | None = None
    under_replicated: float | None = None  # its under-replicated partitions
    active_controller: float | None = None  # this broker's ActiveControllerCount
    active_controllers: float | None = None  # every broker's added up (cluster.metrics: 1 for a healthy quorum)

    @property
    def request_ms(self) -> float:
        """The milliseconds the second's produce requests took at this broker, their parts added (the total Kafka
        also keeps is left out: it would count them twice); 0 in a second without the parts."""
        return sum(ms for part, ms in self.produce_ms_per_s.items() if part != PRODUCE_TOTAL)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> BrokerSecond:
        return cls(
            broker_id=int(row.get("broker_id") or 0),
            second=int(row["second"]),
            phase=str(row.get("phase") or ""),
            restarted=bool(row.get("restarted")),
            produce_ms_per_s={f"produce_{k}_ms": v for k, v in _series(row, *_PRODUCE_PART).items()},
            **figures(row, _BROKER_FIGURES),
        )


_BROKER_FIGURES = (
    "interval_s",
    "produce_requests_per_s",
    "bytes_in_per_s",
    "bytes_out_per_s",
    "replication_bytes_in_per_s",
    "replication_bytes_out_per_s",
    "request_handler_idle",
    "network_processor_idle",
    "gc_pause_s_per_s",
    "jit_compile_s_per_s",
    "log_flush_ms_per_s",
    "isr_shrinks_per_s",
    "isr_expands_per_s",
    "under_replicated",
    "active_controller",
    "active_controllers",
)


@dataclass(frozen=True)
class HostSecond:
    """A second of the brokers' machine (cluster.hoststats.rows): its CPUs, each broker's wait for one, and each
    shaped link's load as a share of its rate."""

    second: int
    cpu_busy: float | None = None  # the machine's busy CPU share
    cpu_pressure: float | None = None  # the share of the second some task waited for a CPU
    other_cpu: float | None = None  # cores taken by processes outside the run
    other_top: str | None = None  # the busiest of those ("name[pid]")
    broker_wait: Mapping[str, float] = field(default_factory=dict)  # broker id -> cores its threads waited for
    # (link device, "in" or "out") -> the link's mean share of its rate; its fullest tenth of a second; packets dropped
    link: Mapping[tuple[str, str], float] = field(default_factory=dict)
    link_peak: Mapping[tuple[str, str], float] = field(default_factory=dict)
    link_dropped: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> HostSecond:
        top = row.get("other_top")
        peaks = {(d, w): v for w in ("in", "out") for d, v in _series(row, "link_", f"_peak_{w}").items()}
        shares = {
            (d, w): v for w in ("in", "out") for d, v in _series(row, "link_", f"_{w}").items() if "_peak" not in d
        }
        return cls(
            second=int(row["second"]),
            **figures(row, ("cpu_busy", "cpu_pressure", "other_cpu")),
            other_top=str(top) if top else None,
            broker_wait=_series(row, "broker", "_wait"),
            link=shares,
            link_peak=peaks,
            link_dropped=_series(row, "link_", "_dropped"),
        )


@dataclass(frozen=True)
class ClientSecond:
    """One load worker's second (loadgen.result's samples): what its client said of its own queue and requests."""

    role: str
    worker: int
    second: int
    queue_p99_ms: float | None = None  # records' time in the producer's queue, p99 (librdkafka's statistics)
    rtt_p99_ms: float | None = None  # its requests' round trip, p99
    delay_max_ms: float | None = None  # its latest send behind the schedule

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ClientSecond:
        return cls(
            role=str(row.get("role") or ""),
            worker=int(row.get("worker") or 0),
            second=int(row["second"]),
            **figures(row, ("queue_p99_ms", "rtt_p99_ms", "delay_max_ms")),
        )
