"""DDS driver on Eclipse Cyclone DDS (the `cyclonedds` wheel bundles the C library).

Common keys: `dds.domain` (domain id, default 0). Discovery is pinned to the loopback interface with
unicast peers (127.0.0.1), so runs stay on this host and need no multicast. Producer and consumer keys:
`reliability` RELIABLE (default) | BEST_EFFORT, `history` KEEP_ALL (default) | KEEP_LAST, `depth` (KEEP_LAST
depth, default 1). A write that returned counts as sent; `flush` waits for the readers' acknowledgements
(reliable). Payloads travel as `sequence<uint8>` (a `bytes` field fails in the Python binding), written
and read as one block of bytes (`ByteSequence`) instead of the binding's one Python int per byte.
"""

# No `from __future__ import annotations` here: Cyclone's IDL types are resolved from real annotations.
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from cyclonedds.idl import IdlStruct
from cyclonedds.idl._machinery import PlainCdrV2SequenceOfPrimitiveMachine
from cyclonedds.idl.types import sequence, uint8

from drivers import api, handoff
from drivers.settings import key, settings

if TYPE_CHECKING:
    from cyclonedds.topic import Topic

MATCH_WAIT_S = 10.0
TAKE_N = 256  # samples per take(): what one take materialises (256 MiB at 1 MiB payloads)
LOOPBACK = (
    "<CycloneDDS><Domain id='any'><General><Interfaces><NetworkInterface name='lo'/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>200</MaxAutoParticipantIndex><Peers><Peer address='127.0.0.1'/></Peers>"
    "</Discovery></Domain></CycloneDDS>"
)


@dataclass
class KtMessage(IdlStruct, typename="kafkatune.Message"):
    data: sequence[uint8]  # type: ignore[type-arg]


class ByteSequence(PlainCdrV2SequenceOfPrimitiveMachine):
    """`sequence<uint8>` in the same CDR as the binding's own machine (a 4-aligned uint32 length, then the
    octets), copied as one block: the binding packs and unpacks one Python int per byte, which made a
    1 MiB sample cost 55 ms to write and 27 ms to read (bench/dds_codec.py), so one DDS process carried
    ~18 such messages/s. Reads return `bytes`."""

    def serialize(self, buffer: Any, value: bytes, *args: Any, **kwargs: Any) -> None:
        buffer.align(4)
        buffer.write("I", 4, len(value))
        buffer.write_bytes(value)

    def deserialize(self, buffer: Any, *args: Any, **kwargs: Any) -> bytes:
        buffer.align(4)
        return buffer.read_bytes(buffer.read("I", 4))


def use_byte_sequence(cls: type[IdlStruct], field: str = "data") -> None:
    """Make `cls.field`, a `sequence<uint8>`, go through ByteSequence in XCDR1 and XCDR2. The type and its
    type information (what other DDS participants match on) are unchanged."""
    idl = cls.__idl__
    idl.populate()
    for version in ("v1_machine", "v2_machine"):
        members = getattr(getattr(idl, version, None), "members_machines", None)
        current = members.get(field) if isinstance(members, dict) else None
        if (
            not isinstance(members, dict)
            or not isinstance(current, PlainCdrV2SequenceOfPrimitiveMachine)
            or current.code != "B"
        ):
            raise RuntimeError(
                f"cyclonedds: {cls.__name__}.{field} ({version}) is not the sequence<uint8> machine this "
                f"driver replaces (found {type(current).__name__}); the binding's internals changed"
            )
        if not isinstance(current, ByteSequence):
            members[field] = ByteSequence(uint8)


use_byte_sequence(KtMessage)


@dataclass(frozen=True)
class Settings:
    """A writer's or reader's DDS QoS: `reliability` RELIABLE|BEST_EFFORT, `history` KEEP_ALL|KEEP_LAST and the
    KEEP_LAST `depth`."""

    reliability: str = key("reliability", "RELIABLE", choices=("RELIABLE", "BEST_EFFORT"))
    history: str = key("history", "KEEP_ALL", choices=("KEEP_ALL", "KEEP_LAST"))
    depth: int = key("depth", 1)

    @classmethod
    def of(cls, conf: Mapping[str, str], where: str) -> "Settings":
        return settings(cls, conf, where, "DDS")


