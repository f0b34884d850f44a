"""The driver contract, in the shape of OpenMessaging Benchmark's BenchmarkDriver.

A driver creates topics, producers and consumers for one messaging system and moves bytes. It never
takes a timestamp that a measurement uses and never touches broker configuration: the load workers
own the clock, the broker side lives in `brokerconf`. Completion is reported through callbacks, not a
future per message (a future per message costs too much in Python).

Drivers are found by the `kafkatune.drivers` entry point group and imported lazily, so a system's
client library is only needed when that system is used.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import ClassVar

from core.errors import EnvironmentProblem, UserError

# on_done(error, payload): error is None when the system acknowledged the message.
DeliveryCallback = Callable[[str | None, bytes], None]
# (payload, key): queue one message; Producer.sender binds its delivery callback once
Sender = Callable[[bytes, bytes | None], None]
# (payloads): queue these messages, no key; returns the indexes of those the client's full buffer refused (in
# order; empty when all were queued). Producer.batch_sender binds its delivery callback once.
BatchSender = Callable[[list[bytes]], list[int]]
# A consumer's handler for what one client call returned: the payloads, in order, all received at one moment.
BatchCallback = Callable[[list[bytes]], None]
# on_message(payload) for every message a consumer receives.
MessageCallback = Callable[[bytes], None]


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int | None = None  # None: the cluster's default
    config: Mapping[str, str] = field(default_factory=dict)


# The error a delivery callback gets for a message `drop_unsent` removed: never sent, so neither
# acknowledged nor lost, and not a publish error.
DROPPED = "dropped unsent at the end of the run"
# The error a counting producer's callback gets for a message `give_up` abandoned: sent, but its
# acknowledgement never came before the run ended (neither acknowledged nor a publish error).
ABANDONED = "abandoned in flight at the end of the run"
# What a producer's `stats()` may report (over its last interval), for the diagnosis and the tail budget:
CLIENT_STATS = {
    "queue_ms": "time a record waited in the client's queue before its request was sent (linger, batching)",
    "rtt_ms": "a produce request's round trip to the broker and back (the broker's own time included)",
    "queue_p99_ms": "the 99th percentile of queue_ms, the highest over the brokers (the tail budget's client side)",
    "rtt_p99_ms": "the 99th percentile of rtt_ms, the highest over the brokers (the tail budget's broker side)",
    "inflight": "requests sent and awaiting a response, summed over brokers",
    "batch_bytes": "bytes per batch (one partition's share of a produce request)",
    "batch_records": "records per batch",
}
# How long one Consumer.poll may hand over a backlog before it returns (the worker ticks between polls).
POLL_BUDGET_S = 0.05


class Producer(abc.ABC):
    @abc.abstractmethod
    def send(self, key: bytes | None, payload: bytes, on_done: DeliveryCallback) -> None:
        """Queue one message. Raises `BufferFull` when the client's send buffer is full."""

    @abc.abstractmethod
    def poll(self, timeout_s: float = 0.0) -> int:
        """Serve delivery callbacks; returns how many ran."""

    @abc.abstractmethod
    def flush(self, timeout_s: float) -> int:
        """Wait for outstanding messages; returns how many are still outstanding."""

    def stats(self) -> Mapping[str, float] | None:
        """The client's own figures for its last statistics interval, in CLIENT_STATS's keys (those it knows),
        or None when it keeps none or none is new. Called about once a second, never per message."""
        return None

    def drop_unsent(self) -> None:
        """Drop messages still queued in the client and not yet sent to a broker (end of a max-rate run).

        Each dropped message's callback gets `DROPPED` as its error. Drivers that cannot do this keep the
        default: nothing is dropped and `flush` waits for everything.
        """
        return None

    def unresolved(self) -> int:
        """A counting producer (`Driver.create_counting_producer`): how many messages it was handed are neither
        acknowledged nor reported failed yet, after serving what completed. The load worker counts the
        acknowledged as sent − unresolved − failed, exactly, with no Python call per message."""
        raise TypeError(f"{type(self).__name__} reports every message; it keeps no count of unresolved ones")

    def give_up(self) -> None:
        """A counting producer at the end of a run whose flush timed out: abandon what is still in flight, so
        every such message's callback runs (with `ABANDONED`) and the acknowledged set is known exactly."""
        raise TypeError(f"{type(self).__name__} reports every message; nothing is left to give up")

    def sender(self, on_done: DeliveryCallback) -> tuple[Sender, tuple[type[BaseException], ...]]:
        """The send loop's path: a callable `(payload, key)` that queues one message with `on_done` as its
        callback, and the exceptions that mean a full buffer (the loop serves completions and tries again).
        The default wraps `send`; a driver returns its client's own call bound once, so the loop pays no
        Python frame of ours per message."""

        def send(payload: bytes, key: bytes | None) -> None:
            self.send(key, payload, on_done)

        return send, (BufferFull,)

    def batch_sender(self, on_done: DeliveryCallback) -> BatchSender | None:
        """The max-rate send loop's path for keyless messages, when the client takes many in one call (one
        Python call per batch instead of one per message): see `BatchSender`. None: send one at a time."""
        return None

    def send_now(self, payload: bytes, on_done: DeliveryCallback, timeout_s: float = 30.0) -> None:
        """One message on its way at once, for a caller that waits for each (the ping-pong). The default sends
        (waiting out a full buffer) and serves completions; a driver with a direct path (a socket write)
        overrides it, so the harness adds as little as the language allows to a round trip."""
        send_waiting(self, None, payload, on_done, timeout_s)
        self.poll(0)

    @abc.abstractmethod
    def close(self) -> None: ...


