"""A run's result.json, typed: loadgen.result builds a `RunResult`, records.run writes it, and its readers (the trials
table, the diagnosis, the report) get it back through `RunResult.from_json`.

What kafkatune writes and reads is typed here; OMB's per-second series stay beside it in the file for OMB's tools
(records.run.RunRecord.omb_fields). Every figure is as the writer put it: MB/s are 10^6 bytes received per second,
latencies ms. A field an older record lacks takes its default, so the readers say "not measured" instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from core.typed import from_json, json_name
from records.tail import TailBrief, TailBudget

RESULT = "result.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ProducerStats:
    """The producers' own statistics over the measure window, each the median over producers and seconds
    (drivers.api.CLIENT_STATS says what each is); None where no client reported it."""

    queue_ms: float | None = None
    rtt_ms: float | None = None
    queue_p99_ms: float | None = None
    rtt_p99_ms: float | None = None
    inflight: float | None = None
    batch_bytes: float | None = None
    batch_records: float | None = None


@dataclass(frozen=True)
class BrokerRates:
    """Cluster-wide MB/s over the measure window as the brokers counted them (loadgen.brokerside.broker_summary):
    bytes in from clients, replica fetches in and out, bytes out to clients; None where an older record lacks one."""

    produce_mb_s: float | None = None
    replicate_mb_s: float | None = None
    consume_mb_s: float | None = None
    replication_out_mb_s: float | None = None
    jit_compile_cores: float | None = None  # the brokers' JIT compilers together (None: no JVM collector)
    seconds: int = 0  # measured seconds they are the mean of


@dataclass(frozen=True)
class ClientSummary:
    """What the clients said of themselves (librdkafka's statistics, the load workers' loops)."""

    buffer_full_events: int = 0
    machine_cpu_percent: float | None = None
    loop_cpu_util: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # role -> each loop's core share
    producer_stats: ProducerStats = ProducerStats()
    producer_stats_samples: int = 0  # producer-seconds the statistics are the median of
    # records handed to the client per call (1: one at a time; more: loadgen.worker's batches at the maximum rate)
    records_per_send_call: int = 1
    records_per_receive_call: float | None = None  # per consumer handler call, the median over consumers
    consumers_idle: int | None = None  # consumers that received nothing in the window while others did


@dataclass(frozen=True)
class Latency:
    """One latency histogram over the measure window, ms (loadgen.recorder.summary_ms). When it holds no sample every
    figure is None and `missing` says why, so no reader can print a latency that was not measured."""

    count: int = 0
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    p50: float | None = None
    p75: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p999: float | None = field(default=None, metadata={"json": "p99.9"})
    p9999: float | None = field(default=None, metadata={"json": "p99.99"})
    max: float | None = None
    missing: str | None = None

    def at(self, name: str) -> float | None:
        """The figure by its JSON name ("p99.9", "max"); None when not measured or not a figure of this record."""
        f = _LATENCY_FIGURES.get(name)
        return None if f is None else getattr(self, f)


@dataclass(frozen=True)
class ProducerLoss:
    """One producer's acknowledged messages and what became of them (loadgen.result): not consumed and not in the log
    (lost), consumed more than once, in the log but not consumed in time; `lost_seqs`: the first ranges of its lost
    sequence numbers, each [first, last]."""

    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    not_consumed_in_time: int = 0
    lost_seqs: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class RunSummary:
    """The run's figures over its measure window (loadgen.result's `summary`)."""

    mode: str | None = None  # max-rate or fixed-rate (a discovery's answer is RunResult.sustainable)
    consume_mb_s: float | None = None
    consume_msg_s: float | None = None
    publish_mb_s: float | None = None
    publish_msg_s: float | None = None
    publish_bit_s: float | None = None
    acknowledged: int | None = None
    consumed: int | None = None
    lost: int | None = None
    duplicated: int | None = None
    publish_errors: int | None = None
    unacknowledged_at_end: int | None = None  # still queued in a producer when its flush timed out
    # acknowledged, not consumed before the drain ended, found in the log when it was read again (loadgen.verify)
    not_consumed_in_time: int | None = None
    loss_verified: bool | None = None  # False: the system keeps no log to read again
    publish_error_samples: tuple[str, ...] = ()  # a few distinct errors the producers were given
    per_producer: Mapping[str, ProducerLoss] = field(default_factory=dict)  # producer id -> its losses
    client_bound: bool = False
    broker_rates: BrokerRates | None = None  # None: the run read no broker metrics
    client: ClientSummary = ClientSummary()
    warnings: tuple[str, ...] = ()
    tail: TailBudget | None = None  # loadgen.tail's budget, when the run had an SLO
    publish_latency_ms: Latency = Latency()
    end_to_end_latency_ms: Latency = Latency()
    publish_delay_ms: Latency = Latency()  # each send's lateness against the schedule (fixed rate only)
    latency_measured: bool = True  # False: the payloads had no room for a send time
    window_s: int = 0  # the measure window's length, s
    warmup_s: float = 0.0
    target_rate_msg_s: float | None = None  # the fixed rate (None: the maximum rate)
    send_msg_s: float | None = None  # what the producers handed their clients, msg/s over the window
    consume_bit_s: float | None = None
    publish_error_rate: float | None = None  # an OMB import's mean publish errors per second
    sent: int | None = None  # the workers' counts over the whole run, not the window
    dropped_unsent_at_end: int | None = None  # never handed to the client: the run ended first
    consume_errors: int | None = None
    unacked_but_received: int | None = None  # received although the producer was told the send failed
    drain_s: float | None = None  # how long the consumers drained after the producers stopped
    drain_ended: str | None = None  # why the drain ended
    consumer_assignment_wait_s: float | None = None  # from the consumers' start to every partition assigned


_LATENCY_FIGURES = {json_name(f): f.name for f in fields(Latency) if f.name not in ("count", "missing")}


@dataclass
class Step:
    """One rate a search held for a while, and its verdict (loadgen.search). Filled in as the step runs, so not
    frozen; then kept in the search's answer (`Sustainable.steps`: trial.json, result.json)."""

    rate_msg_s: float
    start_s: int  # from t0
    judged_s: list[int]
    sent: int = 0
    received: int = 0
    errors: int = 0
    mb_s: float = 0.0  # received, over the judged seconds
    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    held: bool = False
    why: str = ""
    phase: str = ""  # bracket, bisect or confirm (loadgen.search)
    early: bool = False  # decided before max_step_s, its figures being clear
    tail: TailBrief | None = None  # its seconds over the SLO and their causes (loadgen.tail)


