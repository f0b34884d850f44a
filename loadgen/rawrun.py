"""What one run leaves before it is aggregated: every worker's per-second ticks, their final reports, the broker and
host samples, and the run's time line (loadgen.runner makes it, loadgen.result turns it into the record).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from cluster.hoststats import HostSample
from cluster.metrics import BrokerSample
from core.typed import from_json
from loadgen.channel import Timing
from loadgen.workload import Workload
from records.result import BacklogParts

# why a run's consumers stopped reading (loadgen.collect.drain_end)
DrainEnd = Literal["arrived", "idle", "timeout", "not-drained", "no-consumers"]


def phase_of(second: int, warmup_s: float, test_s: float) -> str:
    """The phase of whole second `second` of a run: only seconds wholly inside the window are measured."""
    if second < math.ceil(warmup_s):
        return "warmup"
    if second + 1 <= warmup_s + test_s + 1e-9:
        return "measure"
    return "drain"


def measured_seconds(warmup_s: float, test_s: float) -> int:
    return sum(1 for s in range(math.ceil(warmup_s + test_s) + 1) if phase_of(s, warmup_s, test_s) == "measure")


@dataclass(frozen=True)
class Evidence:
    """One worker's second as the tail budget (loadgen.tail) reads it, ms; None: not measured in that second. The
    worker's own stalls (loadgen.selfwatch) and its client's tail statistics (loadgen.ticker.TAIL_STATS)."""

    py_gc_ms: float | None = None  # Python's cyclic GC, all its passes
    py_gc_max_ms: float | None = None  # its longest pass
    wait_ms: float | None = None  # the worker's threads ready to run and waiting for a CPU
    main_wait_ms: float | None = None  # the loop's own thread waiting for a CPU: a stall that was starvation
    loop_gap_ms: float | None = None  # the longest time the loop spent away from the client's poll
    queue_p99_ms: float | None = None  # a producer's records waiting in its client, p99
    rtt_p99_ms: float | None = None  # its requests' round trip to the brokers, p99

    def to_json(self) -> dict[str, float]:
        """As a worker's tick carries it on the queue and over the wire (loadgen.wire): the measured figures only."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, d: Mapping[str, float] | None) -> Evidence:
        return from_json(cls, d or {}, "a tick's evidence")


EVIDENCE_FIELDS = tuple(f.name for f in fields(Evidence))


@dataclass
class Tick:
    role: str
    wid: int
    second: int
    msgs: int
    nbytes: int
    errors: int
    hist: bytes | None
    thread_cpu_s: float
    process_cpu_s: float
    buffer_full: int
    sent: int
    delay: bytes | None = None  # the second's publish-delay histogram (a producer with a rate schedule)
    # the worker's own stall evidence for the second (loadgen.selfwatch: Python GC, CPU wait, loop gaps) and its
    # client's tail statistics (ticker.TAIL_STATS), ms
    evidence: Evidence | None = None


@dataclass(frozen=True)
class ProducerEnd:
    """What a producer reports at its end (loadgen.worker): its counts, which sequence numbers were acknowledged
    (1 byte each), its publish-latency histogram over the window (encoded; None: no sample) and its client's
    statistics."""

    sent: int = 0
    acked: int = 0
    errors: int = 0
    dropped_unsent: int = 0  # max rate: queued in the client, never sent, when the run ended
    outstanding: int = 0  # still queued when its flush timed out: sent, never acknowledged nor failed
    error_samples: tuple[str, ...] = ()
    acked_map: bytes = b""
    publish_hist: bytes | None = None
    acks_counted: bool = False  # acknowledgements counted, not timed one by one (no publish latency)
    client_stats: tuple[Mapping[str, float], ...] = ()  # one per measured second (loadgen.ticker)
    records_per_send_call: int = 1  # > 1: handed to the client in batches