def _qos(conf: Settings) -> Any:
    from cyclonedds.core import Policy, Qos
    from cyclonedds.util import duration

    rel = (
        Policy.Reliability.Reliable(max_blocking_time=duration(seconds=10))
        if conf.reliability == "RELIABLE"
        else Policy.Reliability.BestEffort
    )
    hist = Policy.History.KeepAll if conf.history == "KEEP_ALL" else Policy.History.KeepLast(conf.depth)
    return Qos(rel, hist)


class DdsProducer(api.Producer):
    def __init__(self, drv: "DdsDriver", topic: str, conf: Settings) -> None:
        from cyclonedds.pub import DataWriter

        self.msg = drv.msg
        self.w = DataWriter(drv.participant, drv.topic(topic), qos=_qos(conf))
        self.reliable = conf.reliability == "RELIABLE"
        self.acks = handoff.SentOnReturn()
        end = time.monotonic() + MATCH_WAIT_S  # discovery: a write before a reader matched reaches no one
        while self.w.get_publication_matched_status().current_count == 0 and time.monotonic() < end:
            time.sleep(0.02)

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        self.w.write(self.msg(data=payload))  # type: ignore[arg-type]
        self.acks.sent(on_done, payload)

    def poll(self, timeout_s: float = 0.0) -> int:
        return self.acks.poll()

    def flush(self, timeout_s: float) -> int:
        from cyclonedds.util import duration

        self.poll()
        if self.reliable:
            self.w.wait_for_acks(duration(seconds=timeout_s))
        return 0

    def close(self) -> None:
        return None  # Cyclone entities are deleted with their participant (DdsDriver.close)


class DdsConsumer(api.Consumer):
    def __init__(self, drv: "DdsDriver", topic: str, on_message: api.MessageCallback, conf: Settings) -> None:
        from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState, WaitSet
        from cyclonedds.sub import DataReader

        self.on_message = on_message
        self.pending = handoff.Inbox()
        self.r = DataReader(drv.participant, drv.topic(topic), qos=_qos(conf))
        # a waitset on "any sample": poll wakes when data arrives, not after a fixed sleep
        self.ws = WaitSet(drv.participant)
        self.ws.attach(ReadCondition(self.r, SampleState.Any | ViewState.Any | InstanceState.Any))

    def poll(self, timeout_s: float) -> int:
        # Samples taken from the reader wait in `pending` and are handed over within the poll budget.
        q = self.pending.q
        end = time.monotonic() + timeout_s
        while not q:
            for s in self.r.take(N=TAKE_N):
                data = getattr(s, "data", None)  # an InvalidSample (a writer went away) carries no data
                if data is not None:
                    q.append(data)  # bytes (ByteSequence)
            left = end - time.monotonic()
            if q or left <= 0:
                break
            self.ws.wait(int(left * 1e9))
        return self.pending.drain(self.on_message, 0)

    def ready(self) -> bool:
        return True  # a reader matches every writer created after it; writers wait for that match

    def close(self) -> None:
        return None


class DdsDriver(api.Driver):
    name: ClassVar[str] = "dds"
    library: ClassVar[str] = "cyclonedds"

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        os.environ.setdefault("CYCLONEDDS_URI", LOOPBACK)
        from cyclonedds.domain import DomainParticipant

        self.msg = KtMessage
        self.participant = DomainParticipant(int(common.get("dds.domain", "0")))
        self._topics: dict[str, Topic] = {}

    def topic(self, name: str) -> Any:
        from cyclonedds.topic import Topic

        safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
        if safe not in self._topics:
            self._topics[safe] = Topic(self.participant, safe, self.msg)
        return self._topics[safe]

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        Settings.of(producer_config, "producerConfig")
        Settings.of(consumer_config, "consumerConfig")

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        return None  # topics are declared by the writers and readers; no partitions in DDS

    def delete_topics(self, names: Sequence[str]) -> None:
        return None

    def close(self) -> None:
        self._topics.clear()
        del self.participant  # deletes the participant and every writer, reader and topic under it

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return DdsProducer(self, topic, Settings.of(overrides or {}, "producerConfig"))

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return DdsConsumer(self, topic, on_message, Settings.of(overrides or {}, "consumerConfig"))
