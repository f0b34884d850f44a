"""A second Kafka driver, on kafka-python (pure Python), to compare clients against the same brokers.

Config keys are the Java client's (`batch.size`, `linger.ms`, `acks`, …), translated to kafka-python's
underscored names; a key kafka-python does not know is an error naming it. `buffer.memory` (default 32 MiB,
as in Java) is kept by the driver: kafka-python 3 dropped it.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

from core.errors import EnvironmentProblem, UserError
from drivers import api, handoff

INT_KEYS = {
    "batch_size",
    "linger_ms",
    "buffer_memory",
    "max_in_flight_requests_per_connection",
    "fetch_max_bytes",
    "max_partition_fetch_bytes",
    "fetch_min_bytes",
    "fetch_max_wait_ms",
    "max_request_size",
    "retries",
    "request_timeout_ms",
    "delivery_timeout_ms",
    "max_block_ms",
    "max_poll_records",
}


def _conf(conf: Mapping[str, str], known: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in conf.items():
        nk = k.replace(".", "_")
        if nk not in known:
            raise UserError(f"{where}: kafka-python has no setting {k!r}")
        if nk == "acks":
            out[nk] = "all" if str(v) in ("all", "-1") else int(v)
        elif nk in INT_KEYS:
            try:
                out[nk] = int(v)
            except ValueError:
                raise UserError(f"{where}: {k} must be an integer (got {v!r})") from None
        else:
            out[nk] = None if str(v) == "none" and nk == "compression_type" else str(v)
    return out


BUFFER_MEMORY = 33554432  # the Java client's buffer.memory default
METADATA_WAIT_S = 30.0  # a new topic's partitions reach the client's metadata within this


def _buffer_memory(v: str | None) -> int:
    """producerConfig buffer.memory, kept by this driver (kafka-python 3 has none)."""
    if v is None:
        return BUFFER_MEMORY
    if not str(v).isdigit() or int(v) < 1:
        raise UserError(f"producerConfig: buffer.memory must be a positive integer of bytes (got {v!r})")
    return int(v)


class KpProducer(api.Producer):
    """kafka-python 3 has no buffer.memory: its accumulator grows without bound, and a send loop at max
    rate then queues seconds of backlog while its own thread starves the client's I/O thread of the GIL
    (128 KiB messages fell to 6 msg/s). The bound is kept here, with the Java client's meaning: bytes of
    record values sent and not yet acknowledged; past it `send` raises BufferFull."""

    def __init__(self, bootstrap: str, topic: str, conf: dict[str, Any], buffer_memory: int = BUFFER_MEMORY) -> None:
        self.topic = topic
        # max_block_ms=0: a first send before the topic's metadata is there raises at once
        self.p = KafkaProducer(bootstrap_servers=bootstrap.split(","), max_block_ms=conf.pop("max_block_ms", 0), **conf)
        self.done: collections.deque[tuple[api.DeliveryCallback, str | None, bytes]] = collections.deque()
        self.outstanding = 0
        self.buffer_memory = buffer_memory
        self.buffered = 0  # bytes sent, not yet acknowledged (or failed)
        self.lock = threading.Lock()
        self.completed = threading.Event()

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        size = len(payload) + (len(key) if key else 0)
        with self.lock:
            # one message always fits when nothing is buffered, as in the Java client up to max.request.size
            if self.buffered and self.buffered + size > self.buffer_memory:
                raise api.BufferFull
        try:
            fut = self.p.send(self.topic, value=payload, key=key)
        except KafkaTimeoutError:
            raise api.BufferFull from None
        with self.lock:
            self.outstanding += 1
            self.buffered += size

        def completed(e: str | None) -> None:  # in the client's I/O thread
            with self.lock:
                self.buffered -= size
            self.done.append((on_done, e, payload))
            self.completed.set()

        fut.add_callback(lambda _md: completed(None)).add_errback(lambda e: completed(str(e) or type(e).__name__))

    def poll(self, timeout_s: float = 0.0) -> int:
        if not self.done and timeout_s > 0:  # woken by the first completion, not a fixed sleep
            self.completed.wait(timeout_s)
        self.completed.clear()
        n = 0
        while self.done:
            cb, e, payload = self.done.popleft()
            cb(e, payload)
            n += 1
        with self.lock:
            self.outstanding -= n
        return n

    def flush(self, timeout_s: float) -> int:
        with contextlib.suppress(KafkaTimeoutError):
            self.p.flush(timeout=timeout_s)
        end = time.monotonic() + 1
        while self.outstanding and time.monotonic() < end:
            self.poll(0.01)
        return self.outstanding

    def close(self) -> None:
        self.p.close(timeout=5)


class KpConsumer(api.Consumer):
    def __init__(
        self, bootstrap: str, topic: str, group: str, on_message: api.MessageCallback, conf: dict[str, Any]
    ) -> None:
        self.on_message = on_message
        self.pending = handoff.Inbox()
        self.c = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=group,
            auto_offset_reset="latest",
            enable_auto_commit=False,
            **conf,
        )
        # Subscribe only once this client knows the topic's partitions. Subscribed right after the topic was
        # created, the group's leader could assign before the topic's metadata arrived ("No partition metadata
        # for topic"): an empty assignment, kept until the next metadata refresh (metadata.max.age.ms, 5 min).
        deadline = time.monotonic() + METADATA_WAIT_S
        while not self.c.partitions_for_topic(topic):
            if time.monotonic() > deadline:
                self.c.close()
                raise EnvironmentProblem(
                    f"kafka-python: no partition metadata for topic {topic} after {METADATA_WAIT_S:g} s"
                )
            time.sleep(0.1)
        self.c.subscribe([topic])

    def poll(self, timeout_s: float) -> int:
        # One client poll returns up to 1,000 records: they wait here and are handed over within the poll
        # budget, so a slow handler cannot make one call last seconds.
        if not self.pending.q:
            for records in self.c.poll(timeout_ms=int(timeout_s * 1000), max_records=1000).values():
                self.pending.q.extend(r.value for r in records)
        return self.pending.drain(self.on_message, 0)

    def ready(self) -> bool:
        # assigned partitions with a fetch position: from here on every new record is read
        parts = self.c.assignment()
        if not parts:
            return False
        try:
            for tp in parts:
                self.c.position(tp)
        except KafkaError:
            return False
        return True

    def close(self) -> None:
        self.c.close()


class KafkaPythonDriver(api.Driver):
    name: ClassVar[str] = "kafka-python"
    library: ClassVar[str] = "kafka-python"
    local_server: ClassVar[str] = "testbed"
    partitioned: ClassVar[bool] = True
    full_buffer_backpressure: ClassVar[bool] = True

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self.bootstrap = str(common.get("bootstrap.servers") or "127.0.0.1:9092")

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        conf = dict(producer_config)
        _buffer_memory(conf.pop("buffer.memory", None))
        _conf(conf, KafkaProducer.DEFAULT_CONFIG, "producerConfig")
        _conf(consumer_config, KafkaConsumer.DEFAULT_CONFIG, "consumerConfig")

    def _admin(self) -> Any:
        try:
            return KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","), request_timeout_ms=30000)
        except KafkaError as e:
            raise EnvironmentProblem(f"Kafka at {self.bootstrap} is not reachable (kafka-python): {e}") from None

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        a = self._admin()
        try:
            new = [
                NewTopic(t.name, t.partitions, t.replication_factor or 3, topic_configs=dict(t.config)) for t in topics
            ]
            a.create_topics(new, validate_only=validate_only)
        except TopicAlreadyExistsError as e:
            raise UserError(f"topic already exists: {e}") from None
        finally:
            a.close()

    def delete_topics(self, names: Sequence[str]) -> None:
        a = self._admin()
        try:
            a.delete_topics(list(names))
        except UnknownTopicOrPartitionError:
            pass
        finally:
            a.close()

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        conf = dict(overrides or {})
        memory = _buffer_memory(conf.pop("buffer.memory", None))
        return KpProducer(self.bootstrap, topic, _conf(conf, KafkaProducer.DEFAULT_CONFIG, "producerConfig"), memory)

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        conf = _conf(overrides or {}, KafkaConsumer.DEFAULT_CONFIG, "consumerConfig")
        return KpConsumer(self.bootstrap, topic, subscription, on_message, conf)
