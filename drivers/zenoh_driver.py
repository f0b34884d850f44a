"""Zenoh driver on eclipse-zenoh (1.x): brokered through a router (`mode: client`) or peer to peer.

Common keys: `bootstrap.servers` = the router's host:port (default 127.0.0.1:7447); `zenoh.mode` =
`client` (brokered: every message goes through the router) or `peer` (sessions connect to the router for
discovery, then to each other directly). Multicast scouting is off, so only the given router is used.
Producer keys: `congestion_control` BLOCK (lossless, default) | DROP; `reliability` reliable (default) |
best_effort. Zenoh acknowledges nothing: a put that returned is counted as delivered to the network,
and losses show up as acknowledged-but-never-consumed.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import zenoh

from core.errors import EnvironmentProblem, UserError
from drivers import api, handoff
from drivers.settings import key, settings

SUBSCRIBE_SETTLE_S = 1.0  # subscriptions propagate to the router asynchronously and are not acknowledged
MATCH_WAIT_S = 10.0


def _session(addr: str, mode: str) -> Any:
    cfg = zenoh.Config()
    cfg.insert_json5("mode", json.dumps(mode))
    cfg.insert_json5("connect/endpoints", json.dumps([f"tcp/{addr}"]))
    cfg.insert_json5("scouting/multicast/enabled", "false")
    if mode == "peer":
        cfg.insert_json5("listen/endpoints", json.dumps(["tcp/127.0.0.1:0"]))
    try:
        return zenoh.open(cfg)
    except Exception as e:  # zenoh raises its own ZError
        raise EnvironmentProblem(f"Zenoh router {addr} is not reachable ({mode} mode): {e}") from None


@dataclasses.dataclass(frozen=True)
class ProducerSettings:
    """A publisher's `congestion_control` (BLOCK waits for room, DROP drops) and `reliability`."""

    congestion_control: str = key("congestion_control", "BLOCK", choices=("BLOCK", "DROP"))
    reliability: str = key("reliability", "reliable", choices=("reliable", "best_effort"))

    @classmethod
    def of(cls, conf: Mapping[str, str]) -> ProducerSettings:
        return settings(cls, conf, "producerConfig", "Zenoh")


class ZenohProducer(api.Producer):
    def __init__(self, session: Any, topic: str, conf: ProducerSettings) -> None:
        cc = zenoh.CongestionControl.BLOCK if conf.congestion_control == "BLOCK" else zenoh.CongestionControl.DROP
        rel = zenoh.Reliability.RELIABLE if conf.reliability == "reliable" else zenoh.Reliability.BEST_EFFORT
        self.s = session
        self.pub = session.declare_publisher(topic, congestion_control=cc, reliability=rel)
        self.acks = handoff.SentOnReturn()
        # A put before the publisher knows of a subscriber goes nowhere (in peer mode the route to a
        # new peer is learnt through the router's gossip). Wait for a match, up to MATCH_WAIT_S: a
        # producer with no subscriber at all then sends into the void, as Zenoh does.
        end = time.monotonic() + MATCH_WAIT_S
        while not self.pub.matching_status.matching and time.monotonic() < end:
            time.sleep(0.05)

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        self.pub.put(payload)
        self.acks.sent(on_done, payload)

    def poll(self, timeout_s: float = 0.0) -> int:
        return self.acks.poll()

    def flush(self, timeout_s: float) -> int:
        self.poll()
        return 0

    def close(self) -> None:
        self.pub.undeclare()
        self.s.close()


class ZenohConsumer(api.Consumer):
    def __init__(self, session: Any, topic: str, on_message: api.MessageCallback) -> None:
        self.s = session
        self.on_message = on_message
        self.inbox = handoff.Inbox()
        put = self.inbox.put
        self.sub = session.declare_subscriber(topic, lambda sample: put(sample.payload.to_bytes()))
        self.t0 = time.monotonic()

    def poll(self, timeout_s: float) -> int:
        return self.inbox.drain(self.on_message, timeout_s)

    def ready(self) -> bool:
        return time.monotonic() - self.t0 >= SUBSCRIBE_SETTLE_S

    def close(self) -> None:
        self.sub.undeclare()
        self.s.close()


class ZenohDriver(api.Driver):
    name: ClassVar[str] = "zenoh"
    library: ClassVar[str] = "eclipse-zenoh"
    local_server: ClassVar[str] = "zenoh"

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self.addr = str(common.get("bootstrap.servers") or "127.0.0.1:7447").split(",")[0]
        self.mode = str(common.get("zenoh.mode", "client"))
        if self.mode not in ("client", "peer"):
            raise UserError(f"zenoh.mode must be client (brokered) or peer (got {self.mode!r})")

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        ProducerSettings.of(producer_config)
        if consumer_config:
            raise UserError(f"consumerConfig: Zenoh subscribers take no keys (got {', '.join(consumer_config)})")

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        return None  # key expressions need no creation; partitions are not a Zenoh concept

    def delete_topics(self, names: Sequence[str]) -> None:
        return None

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return ZenohProducer(_session(self.addr, self.mode), topic, ProducerSettings.of(overrides or {}))

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return ZenohConsumer(_session(self.addr, self.mode), topic, on_message)
