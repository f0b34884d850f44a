"""Session-scoped real servers: one 3-node testbed shared by every test that needs Kafka."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import procs, reaper
from records.testbed import TestbedState
from testbed import dist
from testbed.lifecycle import Testbed

# Below Linux's ephemeral range (32768-60999): at 39090 an outgoing connection's local port once took 39092
# while the testbed started, and node 2 failed with "Address already in use" (every Kafka test then errored).
TEST_BASE_PORT = int(os.environ.get("KAFKATUNE_TEST_BASE_PORT", "24090"))
# The suite's brokers compile with C1 only. Under load the default tiered compiler takes 0.5-0.9 core per broker for
# minutes after every start and restart (docs/measurement.md), on a machine of 2 cores; C1 is quiet within a minute.
# No test asserts a rate; the product's testbeds keep the default (benchmarks/broker_jvm.py measures both).
SUITE_JVM = ("-XX:TieredStopAtLevel=1",)
SUITE_HEAP = "768m"  # the heap of each of the suite's loopback brokers (-Xms and -Xmx)


# Fixtures that start a real server (brokers, Mosquitto, Zenoh, Pulsar, PostgreSQL, Spark's JVM, sshd): a test that
# uses one, directly or through another, is marked `server`; one on the shaped testbed `shaped` too.
SERVER_FIXTURES = {
    "testbed",
    "healthy",
    "postgres_url",
    "spark",
    "servers",
    "pulsar",
    "sshd",
    "shaped",
    "tuned",
    "remote_inventory",
    "standalone",
    "kafka_dist",
}
SHAPED_FIXTURES = {"shaped", "tuned", "remote_inventory"}
# The servers a second pytest process can start beside this one: a local Spark session binds no fixed port, and a
# Spark standalone cluster takes free ones and times nothing. A test with any other server (the testbed's fixed
# ports, namespaces, sshd, Mosquitto…), on the shaped testbed or marked `timing` is `serial`: `make test` runs those
# in one process, the rest beside it (tests/lanes.py).
PRIVATE_SERVERS = {"spark", "standalone"}


def pytest_configure(config: pytest.Config) -> None:
    """Every server this run starts (brokers, Mosquitto, Zenoh, Pulsar, PostgreSQL, sshd) dies with it, even
    when the run is killed and no fixture teardown runs (core.reaper)."""
    reaper.watch()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`server`, `shaped` and `serial` from the fixtures each test uses (a test that starts one itself says so with
    the marker): `make test-fast` runs the tests that touch no server."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if used & SHAPED_FIXTURES:
            item.add_marker(pytest.mark.shaped)
        servers = used & SERVER_FIXTURES
        private = bool(servers) and servers <= PRIVATE_SERVERS  # a marker without a fixture: a server of its own
        if (item.get_closest_marker("server") and not private) or item.get_closest_marker("timing"):
            item.add_marker(pytest.mark.serial)


@pytest.fixture(autouse=True)
def _no_server_in_a_fast_test(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `make test-fast` (KAFKATUNE_TEST_FAST=1), a test not marked `server` fails if it connects a socket
    anywhere or starts a Java process: it would need a server it does not say it needs."""
    if os.environ.get("KAFKATUNE_TEST_FAST") != "1" or request.node.get_closest_marker("server"):
        return
    import socket
    import subprocess

    def no_connect(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a fast test connected to {address}: mark it server (or use a server fixture)")

    real_popen = subprocess.Popen.__init__

    def no_java(self: subprocess.Popen[bytes], args: object, *a: object, **kw: object) -> None:
        if "java" in str(args):
            raise AssertionError(f"a fast test started Java ({args}): mark it server")
        real_popen(self, args, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    monkeypatch.setattr(subprocess.Popen, "__init__", no_java)


@pytest.fixture(scope="session")
def kafka_dist() -> dist.KafkaDist:
    return dist.install()


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory, kafka_dist: dist.KafkaDist) -> Iterator[Testbed]:
    tb = Testbed(
        tmp_path_factory.mktemp("testbed"), kafka_dist, base_port=TEST_BASE_PORT, heap=SUITE_HEAP, jvm_extra=SUITE_JVM
    )
    tb.down(wipe=True, progress=lambda m: None)
    tb.state_dir.mkdir(parents=True, exist_ok=True)
    tb.up(progress=print, security="sasl_ssl")  # a SASL_SSL client listener beside PLAINTEXT (test_security)
    from loadgen.warmup import warm_up

    # 20 s of load before the first test; what the brokers still compile after it (SUITE_JVM), the first tests pay
    # for: with 40 s the serial lane took as long (docs/design.md, the suite's lanes)
    warm_up(tb.state().bootstrap_servers, float(os.environ.get("KAFKATUNE_TEST_WARMUP_S", "20")))
    yield tb
    tb.down(wipe=True, progress=print)


def ensure_healthy(testbed: Testbed) -> TestbedState:
    """The testbed with all nodes up and every partition in sync (a previous test may have killed one)."""
    testbed.up(progress=print)
    from cluster import admin

    admin.wait_full_isr(admin.admin_client(testbed.state().bootstrap_servers), timeout_s=180)
    return testbed.state()


@pytest.fixture()
def healthy(testbed: Testbed) -> TestbedState:
    """The testbed with all nodes up and every partition in sync (a previous test may have killed one)."""
    return ensure_healthy(testbed)


@pytest.fixture()
def unique() -> str:
    return uuid.uuid4().hex[:8]


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server (Debian's package) in a temporary folder, trust auth on 127.0.0.1, without fsync."""
    import shutil
    import subprocess
    import tempfile

    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not bins:
        pytest.fail("PostgreSQL is not installed: `make deps` installs Debian's postgresql package")
    bindir = bins[-1].parent
    root = Path(tempfile.mkdtemp(prefix="kt-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = procs.free_port()
    data = root / "data"

    def run(*cmd: str) -> None:
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, timeout=120)

    # A throwaway database: no fsync at init or after (PostgreSQL's own test runs do the same), so its start does
    # not queue behind the brokers' writes on the shared disk
    run(str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "kt", "-E", "UTF8", "--no-sync")
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off"
    run(str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "server.log"), "-w", "-t", "60", "start")
    try:
        run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "kt", "kafkatune")
        yield f"postgresql://kt@127.0.0.1:{port}/kafkatune"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local Spark session for the whole run (a session start costs ~10 s here)."""
    from spark.session import session

    s = session("local[2]", app="kafkatune-tests", driver_memory="2g")
    yield s
    s.stop()


free_port = procs.free_port


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, dict[str, str]]]:
    """Mosquitto and a Zenoh router on free ports, started through the same code as `kafkatune servers`."""
    from testbed.servers import Servers

    sv = Servers(tmp_path_factory.mktemp("servers"))
    addrs = {}
    try:
        for system in ("mosquitto", "zenoh"):
            addrs[system] = sv.up(system, port=free_port(), progress=print).address
        yield sv, addrs
    finally:
        for system in ("mosquitto", "zenoh"):
            sv.down(system, progress=print)


@pytest.fixture(scope="session")
def pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A Pulsar standalone (jars from Maven, like Kafka's) on a free port; the Pulsar driver's common config."""
    from testbed.servers import Servers

    sv = Servers(tmp_path_factory.mktemp("pulsar"))
    try:
        yield sv.up("pulsar", port=free_port(), progress=print).common()
    finally:  # killed: its data is thrown away, and a clean shutdown waits seconds for its ledgers
        sv.down("pulsar", progress=print, timeout_s=0)