@dataclass(frozen=True)
class ConsumerEnd:
    """What a consumer reports at its end (loadgen.consumer): what it received, per producer which sequence numbers
    (a count per number), its end-to-end histogram (encoded; None: no sample) and, when it received nothing, where
    its client waited."""

    received: int = 0
    errors: int = 0
    records_per_receive_call: float = 1.0
    client_state: str | None = None
    seen: Mapping[int, bytes] = field(default_factory=dict)
    e2e_hist: bytes | None = None


@dataclass(frozen=True)
class Verified:
    """The log read again after acknowledged messages were missing (loadgen.verify): whether it could be, how many
    were missing, and per producer the missing sequence numbers found in it (not lost: not consumed in time)."""

    replayed: bool  # False: the system keeps no log to read again, so the lost count is not verified
    missing: int
    in_log: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def ended(role: str, report: Mapping[str, Any]) -> ProducerEnd | ConsumerEnd:
    """A worker's end report as it crossed the queue or the wire (a mapping), typed."""
    if role == "producer":
        return from_json(ProducerEnd, report, "producer end report")
    return from_json(ConsumerEnd, report, "consumer end report")


@dataclass
class RawRun:
    """What the workers and the broker sampler reported, before any aggregation."""

    workload: Workload
    topics: list[str]
    timing: Timing  # set before `go` (all 0 until then)
    started_wall_ns: int
    ticks: list[Tick] = field(default_factory=list)
    producers: dict[int, ProducerEnd] = field(default_factory=dict)
    consumers: dict[int, ConsumerEnd] = field(default_factory=dict)
    broker_samples: list[BrokerSample] = field(default_factory=list)
    # this machine each second when the brokers run on it (the testbed): CPU, brokers' CPU wait, shaped links
    host_samples: list[HostSample] = field(default_factory=list)
    drain_s: float = 0.0
    drain_ended: DrainEnd | None = None  # why the consumers were stopped (collect.drain_end); None: not yet
    machine_cpu_percent: float | None = None
    consumer_assignment_wait_s: float = 0.0
    # (role, id) -> where the worker ran: its network namespace, a remote client host, or None (here)
    worker_hosts: dict[tuple[str, int], str | None] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)  # wall time of set-up and clean-up steps
    # a rate schedule's (second from t0, msg/s for the whole workload) steps, and the second the run's
    # `stop_when` ended it early (None: it ran its course)
    schedule: tuple[tuple[int, float], ...] = ()
    stopped_early_at: int | None = None
    # a backlog run (loadgen.backlog) decides its measured phase's length as it goes; its parts are in `backlog`
    measured_s: float | None = None
    backlog: BacklogParts | None = None
    # when acknowledged messages were missing: the log read again (loadgen.verify), None when nothing was missing
    verified: Verified | None = None

    @property
    def test_s(self) -> float:
        """The measured phase's length: the workload's, or what a backlog run took."""
        return self.measured_s if self.measured_s is not None else self.workload.test_seconds

    def receipts(self, pid: int) -> tuple[Any, Any]:
        """Producer `pid`'s acknowledged map (1 per acknowledged sequence number) and how many times each sequence
        number was received, all consumers together (numpy arrays of one length)."""
        import numpy as np

        acked = np.frombuffer(self.producers[pid].acked_map, dtype=np.uint8)
        counts = np.zeros(len(acked), dtype=np.int64)
        for c in self.consumers.values():
            seen = c.seen.get(pid)
            if seen is not None:
                got = np.frombuffer(seen, dtype=np.uint8)[: len(acked)]
                counts[: len(got)] += got
        return acked, counts


View = Callable[[RawRun, Tick], None]
# Sets a steered run's rate: from whole second `second` (from t0) on, `msg_s` for the whole workload.
Publish = Callable[[int, float], None]
# Asked after every tick of a steered run (loadgen.search): may publish the next rate; True ends the producers.
Steer = Callable[[RawRun, Publish], bool]


def chain(*views: View | None) -> View:
    """One on_tick hook that calls each of `views` (None ones skipped) in turn."""
    live = [v for v in views if v is not None]

    def tick(raw: RawRun, t: Tick) -> None:
        for v in live:
            v(raw, t)

    return tick