@dataclass(frozen=True)
class SloWritten:
    """The SLO a search held its steps to, as loadgen.sustainable.Slo wrote it with its words (records cannot
    import that class: it sits above); None: that latency was not judged."""

    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    describe: str = ""


@dataclass(frozen=True)
class Sustainable:
    """A rate discovery's answer (loadgen.search): the rate held, None when none held, and every step judged."""

    mb_s: float | None = None
    rate_msg_s: float | None = None
    steps: tuple[Step, ...] = ()  # in the order run
    note: str = ""
    probe_msg_s: float | None = None
    probe_mb_s: float | None = None
    remeasured: tuple[str, ...] = ()  # rates that held, then missed when measured again
    slo: SloWritten = SloWritten()
    search: Mapping[str, float] = field(default_factory=dict)  # the search's settings (loadgen.sustainable.Search)
    message_bytes: int = 0
    at_top: bool = False  # held at the search's cap: the rate may be higher
    probe_s: float = 0.0  # wall time of the probe run and of the search run
    ramp_s: float = 0.0


@dataclass(frozen=True)
class ScaleStep:
    """One max-rate run of a bench that scaled its producer processes out (loadgen.scaleout)."""

    producers: int  # processes per topic
    publish_mb_s: float
    loop_cpu_util: tuple[float, ...] = ()  # each send loop's share of a core
    buffer_full_events: int = 0
    why: str = ""  # why the next run had more processes ("": none was needed)


@dataclass(frozen=True)
class ScaledOut:
    """What scaling out did: from how many producer processes to how many, why, and each run (the record's figures
    are the last one's)."""

    from_producers: int
    to_producers: int
    cap: int  # the most processes per topic it would run
    why: str
    steps: tuple[ScaleStep, ...] = ()


@dataclass(frozen=True)
class Link:
    """One pair of shaped hosts as TCP met it in the run (testbed.links)."""

    hosts: tuple[str, ...]
    data_segs: int = 0  # segments sent over the run
    retrans: int = 0  # of those, sent again
    retrans_pct: float | None = None
    rtt_ms: float | None = None  # the median of the readings' medians over the connections sending
    rtt_readings: int = 0


@dataclass(frozen=True)
class BacklogParts:
    """A backlog run's parts (loadgen.backlog): the backlog it built and drained, each part's start (s from t0) and
    length, and the rate the consumers drained at; a length is None when its part never ended."""

    target_gib: float
    target_msgs: int
    drained_to_msgs: int  # the backlog counted as drained at this many messages owed
    peak_msgs: int
    started_s: Mapping[str, float] = field(default_factory=dict)  # part ("build", "drain", "test", "done") -> start
    build_s: float | None = None
    drain_s: float | None = None
    test_s: float | None = None
    drain_msg_s: float | None = None
    drain_mb_s: float | None = None