class Consumer(abc.ABC):
    @abc.abstractmethod
    def poll(self, timeout_s: float) -> int:
        """Receive what is available, calling on_message per message; returns the count. Returns as soon as
        anything was received: the timeout bounds the wait for the first message, never adds to it. With a
        backlog, a call hands over about POLL_BUDGET_S worth of messages (or one client batch) and leaves
        the rest for the next: the caller's per-second accounting runs between calls."""

    def receive_batches(self, on_batch: BatchCallback) -> bool:
        """From now on `poll` hands what one client call returned to `on_batch` in one call (one Python call per
        batch, one clock read for messages that arrived together) instead of on_message per message. True
        when this consumer can; the default cannot (on_message goes on)."""
        return False

    def poll_one(self, timeout_s: float) -> int:
        """`poll` for a caller that waits for one message at a time (the ping-pong): a driver with a direct
        path (one blocking read) overrides it; the default is `poll`."""
        return self.poll(timeout_s)

    @abc.abstractmethod
    def ready(self) -> bool:
        """True once the consumer will receive every message sent to its topic from now on."""

    def client_state(self) -> str | None:
        """What the client says of its subscription, in words (where a consumer that received nothing waits);
        None: this driver cannot tell."""
        return None

    def pause(self) -> None:
        """Stop receiving while keeping the subscription, so the system holds a backlog for it (OMB's
        pauseConsumers); poll() goes on and returns 0. Only drivers whose `holds_backlog` is True have it:
        a backlog workload on another driver is refused before the run (loadgen.workload)."""
        raise TypeError(f"{type(self).__name__} cannot pause: its system keeps no backlog for a paused consumer")

    def resume(self) -> None:
        """Receive again, from where pause() left off."""
        raise TypeError(f"{type(self).__name__} cannot resume: it never pauses")

    @abc.abstractmethod
    def close(self) -> None: ...


class BufferFull(Exception):
    """The producer's local queue is full: the load generator, not the cluster, is the limit right now."""


