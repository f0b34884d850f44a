"""Every driver passes the shared conformance suite (drivers/testing.py) against its real server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from drivers import api
from drivers.testing import DriverConformance
from records.testbed import TestbedState
from testbed.servers import Servers
from tests.conftest import free_port as _port
from tests.helpers import kafkatune

# every poll, send and arrival has a wall-clock budget: run where the CPU comes when asked (tests/lanes.py)
pytestmark = pytest.mark.timing


def _driver(name: str, common: dict[str, str]) -> Iterator[api.Driver]:
    d = api.load_driver(name)(common)
    yield d
    d.close()


class TestKafka(DriverConformance):
    small_buffer: ClassVar[dict[str, str] | None] = {"queue.buffering.max.messages": "2"}

    @pytest.fixture()
    def driver(self, healthy: TestbedState) -> Iterator[api.Driver]:
        yield from _driver("kafka", {"bootstrap.servers": healthy.bootstrap_servers})


class TestKafkaPython(DriverConformance):
    producer_overrides: ClassVar[dict[str, str]] = {"acks": "all", "linger.ms": "5"}
    consumer_overrides: ClassVar[dict[str, str]] = {"fetch.max.wait.ms": "100"}
    small_buffer: ClassVar[dict[str, str] | None] = {"buffer.memory": "32768"}

    @pytest.fixture()
    def driver(self, healthy: TestbedState) -> Iterator[api.Driver]:
        yield from _driver("kafka-python", {"bootstrap.servers": healthy.bootstrap_servers})


class TestMqttQos1(DriverConformance):
    backlog_messages = 5000  # QoS 1/2 publish at a few thousand msg/s here: a backlog of 5,000 takes ~1 s
    producer_overrides: ClassVar[dict[str, str]] = {"qos": "1"}
    small_buffer: ClassVar[dict[str, str] | None] = {"max.inflight": "1", "max.queued": "2"}
    consumer_overrides: ClassVar[dict[str, str]] = {"qos": "1"}

    @pytest.fixture()
    def driver(self, servers: tuple[Servers, dict[str, str]]) -> Iterator[api.Driver]:
        yield from _driver("mqtt", {"bootstrap.servers": servers[1]["mosquitto"]})


class TestMqttQos2(TestMqttQos1):
    producer_overrides: ClassVar[dict[str, str]] = {"qos": "2"}
    consumer_overrides: ClassVar[dict[str, str]] = {"qos": "2"}
    n_messages = 500


class TestMqttBufferMemory(TestMqttQos1):
    """The bound in bytes alone (max.queued left at its 100,000 messages) fills the local queue."""

    small_buffer: ClassVar[dict[str, str] | None] = {"buffer.memory": "32768"}


class TestMqttQos0(TestMqttQos1):
    # at most once: nothing is acknowledged by the broker, yet on an idle loopback nothing is dropped
    producer_overrides: ClassVar[dict[str, str]] = {"qos": "0"}
    consumer_overrides: ClassVar[dict[str, str]] = {"qos": "0"}
    n_messages = 500


class TestPulsar(DriverConformance):
    producer_overrides: ClassVar[dict[str, str]] = {"batching": "true", "batching.max.publish.delay.ms": "1"}
    small_buffer: ClassVar[dict[str, str] | None] = {"batching": "false", "max.pending.messages": "2"}

    @pytest.fixture()
    def driver(self, pulsar: dict[str, str]) -> Iterator[api.Driver]:
        yield from _driver("pulsar", pulsar)


class TestPulsarPartitioned(DriverConformance):
    """A 6-partition topic, no batching: the per-partition queues and the admin REST path."""

    producer_overrides: ClassVar[dict[str, str]] = {"batching": "false", "max.pending.messages": "100"}
    partitions = 6
    n_messages = 1000

    @pytest.fixture()
    def driver(self, pulsar: dict[str, str]) -> Iterator[api.Driver]:
        yield from _driver("pulsar", pulsar)


@pytest.mark.server  # the baseline's own TCP server, in the test
class TestTcpBaseline(DriverConformance):
    """The raw-socket baseline `compare` measures the harness's own ceiling with."""

    @pytest.fixture()
    def driver(self, tmp_path: Path) -> Iterator[api.Driver]:
        yield from _driver("tcp", {"tcp.dir": str(tmp_path / "tcp")})


class TestZenohBrokered(DriverConformance):
    producer_overrides: ClassVar[dict[str, str]] = {"congestion_control": "BLOCK"}

    @pytest.fixture()
    def driver(self, servers: tuple[Servers, dict[str, str]]) -> Iterator[api.Driver]:
        yield from _driver("zenoh", {"bootstrap.servers": servers[1]["zenoh"], "zenoh.mode": "client"})


@pytest.fixture(scope="module")
def peer_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Its own router: peers that follow brokered sessions on one router stalled here (gossip about
    # closed sessions); a fresh router per mode keeps the two modes' measurements apart as well.
    sv = Servers(tmp_path_factory.mktemp("zenoh-peer"))
    try:
        yield sv.up("zenoh", port=_port(), progress=print).address
    finally:
        sv.down("zenoh", progress=print)


class TestZenohPeer(TestZenohBrokered):
    @pytest.fixture()
    def driver(self, peer_router: str) -> Iterator[api.Driver]:
        yield from _driver("zenoh", {"bootstrap.servers": peer_router, "zenoh.mode": "peer"})


class TestDdsReliableKeepAll(DriverConformance):
    producer_overrides: ClassVar[dict[str, str]] = {"reliability": "RELIABLE", "history": "KEEP_ALL"}
    consumer_overrides: ClassVar[dict[str, str]] = {"reliability": "RELIABLE", "history": "KEEP_ALL"}

    @pytest.fixture()
    def driver(self) -> Iterator[api.Driver]:
        # a domain of its own, so another DDS run on this host cannot join the test's topics
        yield from _driver("dds", {"dds.domain": str(100 + os.getpid() % 100)})


def test_servers_cli_up_status_down(tmp_path: Path) -> None:
    env = {"KAFKATUNE_HOME": str(tmp_path)}
    port = str(_port())
    up = kafkatune("servers", "up", "mosquitto", "--port", port, env=env)
    assert up.returncode == 0, up.stderr
    try:
        st = kafkatune("servers", "status", "--json", env=env)
        import json

        rows = {r["system"]: r for r in json.loads(st.stdout)}
        assert rows["mosquitto"]["running"] and rows["mosquitto"]["ready"]
        assert rows["mosquitto"]["address"] == f"127.0.0.1:{port}"
        assert not rows["zenoh"]["running"]
        again = kafkatune("servers", "up", "mosquitto", "--port", port, env=env)
        assert again.returncode == 0 and "already running" in again.stderr
    finally:
        down = kafkatune("servers", "down", "mosquitto", env=env)
    assert down.returncode == 0 and "stopped" in down.stderr
    st = kafkatune("servers", "status", "--json", env=env)
    import json

    assert not {r["system"]: r for r in json.loads(st.stdout)}["mosquitto"]["running"]
    bad = kafkatune("servers", "up", "nosuch", env=env)
    assert bad.returncode == 2 and "nosuch" in bad.stderr