@dataclass
class FaultEvent:
    """One planned fault of a run and when each part of it happened, seconds from t0 (faults.inject fills it in as
    the run goes, so it is not frozen; kept in result.json's and trial.json's `faults`)."""

    fault: str  # as the spec or `bench --fault` gave it
    kind: str
    target: str  # in words: "leader of partition 0 of <topic>", "active controller", "broker 2", "brokers 1/2"
    brokers: list[int]
    planned_s: float
    issued_s: float | None = None
    effect_s: float | None = None  # the process gone, the qdisc or route in place
    restored_s: float | None = None  # the node serving again, the link back
    healthy_s: float | None = None  # every node serving, every partition in full ISR
    recovery_s: float | None = None  # healthy_s − effect_s: how long the cluster was not whole
    error: str | None = None


@dataclass(frozen=True)
class DriverFileUsed:
    """The OMB driver file a bench ran with (loadgen.omb_driver): where it was, its name, what was not applied."""

    path: str
    name: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunResult:
    """A run's result.json as kafkatune writes and reads it (OMB's series beside it are records.run's)."""

    schema_version: int = SCHEMA_VERSION  # a record without one is of the first version
    summary: RunSummary = RunSummary()
    workload: str | None = None
    driver: str | None = None
    message_bytes: int = field(default=0, metadata={"json": "messageSize"})
    topics: int | None = None
    partitions: int | None = None
    producers: int | None = field(default=None, metadata={"json": "producersPerTopic"})
    consumers: int | None = field(default=None, metadata={"json": "consumersPerTopic"})
    started_ns: int = 0
    topics_used: tuple[str, ...] = ()  # the topics' names
    client_hosts: tuple[str, ...] = ()  # where the load workers ran ("local": this machine)
    per_client_host: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # host -> its workers' counts
    timing: Mapping[str, int] = field(default_factory=dict)  # the run's time line (loadgen.channel.Timing), ns
    driver_info: Mapping[str, str] = field(default_factory=dict)  # the client library and its version
    driver_file: DriverFileUsed | None = None
    imported_from: str | None = None  # an OMB result file this record was imported from (records.omb)
    producer_config: Mapping[str, Any] = field(default_factory=dict, metadata={"json": "producerConfig"})
    consumer_config: Mapping[str, Any] = field(default_factory=dict, metadata={"json": "consumerConfig"})
    topic_config: Mapping[str, Any] = field(default_factory=dict, metadata={"json": "topicConfig"})
    # broker id -> the configs read back from it (None: not read, the cluster is not the testbed's)
    broker_config: Mapping[str, Mapping[str, Any]] | None = field(default=None, metadata={"json": "brokerConfig"})
    sustainable: Sustainable | None = None
    probe: RunSummary | None = None  # a rate discovery's max-rate probe
    scaled_out: ScaledOut | None = None
    links: tuple[Link, ...] = ()
    backlog: BacklogParts | None = None
    faults: tuple[FaultEvent, ...] = ()  # the faults injected, each part's time
    profile: Mapping[str, Any] | None = None  # older records carry the cluster profile
    # OMB's aggregated latencies over the measure window, ms (None: not measured, e.g. publish at the max rate)
    publish_p50_ms: float | None = field(default=None, metadata={"json": "aggregatedPublishLatency50pct"})
    publish_p99_ms: float | None = field(default=None, metadata={"json": "aggregatedPublishLatency99pct"})
    publish_p999_ms: float | None = field(default=None, metadata={"json": "aggregatedPublishLatency999pct"})
    publish_max_ms: float | None = field(default=None, metadata={"json": "aggregatedPublishLatencyMax"})
    e2e_p50_ms: float | None = field(default=None, metadata={"json": "aggregatedEndToEndLatency50pct"})
    e2e_p99_ms: float | None = field(default=None, metadata={"json": "aggregatedEndToEndLatency99pct"})
    e2e_p999_ms: float | None = field(default=None, metadata={"json": "aggregatedEndToEndLatency999pct"})
    e2e_max_ms: float | None = field(default=None, metadata={"json": "aggregatedEndToEndLatencyMax"})
    publish_quantiles: Mapping[str, float] = field(
        default_factory=dict, metadata={"json": "aggregatedPublishLatencyQuantiles"}
    )
    e2e_quantiles: Mapping[str, float] = field(
        default_factory=dict, metadata={"json": "aggregatedEndToEndLatencyQuantiles"}
    )

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], where: str = RESULT) -> RunResult:
        return from_json(cls, doc, where)