def send_waiting(
    p: Producer,
    key: bytes | None,
    payload: bytes,
    on_done: DeliveryCallback,
    timeout_s: float = 30.0,
    also: Callable[[], object] | None = None,
) -> None:
    """`p.send` for callers without a schedule: on BufferFull (a full queue, or kafka-python's first send
    to a topic whose metadata is not there yet) serve completions and try again, up to `timeout_s`."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            p.send(key, payload, on_done)
            return
        except BufferFull:
            if time.monotonic() > end:
                raise
            p.poll(0.005)
            if also is not None:
                also()


class Driver(abc.ABC):
    name: ClassVar[str]
    # The server kafkatune runs for this system when a run names none: "testbed" (Kafka, `kafkatune testbed`),
    # "mosquitto", "zenoh" or "pulsar" (`kafkatune servers`), or "none" (no server: DDS, raw TCP).
    local_server: ClassVar[str] = "none"
    # Whether its topics have partitions (OMB's 1/6/16-partition runs apply to these only).
    partitioned: ClassVar[bool] = False
    # Whether a paused consumer finds what was sent meanwhile when it resumes (Consumer.pause): backlog runs
    # (OMB's consumerBacklogSizeGB) need it.
    holds_backlog: ClassVar[bool] = False
    # Whether a send the system cannot take yet raises BufferFull (the send loop waits and counts it) instead of
    # blocking: a max-rate producer that rarely met a full buffer then never waited on the system (loadgen.scaleout).
    full_buffer_backpressure: ClassVar[bool] = False
    # The client library it drives, by its package's name: a run's record names the client and its version.
    library: ClassVar[str] = ""

    def __init__(self, common: Mapping[str, str]) -> None:
        self.common = dict(common)

    @classmethod
    def client_info(cls) -> dict[str, str]:
        """The client a run used, for its record: the library and its installed version (empty: none, raw TCP)."""
        return {"client": cls.library, "version": metadata.version(cls.library)} if cls.library else {}

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        """Raise UserError naming the key when a client config is not valid. Touches no server."""
        return None

    @abc.abstractmethod
    def create_topics(self, topics: Sequence[TopicSpec], *, validate_only: bool = False) -> None: ...

    @abc.abstractmethod
    def delete_topics(self, names: Sequence[str]) -> None: ...

    @abc.abstractmethod
    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> Producer: ...

    def create_counting_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> Producer | None:
        """A producer whose delivery callback runs for failed messages only and that counts the acknowledged
        ones instead (`Producer.unresolved`): the max-rate path, where a Python call per message costs more client
        CPU than the client library's whole send path at small records. None (the default): the system's
        client has no such mode, and every message is reported."""
        return None

    @abc.abstractmethod
    def create_consumer(
        self, topic: str, subscription: str, on_message: MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> Consumer: ...

    def replay(self, topic: str, timeout_s: float = 60.0) -> Iterator[bytes] | None:
        """Every message the system holds for `topic`, from its beginning to its end as of the call (each
        partition to its high watermark): what tells a message that was lost from one not consumed in time. None
        (the default): the system keeps no log to read again."""
        return None

    def close(self) -> None:
        return None


def available_drivers() -> list[str]:
    return sorted(ep.name for ep in metadata.entry_points(group="kafkatune.drivers"))


def load_driver(name: str) -> type[Driver]:
    eps = {ep.name: ep for ep in metadata.entry_points(group="kafkatune.drivers")}
    if name not in eps:
        raise UserError(f"driver: unknown driver {name!r}; installed: {', '.join(sorted(eps)) or 'none'}")
    try:
        cls = eps[name].load()
    except ImportError as e:
        raise EnvironmentProblem(
            f"driver {name!r} needs a package that is not installed ({e}); "
            f"install the extra: pip install 'kafkatune[{name}]'"
        ) from e
    if not (isinstance(cls, type) and issubclass(cls, Driver)):
        raise EnvironmentProblem(f"entry point {name!r} is not a kafkatune Driver")
    return cls
