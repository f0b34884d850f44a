"""MQTT driver on paho-mqtt (2.x), for Mosquitto or any MQTT 3.1.1 broker.

Config keys (producer/consumer overrides, all optional): `qos` 0|1|2 (default 1), `max.inflight`
(paho's in-flight window for QoS > 0, default 100), `max.queued` (the local queue, every QoS; full → BufferFull,
default 100000), `buffer.memory` (bytes of payload in that queue, as the Kafka client's; default 32 MiB).
`bootstrap.servers` is the broker's host:port. MQTT has no partitions: a topic is a
topic name, and `partitions` is not applicable (reported, not faked).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import paho.mqtt.client as mqtt

from core.errors import EnvironmentProblem, UserError
from drivers import api, handoff
from drivers.settings import key, settings

MAX_INFLIGHT = 100
BUFFER_MEMORY = 32 * 1024 * 1024  # the Kafka Java client's buffer.memory default
_ids = itertools.count()


@dataclasses.dataclass(frozen=True)
class Settings:
    """A producer's or consumer's MQTT settings (the module's docstring says what each does)."""

    qos: int = key("qos", 1, choices=("0", "1", "2"))
    max_inflight: int = key("max.inflight", MAX_INFLIGHT)
    max_queued: int = key("max.queued", 100000)
    buffer_memory: int = key("buffer.memory", BUFFER_MEMORY)

    @classmethod
    def of(cls, conf: Mapping[str, str], where: str) -> Settings:
        return settings(cls, conf, where, "MQTT")


def _client_id(tag: str) -> str:
    """Unique per connection: a broker drops the older session of a reused id, and with it its messages. Not
    from id() or a counter alone: workers forked from one fork server share both (loadgen.channel)."""
    return f"kt-{tag}-{next(_ids)}-{uuid.uuid4().hex[:12]}"


def _client(addr: str, tag: str, inflight: int = MAX_INFLIGHT, queued: int = 0) -> mqtt.Client:
    host, _, port = addr.rpartition(":")
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=_client_id(tag))
    c.max_inflight_messages_set(inflight)  # paho allows these only before the connection
    c.max_queued_messages_set(queued)
    try:
        c.connect(host or "127.0.0.1", int(port or 1883), keepalive=60)
    except OSError as e:
        raise EnvironmentProblem(f"MQTT broker {addr} is not reachable: {e}") from None
    return c


def _close(c: mqtt.Client) -> None:
    # DISCONNECT first: it wakes the network thread, which then sends it and returns. loop_stop() first
    # waits out the thread's 1 s select() and leaves the broker an abrupt close instead.
    c.disconnect()
    c.loop_stop()


class MqttProducer(api.Producer):
    def __init__(self, addr: str, topic: str, conf: Settings) -> None:
        self.qos = conf.qos
        self.topic = topic
        self.max_queued = conf.max_queued
        # A bound in bytes too: 100,000 queued messages of 32 KiB are 3 GiB in paho's queue.
        self.buffer_memory = conf.buffer_memory
        self.buffered = 0  # payload bytes published and not yet acknowledged
        # paho walks its whole in-flight window on every acknowledgement (`_update_inflight`): a window of
        # 100 delivered 1.5x what 1000 did at 64 B to 16 KiB QoS 1 here, and 20 no more than 100.
        self.c = _client(addr, "p", conf.max_inflight, self.max_queued)
        self.pending: dict[int, tuple[api.DeliveryCallback, bytes]] = {}
        self.early: set[int] = set()
        self.done: collections.deque[handoff.Done] = collections.deque()
        self.lock = threading.Lock()
        self.c.on_publish = self._on_publish
        self.c.loop_start()

    def _on_publish(self, client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        # paho's network thread, holding paho's own lock: take ours briefly, never call into paho here
        with self.lock:
            item = self.pending.pop(mid, None)
            if item is None:
                self.early.add(mid)  # acknowledged before send() recorded the mid
                return
            self.buffered -= len(item[1])
        self.done.append((item[0], None, item[1]))

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        # paho bounds its queue for QoS 1 and 2 only; a QoS 0 message waits, unbounded, until paho's thread
        # writes it (on_publish then). The bound holds here for every QoS.
        if self.pending and (
            len(self.pending) >= self.max_queued or self.buffered + len(payload) > self.buffer_memory
        ):  # one message always fits when nothing is queued, as in the Kafka client
            raise api.BufferFull
        info = self.c.publish(self.topic, payload, qos=self.qos)  # never under self.lock (paho locks too)
        if info.rc == mqtt.MQTT_ERR_QUEUE_SIZE:
            raise api.BufferFull
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
            self.done.append((on_done, mqtt.error_string(info.rc), payload))
            return
        with self.lock:
            if info.mid in self.early:
                self.early.discard(info.mid)
                acked = True
            else:
                self.pending[info.mid] = (on_done, payload)
                self.buffered += len(payload)
                acked = False
        if acked:
            self.done.append((on_done, None, payload))

    def poll(self, timeout_s: float = 0.0) -> int:
        return handoff.serve_done(self.done, timeout_s)

    def flush(self, timeout_s: float) -> int:
        end = time.monotonic() + timeout_s
        while True:
            self.poll()
            with self.lock:
                left = len(self.pending)
            if not left or time.monotonic() > end:
                return left + len(self.done)
            time.sleep(0.005)

    def close(self) -> None:
        _close(self.c)


class MqttConsumer(api.Consumer):
    def __init__(
        self, addr: str, topic: str, subscription: str, on_message: api.MessageCallback, conf: Settings
    ) -> None:
        self.on_message = on_message
        self.inbox = handoff.Inbox()
        self.subscribed = threading.Event()
        self.c = _client(addr, "c")
        put = self.inbox.put
        self.c.on_message = lambda c, u, m: put(bytes(m.payload))
        self.c.on_subscribe = lambda c, u, mid, rcs, props: self.subscribed.set()
        self.c.loop_start()
        # a shared subscription: consumers of one subscription split the messages, as a Kafka group does
        self.c.subscribe(f"$share/{subscription}/{topic}", qos=conf.qos)

    def poll(self, timeout_s: float) -> int:
        return self.inbox.drain(self.on_message, timeout_s)

    def ready(self) -> bool:
        return self.subscribed.is_set()  # SUBACK received: every later publish is delivered

    def close(self) -> None:
        _close(self.c)


class MqttDriver(api.Driver):
    name: ClassVar[str] = "mqtt"
    library: ClassVar[str] = "paho-mqtt"
    local_server: ClassVar[str] = "mosquitto"

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self.addr = str(common.get("bootstrap.servers") or "127.0.0.1:1883").split(",")[0]

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        Settings.of(producer_config, "producerConfig")
        Settings.of(consumer_config, "consumerConfig")

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        for t in topics:
            if any(ch in t.name for ch in "+#"):
                raise UserError(f"MQTT topic {t.name!r}: wildcards + and # are not allowed in a publish topic")
        # MQTT topics exist when used; partitions and replication are not MQTT concepts.

    def delete_topics(self, names: Sequence[str]) -> None:
        return None

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return MqttProducer(self.addr, topic, Settings.of(overrides or {}, "producerConfig"))

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return MqttConsumer(self.addr, topic, subscription, on_message, Settings.of(overrides or {}, "consumerConfig"))
