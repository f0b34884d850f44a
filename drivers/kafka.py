"""Kafka driver on confluent-kafka (librdkafka).

Config keys are librdkafka's, which accept the Java client's names for the keys both have. Java-only
keys that kafkatune sweeps are translated (`buffer.memory` -> `queue.buffering.max.kbytes`); any other
unknown key is an error, never silently ignored.

Three defaults are the harness's, not librdkafka's; a `producerConfig` or `consumerConfig` key of the same name
overrides each (the README's load generator section gives what each was measured to change):
- a consumer fetches again 10 ms after its local queue was full (`fetch.queue.backoff.ms`; librdkafka waits 1 s,
  the Java consumer not at all), so one at max rate that falls a little behind is not paused for a second
  (benchmarks/consumer_fetch_backoff.py);
- a producer keeps the Java producer's 5 requests in flight per connection (librdkafka allows 1,000,000), the
  value a sweep's trials send from the catalogue's defaults (benchmarks/producer_inflight.py);
- both disable Nagle's algorithm (`socket.nagle.disable`), as the Java clients do on every connection: for
  parity with them, not for a gain (benchmarks/results/client_nodelay.json).
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka import Consumer as _Consumer
from confluent_kafka import Producer as _Producer
from confluent_kafka.admin import AdminClient, NewTopic

from core.errors import UserError
from drivers import api
from drivers.kafka_stats import STATS_INTERVAL_MS, client_stats, consumer_state

# Java client key -> (librdkafka key, value converter).
_JAVA_ONLY: Mapping[str, tuple[str, Callable[[str], str]]] = {
    "buffer.memory": ("queue.buffering.max.kbytes", lambda v: str(max(1, int(v) // 1024))),
}


def translate(conf: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in conf.items():
        if k in _JAVA_ONLY:
            nk, conv = _JAVA_ONLY[k]
            out[nk] = conv(str(v))
        else:
            out[k] = str(v)
    return out


# Both clients' sockets as the Java clients open theirs, with TCP_NODELAY (module docstring).
NODELAY: Mapping[str, str] = {"socket.nagle.disable": "true"}
# The harness's consumer defaults (module docstring): a consumer that keeps up with the cluster, like Java's.
HARNESS_CONSUMER: Mapping[str, str] = {"fetch.queue.backoff.ms": "10", **NODELAY}
# The harness's producer defaults (module docstring): requests in flight per broker connection as the Java
# producer allows them (and as a sweep's trials already sent it, from brokerconf.catalogue), not librdkafka's
# 1,000,000.
HARNESS_PRODUCER: Mapping[str, str] = {"max.in.flight.requests.per.connection": "5", **NODELAY}


# What a purge reports for each message it removed, in the driver contract's words.
_PURGED = {KafkaError._PURGE_QUEUE: api.DROPPED, KafkaError._PURGE_INFLIGHT: api.ABANDONED}


def _words(err: Any) -> str:
    """A failed delivery's error for the driver contract: a purge in its words, anything else as librdkafka says."""
    return _PURGED.get(err.code()) or str(err)


