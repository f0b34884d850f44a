"""Pulsar driver on pulsar-client (the C++ client's Python binding), for a Pulsar standalone or cluster.

`bootstrap.servers` is the broker's binary address host:port (pulsar://, default 127.0.0.1:6650);
`pulsar.admin` (common) is the admin REST address host:port (default: the same host, port 8080), used to
create and delete partitioned topics. Topics live in public/default as persistent topics.

Producer keys: `batching` true|false (default true), `batching.max.publish.delay.ms` (default 1),
`batching.max.bytes` (default 131072), `max.pending.messages` (the local queue; full → BufferFull, default
10000), `compression` none|lz4|zstd|snappy|zlib, `chunking` true|false (messages over the broker's 5 MB limit).
Consumer keys: `receiver.queue.size` (default 1000), `type` shared|exclusive|failover|key_shared (default
shared: consumers of one subscription split the messages, as a Kafka group does).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pulsar

from core.errors import EnvironmentProblem, UserError
from drivers import api, handoff
from drivers.settings import key, settings


@dataclasses.dataclass(frozen=True)
class ProducerSettings:
    """A producer's Pulsar settings (the module's docstring says what each does)."""

    batching: bool = key("batching", True)
    batching_max_publish_delay_ms: int = key("batching.max.publish.delay.ms", 1)
    batching_max_bytes: int = key("batching.max.bytes", 131072)
    max_pending_messages: int = key("max.pending.messages", 10000)
    compression: str = key("compression", "none", choices=("none", "lz4", "zstd", "snappy", "zlib"))
    chunking: bool = key("chunking", False)

    @classmethod
    def of(cls, conf: Mapping[str, str]) -> ProducerSettings:
        return settings(cls, conf, "producerConfig", "Pulsar")


@dataclasses.dataclass(frozen=True)
class ConsumerSettings:
    receiver_queue_size: int = key("receiver.queue.size", 1000)
    type: str = key("type", "shared", choices=("shared", "exclusive", "failover", "key_shared"))

    @classmethod
    def of(cls, conf: Mapping[str, str]) -> ConsumerSettings:
        return settings(cls, conf, "consumerConfig", "Pulsar")


_COMPRESSION = {
    "none": pulsar.CompressionType.NONE,
    "lz4": pulsar.CompressionType.LZ4,
    "zstd": pulsar.CompressionType.ZSTD,
    "snappy": pulsar.CompressionType.SNAPPY,
    "zlib": pulsar.CompressionType.ZLib,
}
_TYPES = {
    "shared": pulsar.ConsumerType.Shared,
    "exclusive": pulsar.ConsumerType.Exclusive,
    "failover": pulsar.ConsumerType.Failover,
    "key_shared": pulsar.ConsumerType.KeyShared,
}
TENANT_NS = "public/default"


def _full(topic: str) -> str:
    return f"persistent://{TENANT_NS}/{topic}"


class PulsarProducer(api.Producer):
    def __init__(self, client: pulsar.Client, topic: str, conf: ProducerSettings) -> None:
        self.limit = conf.max_pending_messages
        try:
            self.p = client.create_producer(
                _full(topic),
                batching_enabled=conf.batching,
                batching_max_publish_delay_ms=conf.batching_max_publish_delay_ms,
                batching_max_allowed_size_in_bytes=conf.batching_max_bytes,
                batching_max_messages=100000,
                max_pending_messages=self.limit,
                # the C++ client gives each partition min(this, across / partitions): keep ours the only limit
                max_pending_messages_across_partitions=self.limit * 1024,
                block_if_queue_full=False,
                compression_type=_COMPRESSION[conf.compression],
                chunking_enabled=conf.chunking,
                send_timeout_millis=60000,
            )
        except pulsar.PulsarException as e:
            raise EnvironmentProblem(f"Pulsar producer on {topic}: {e}") from None
        self.done: collections.deque[handoff.Done] = collections.deque()
        self.lock = threading.Lock()
        self.inflight = 0

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        if self.inflight >= self.limit:
            raise api.BufferFull
        with self.lock:
            self.inflight += 1

        def cb(res: Any, msg_id: Any) -> None:  # the client's I/O thread
            with self.lock:
                self.inflight -= 1
            self.done.append((on_done, None if res == pulsar.Result.Ok else str(res), payload))

        try:
            if key is None:
                self.p.send_async(payload, cb)
            else:
                self.p.send_async(payload, cb, partition_key=key.decode("latin-1"))
        except pulsar.PulsarException as e:
            with self.lock:
                self.inflight -= 1
            self.done.append((on_done, str(e), payload))

    def poll(self, timeout_s: float = 0.0) -> int:
        return handoff.serve_done(self.done, timeout_s)

    def flush(self, timeout_s: float) -> int:
        end = time.monotonic() + timeout_s
        with contextlib.suppress(pulsar.PulsarException):
            self.p.flush()
        while True:
            self.poll()
            if not self.inflight or time.monotonic() > end:
                return self.inflight + len(self.done)
            time.sleep(0.005)

    def close(self) -> None:
        with contextlib.suppress(pulsar.PulsarException):
            self.p.close()


class PulsarConsumer(api.Consumer):
    def __init__(
        self,
        client: pulsar.Client,
        topic: str,
        subscription: str,
        on_message: api.MessageCallback,
        conf: ConsumerSettings,
    ) -> None:
        self.on_message = on_message
        self.errors = 0
        self.inbox = handoff.Inbox()
        self.pending_acks: collections.deque[Any] = collections.deque()
        put, acks = self.inbox.put, self.pending_acks.append

        def listener(consumer: Any, msg: Any) -> None:  # the client's listener thread
            acks(msg.message_id())
            put(msg.data())

        try:
            self.c = client.subscribe(
                _full(topic),
                subscription,
                consumer_type=_TYPES[conf.type],
                receiver_queue_size=conf.receiver_queue_size,
                initial_position=pulsar.InitialPosition.Latest,
                message_listener=listener,
            )
        except pulsar.PulsarException as e:
            raise EnvironmentProblem(f"Pulsar subscription {subscription} on {topic}: {e}") from None

    def poll(self, timeout_s: float) -> int:
        n = self.inbox.drain(self.on_message, timeout_s)
        ack, acks = self.c.acknowledge, self.pending_acks
        while acks:  # acknowledged once handed to the harness, as the Kafka driver commits after poll
            ack(acks.popleft())
        return n

    def ready(self) -> bool:
        return True  # subscribe() returned: the subscription exists and keeps every later message

    def close(self) -> None:
        with contextlib.suppress(pulsar.PulsarException):
            self.c.close()


class PulsarDriver(api.Driver):
    name: ClassVar[str] = "pulsar"
    library: ClassVar[str] = "pulsar-client"
    local_server: ClassVar[str] = "pulsar"
    partitioned: ClassVar[bool] = True

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self.addr = str(common.get("bootstrap.servers") or "127.0.0.1:6650").split(",")[0].removeprefix("pulsar://")
        host = self.addr.rpartition(":")[0] or "127.0.0.1"
        self.admin = "http://" + str(common.get("pulsar.admin") or f"{host}:8080").removeprefix("http://")
        self._client: pulsar.Client | None = None

    @property
    def client(self) -> pulsar.Client:
        if self._client is None:
            self._client = pulsar.Client(
                f"pulsar://{self.addr}",
                operation_timeout_seconds=30,
                connection_timeout_ms=10000,
                logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
            )
        return self._client

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        ProducerSettings.of(producer_config)
        ConsumerSettings.of(consumer_config)

    def _rest(self, method: str, path: str, body: Any = None) -> int:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.admin}/admin/v2/persistent/{TENANT_NS}/{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except OSError as e:
            raise EnvironmentProblem(f"Pulsar admin {self.admin} is not reachable: {e}") from None

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        for t in topics:
            if "/" in t.name:
                raise UserError(f"Pulsar topic {t.name!r}: use a short name; topics live in {TENANT_NS}")
            if t.config:
                raise UserError(f"Pulsar topic {t.name!r}: topicConfig is not supported (got {dict(t.config)})")
        if validate_only:
            return
        for t in topics:
            if t.partitions > 1:
                code = self._rest("PUT", f"{t.name}/partitions", t.partitions)
            else:
                code = self._rest("PUT", t.name)
            if code not in (204, 200, 409):
                raise EnvironmentProblem(f"Pulsar admin: creating topic {t.name} returned HTTP {code}")

    def delete_topics(self, names: Sequence[str]) -> None:
        for n in names:
            if self._rest("DELETE", f"{n}/partitions?force=true") == 404:
                self._rest("DELETE", f"{n}?force=true")

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return PulsarProducer(self.client, topic, ProducerSettings.of(overrides or {}))

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return PulsarConsumer(self.client, topic, subscription, on_message, ConsumerSettings.of(overrides or {}))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