# librdkafka's statistics (its STATISTICS.md) every second unless the config sets an interval: the rolling
# windows it keeps per broker and topic are what `stats()` reads. Emitted from poll(), so costless when off.
class KafkaProducer(api.Producer):
    """`counting`: librdkafka reports failed deliveries only (`delivery.report.only.error`), and `unresolved()` reads
    its queue length: no Python call per acknowledged message (see api.Driver.create_counting_producer)."""

    def __init__(self, conf: dict[str, Any], topic: str, counting: bool = False) -> None:
        # kafkatune's accounting owns the delivery reports: a workload cannot switch them off. The sender's
        # callback is the client's default one (`on_delivery` in the config), not a keyword of every produce()
        # call: the keyword cost 0.25-0.38 µs per message (a dict per call), a third of the send path at 100 B.
        conf = {
            "statistics.interval.ms": STATS_INTERVAL_MS,
            **conf,
            "stats_cb": self._on_stats,
            "delivery.report.only.error": counting,
            "on_delivery": self._delivered,
        }
        self._done: api.DeliveryCallback | None = None
        self._stats_json: str | None = None
        self._p = _Producer(conf)
        self._topic = topic
        self._adapters: dict[api.DeliveryCallback, Callable[[Any, Any], None]] = {}

    def _adapter(self, on_done: api.DeliveryCallback) -> Callable[[Any, Any], None]:
        # One adapter per callback, not per message.
        a = self._adapters.get(on_done)
        if a is None:

            def a(err: Any, msg: Any, _cb: api.DeliveryCallback = on_done) -> None:
                if err is None:
                    _cb(None, msg.value())
                else:
                    _cb(_words(err), msg.value())

            self._adapters[on_done] = a
        return a

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        try:
            self._p.produce(self._topic, payload, key, on_delivery=self._adapter(on_done))
        except BufferError as e:
            raise api.BufferFull(str(e)) from e

    def _delivered(self, err: Any, msg: Any) -> None:
        """The client's default delivery callback: the sender's messages (send() gives each its own)."""
        if self._done is None:
            return
        if err is None:
            self._done(None, msg.value())
        else:
            self._done(_words(err), msg.value())

    def sender(self, on_done: api.DeliveryCallback) -> tuple[api.Sender, tuple[type[BaseException], ...]]:
        # confluent-kafka's produce(topic, value, key) itself, no keyword: a full queue raises BufferError
        self._done = on_done
        return functools.partial(self._p.produce, self._topic), (BufferError,)

    def batch_sender(self, on_done: api.DeliveryCallback) -> api.BatchSender:
        # confluent-kafka's produce_batch: the client's default callback serves these too (as for `sender`). A
        # message its full queue refused gets an "_error" entry and no callback; the queue may take later ones of
        # the same batch (deliveries free room meanwhile), so every refused one is named, not a count.
        # The message dicts are the same from batch to batch, each given its next value (the client copies the
        # value when it queues it): a new dict per record was a measurable share of the send path at 100 B
        # (benchmarks/send_batch.py). A refused one's "_error" entry is taken out before the dict goes again.
        self._done = on_done
        produce_batch, topic = self._p.produce_batch, self._topic
        reused: list[dict[str, bytes | KafkaError]] = []  # "value", and "_error" where the client refused it

        def send_batch(payloads: list[bytes]) -> list[int]:
            n = len(payloads)
            while len(reused) < n:
                reused.append({})
            msgs = reused[:n] if n < len(reused) else reused
            for m, v in zip(msgs, payloads, strict=True):
                m["value"] = v
            try:
                if produce_batch(topic, msgs) == n:
                    return []
            except BufferError:  # documented, never seen here: the refused ones are marked as below
                if not any("_error" in m for m in msgs):
                    return list(range(n))
            refused, fatal = [], None
            for i, m in enumerate(msgs):
                err = m.pop("_error", None)
                if isinstance(err, KafkaError):
                    if err.code() != KafkaError._QUEUE_FULL:
                        fatal = fatal or err
                    refused.append(i)
            if fatal is not None:
                raise KafkaException(fatal)  # as produce() raises it (a message too large, ...)
            return refused

        return send_batch

    def poll(self, timeout_s: float = 0.0) -> int:
        return int(self._p.poll(timeout_s))

    def flush(self, timeout_s: float) -> int:
        return int(self._p.flush(timeout_s))

    def _on_stats(self, text: str) -> None:
        self._stats_json = text  # parsed when asked for, once a second at most

    def stats(self) -> dict[str, float] | None:
        text, self._stats_json = self._stats_json, None
        return client_stats(json.loads(text), self._topic) if text else None

    def drop_unsent(self) -> None:
        # In-flight requests are kept: they may still be acknowledged, and then must be consumed.
        self._p.purge(in_queue=True, in_flight=False, blocking=False)

    def unresolved(self) -> int:
        # Serve what completed first (failure reports, statistics): the queue length then counts messages only,
        # but for an event that lands between the two calls (its second's count is then one short, the next one
        # long; the run's totals come from the failure reports, exactly).
        self._p.poll(0)
        return len(self._p)

    def give_up(self) -> None:
        # Purged in-flight messages are reported failed (_PURGE_INFLIGHT) and any later acknowledgement is void.
        self._p.purge(in_queue=True, in_flight=True, blocking=True)
        self._p.flush(5)

    def close(self) -> None:
        self._p.flush(5)


class KafkaConsumer(api.Consumer):
    def __init__(self, conf: dict[str, Any], topic: str, on_message: api.MessageCallback) -> None:
        # its statistics say where a consumer that receives nothing is stuck (client_state)
        self._stats_json: str | None = None
        self._c = _Consumer({"statistics.interval.ms": STATS_INTERVAL_MS, **conf, "stats_cb": self._on_stats})
        self._topic = topic
        self._on_message = on_message
        self._on_batch: api.BatchCallback | None = None
        self._assigned = False
        self.errors = 0
        self._c.subscribe([topic], on_assign=self._on_assign)

    def receive_batches(self, on_batch: api.BatchCallback) -> bool:
        self._on_batch = on_batch
        return True

    def _on_assign(self, consumer: Any, partitions: Any) -> None:
        self._assigned = True

    def _on_stats(self, text: str) -> None:
        self._stats_json = text  # parsed when asked for

    def client_state(self) -> str | None:
        return consumer_state(json.loads(self._stats_json), self._topic) if self._stats_json else None

    def ready(self) -> bool:
        return self._assigned

    def poll(self, timeout_s: float) -> int:
        # consume(n, timeout) waits for n messages or the whole timeout: a lone message (a ping, a record at a
        # low fixed rate) would sit in the queue for the full timeout. So: take what is queued; if nothing is,
        # wait for the first message only, then take what came with it.
        msgs = self._c.consume(num_messages=1000, timeout=0)
        if not msgs and timeout_s > 0:
            first = self._c.poll(timeout_s)
            if first is not None:
                msgs = [first, *self._c.consume(num_messages=999, timeout=0)]
        if self._on_batch is not None and msgs:
            values = [m.value() or b"" for m in msgs if m.error() is None]
            if len(values) < len(msgs):
                self.errors += sum(1 for m in msgs if (e := m.error()) and e.code() != KafkaError._PARTITION_EOF)
            if values:
                self._on_batch(values)
            return len(values)
        n = 0
        cb = self._on_message
        for m in msgs:
            err = m.error()
            if err is None:
                cb(m.value() or b"")
                n += 1
            elif err.code() != KafkaError._PARTITION_EOF:
                self.errors += 1
        return n

    def pause(self) -> None:
        # librdkafka stops fetching the paused partitions and drops what it had fetched of them; resume()
        # fetches from the consumer's position, so nothing is skipped
        self._c.pause(self._c.assignment())

    def resume(self) -> None:
        self._c.resume(self._c.assignment())

    def close(self) -> None:
        self._c.close()


class KafkaDriver(api.Driver):
    name: ClassVar[str] = "kafka"
    library: ClassVar[str] = "confluent-kafka"
    holds_backlog: ClassVar[bool] = True
    full_buffer_backpressure: ClassVar[bool] = True
    local_server: ClassVar[str] = "testbed"
    partitioned: ClassVar[bool] = True

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self._admin: AdminClient | None = None

    @classmethod
    def client_info(cls) -> dict[str, str]:
        """confluent-kafka's version and the librdkafka it wraps (the library that moves the bytes)."""
        return {**super().client_info(), "librdkafka": confluent_kafka.libversion()[0]}

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({**self.common, "log_level": 0})
        return self._admin

    def _producer_conf(self, overrides: Mapping[str, str] | None) -> dict[str, Any]:
        return {**self.common, **HARNESS_PRODUCER, **translate(overrides or {})}

    def _consumer_conf(self, subscription: str, overrides: Mapping[str, str] | None) -> dict[str, Any]:
        base = {
            "group.id": subscription,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            **HARNESS_CONSUMER,
        }
        return {**self.common, **base, **translate(overrides or {})}

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        # librdkafka checks every key and value when a client is constructed; nothing is sent before
        # the first request, and the client is closed at once.
        for section, conf in (
            ("producerConfig", self._producer_conf(producer_config)),
            ("consumerConfig", self._consumer_conf("validate", consumer_config)),
        ):
            try:
                quiet = {**conf, "log_level": 0}  # no bootstrap warning from a client that never connects
                client: Any = _Producer(quiet) if section == "producerConfig" else _Consumer(quiet)
            except (KafkaException, ValueError, TypeError) as e:
                raise UserError(f"{section}: {_kafka_error_text(e)}") from e
            if section == "producerConfig":
                client.flush(0)
            else:
                client.close()

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        new = [
            NewTopic(
                t.name,
                num_partitions=t.partitions,
                replication_factor=t.replication_factor or -1,
                config=dict(t.config),
            )
            for t in topics
        ]
        futures = self.admin.create_topics(new, operation_timeout=30, request_timeout=30, validate_only=validate_only)
        for name, f in futures.items():
            try:
                f.result()
            except KafkaException as e:
                raise UserError(f"topic {name}: {_kafka_error_text(e)}") from e

    def delete_topics(self, names: Sequence[str]) -> None:
        if not names:
            return
        for f in self.admin.delete_topics(list(names), operation_timeout=30).values():
            # already gone, or the cluster is down: nothing left to clean
            with contextlib.suppress(KafkaException):
                f.result()

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return KafkaProducer(self._producer_conf(overrides), topic)

    def create_counting_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return KafkaProducer(self._producer_conf(overrides), topic, counting=True)

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return KafkaConsumer(self._consumer_conf(subscription, overrides), topic, on_message)

    def replay(self, topic: str, timeout_s: float = 60.0) -> Iterator[bytes] | None:
        """Every partition of `topic` from its first offset to its high watermark, read by a consumer of its own
        (assigned, no group commits): the log as the brokers hold it."""
        meta = self.admin.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return None
        c = _Consumer(
            {
                **self.common,
                "group.id": f"kt-verify-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
        return _replay(c, topic, sorted(meta.partitions), timeout_s)


def _replay(c: Any, topic: str, partitions: list[int], timeout_s: float) -> Iterator[bytes]:
    """The messages of `partitions` up to each one's high watermark (read now), then the consumer closed."""
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        todo = {p for p, end in ends.items() if end > 0}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.5):
                if m.error() is None:
                    yield m.value()
                    if m.offset() >= ends[m.partition()] - 1:
                        todo.discard(m.partition())
    finally:
        c.close()


def _kafka_error_text(e: Exception) -> str:
    if e.args and isinstance(e.args[0], KafkaError):
        return str(e.args[0].str())
    return str(e)
