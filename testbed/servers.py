"""The servers the other messaging systems need, started and stopped by `kafkatune servers`.

- mosquitto: Debian's Mosquitto with our own config file, listening on 127.0.0.1 only (no systemd).
- zenoh: a Zenoh router, a Python session in `mode: router` (`python -m testbed.zenoh_router`), TCP on
  127.0.0.1, multicast scouting off.
- pulsar: Apache Pulsar standalone (broker + one in-process BookKeeper bookie + RocksDB metadata), its
  jars assembled from Maven Central with `testbed/pulsar/pom.xml` like Kafka's; Java 17; data wiped
  at each start. The binary protocol on the given port (default 6650), the admin REST API on a second one.

Each server has a folder (<root>/<system>/) with its config, log and a state file (pid, port). `up` waits
until the server accepts a protocol-level connection, not just a TCP one; `down` stops it (SIGTERM, then
SIGKILL after a timeout).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from core import paths, procs
from core.errors import EnvironmentProblem, UserError
from core.java import java_home
from testbed.dist import maven_install, maven_installed

Progress = Callable[[str], None]
SYSTEMS = ("mosquitto", "zenoh", "pulsar")
DEFAULT_PORTS = {"mosquitto": 1883, "zenoh": 7447, "pulsar": 6650}
PULSAR_POM = Path(__file__).with_name("pulsar") / "pom.xml"
START_TIMEOUT_S = {"mosquitto": 60.0, "zenoh": 60.0, "pulsar": 180.0}


def pulsar_version() -> str:
    m = re.search(r"<pulsar.version>([^<]+)<", PULSAR_POM.read_text())
    assert m, f"{PULSAR_POM} has no <pulsar.version>"
    return m.group(1)


def pulsar_root(cache: Path | None = None) -> Path:
    return (cache or paths.cache_dir()) / f"pulsar-{pulsar_version()}"


def install_pulsar(cache: Path | None = None, progress: Progress = print) -> Path:
    """The Pulsar jars in the cache (fetched once with Maven, ~235 MB); idempotent and offline once there."""
    root = pulsar_root(cache)
    if not maven_installed(PULSAR_POM, root):
        progress(f"pulsar: fetching Apache Pulsar {pulsar_version()} jars with Maven into {root} (once)")
        maven_install(PULSAR_POM, root, f"Pulsar {pulsar_version()}")
    return root


@dataclass(frozen=True)
class ServerStatus:
    """One system's server as `kafkatune servers status` shows it (`--json`: these fields)."""

    system: str
    running: bool
    address: str | None
    pid: int | None
    ready: bool


@dataclass
class ServerState:
    system: str
    pid: int
    port: int
    address: str  # what a driver's `bootstrap.servers` takes
    started: float
    admin: str | None = None  # Pulsar: the admin REST address (the driver's `pulsar.admin`)

    def common(self) -> dict[str, str]:
        """The driver's common config that points it at this server."""
        c = {"bootstrap.servers": self.address}
        if self.admin:
            c["pulsar.admin"] = self.admin
        return c


class Servers:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def dir(self, system: str) -> Path:
        if system not in SYSTEMS:
            raise UserError(f"servers: unknown system {system!r}; known: {', '.join(SYSTEMS)}")
        return self.root / system

    def state(self, system: str) -> ServerState | None:
        p = self.dir(system) / "state.json"
        if not p.exists():
            return None
        return ServerState(**json.loads(p.read_text()))

    def alive(self, system: str) -> ServerState | None:
        st = self.state(system)
        if st is None:
            return None
        try:
            proc = psutil.Process(st.pid)
            if proc.status() == psutil.STATUS_ZOMBIE or abs(proc.create_time() - st.started) > 2:
                return None
        except psutil.NoSuchProcess:
            return None
        return st

    # ---- up ----------------------------------------------------------------------------------------
    def up(
        self, system: str, port: int | None = None, progress: Progress = print, timeout_s: float | None = None
    ) -> ServerState:
        st = self.alive(system)
        if st is not None:
            progress(f"{system} already running on {st.address} (pid {st.pid})")
            return st
        port = port or DEFAULT_PORTS[system]
        if not procs.port_free(port):
            raise EnvironmentProblem(f"{system}: port {port} on 127.0.0.1 is taken; pass --port")
        timeout_s = timeout_s or START_TIMEOUT_S[system]
        d = self.dir(system)
        d.mkdir(parents=True, exist_ok=True)
        admin_port = procs.free_port() if system == "pulsar" else None
        cmd = self._command(system, d, port, admin_port, progress)
        log = (d / "server.log").open("ab")
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=d
        )
        st = ServerState(
            system,
            proc.pid,
            port,
            f"127.0.0.1:{port}",
            psutil.Process(proc.pid).create_time(),
            f"127.0.0.1:{admin_port}" if admin_port else None,
        )
        (d / "state.json").write_text(json.dumps(asdict(st)))
        deadline = time.monotonic() + timeout_s
        while not self._ready(system, port, st.admin):
            if proc.poll() is not None:
                tail = (d / "server.log").read_text(errors="replace")[-1500:]
                raise EnvironmentProblem(f"{system} exited with {proc.returncode} while starting:\n{tail}")
            if time.monotonic() > deadline:
                self.down(system, progress=lambda m: None)
                raise EnvironmentProblem(f"{system} did not accept connections on 127.0.0.1:{port} in {timeout_s:g} s")
            time.sleep(0.2)
        progress(f"{system} up on {st.address} (pid {st.pid}, log {d / 'server.log'})")
        return st

    def _command(self, system: str, d: Path, port: int, admin_port: int | None, progress: Progress) -> list[str]:
        """The command line that runs `system`'s server in `d` on `port` (its configuration file written there)."""
        if system == "pulsar":
            return _pulsar_command(d, port, admin_port, progress)
        if system == "mosquitto":
            return _mosquitto_command(d, port)
        return [sys.executable, "-m", "testbed.zenoh_router", "--listen", f"tcp/127.0.0.1:{port}"]

    def _ready(self, system: str, port: int, admin: str | None = None) -> bool:
        if system == "pulsar":
            return _pulsar_ready(port, admin)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if system != "mosquitto":
                    return True
                # MQTT 3.1.1 CONNECT with a clean session; ready when CONNACK (0x20) comes back.
                cid = b"kt-ready"
                var = b"\x00\x04MQTT\x04\x02\x00\x3c"
                payload = len(cid).to_bytes(2, "big") + cid
                s.sendall(bytes([0x10, len(var) + len(payload)]) + var + payload)
                s.settimeout(2)
                return s.recv(4)[:1] == b"\x20"
        except OSError:
            return False

    # ---- down / status -------------------------------------------------------------------------------
    def down(self, system: str, progress: Progress = print, timeout_s: float = 20) -> bool:
        st = self.alive(system)
        if st is None:
            progress(f"{system} is not running")
            (self.dir(system) / "state.json").unlink(missing_ok=True)
            return False
        procs.stop(st.pid, group=True, timeout_s=timeout_s)
        (self.dir(system) / "state.json").unlink(missing_ok=True)
        progress(f"{system} stopped (pid {st.pid})")
        return True

    def status(self) -> list[ServerStatus]:
        """Each system: whether kafkatune's server of it runs, where, and whether it answers now."""
        out = []
        for s in SYSTEMS:
            st = self.alive(s)
            ready = self._ready(s, st.port, st.admin) if st else False
            out.append(ServerStatus(s, st is not None, st.address if st else None, st.pid if st else None, ready))
        return out


def _pulsar_ready(port: int, admin: str | None) -> bool:
    """The namespace the driver uses exists and a topic lookup answers with this broker's address."""
    try:
        with urllib.request.urlopen(f"http://{admin}/admin/v2/namespaces/public", timeout=2) as r:
            if "public/default" not in r.read().decode():
                return False
        url = f"http://{admin}/lookup/v2/topic/persistent/public/default/kt-ready"
        with urllib.request.urlopen(url, timeout=10) as r:
            return f":{port}" in r.read().decode()
    except OSError:
        return False


def _pulsar_command(d: Path, port: int, admin_port: int | None, progress: Progress) -> list[str]:
    """Pulsar standalone with one bookie: every entry is written once, acknowledged by that bookie (fsync'd
    journal); topics created on first use and never deleted while idle."""
    root = install_pulsar(progress=progress)
    conf = d / "standalone.conf"
    settings = [
        "clusterName=standalone",
        "bindAddress=127.0.0.1",
        "advertisedAddress=127.0.0.1",
        f"brokerServicePort={port}",
        f"webServicePort={admin_port}",
        "managedLedgerDefaultEnsembleSize=1",
        "managedLedgerDefaultWriteQuorum=1",
        "managedLedgerDefaultAckQuorum=1",
        "allowAutoTopicCreation=true",
        "allowAutoTopicCreationType=non-partitioned",
        "brokerDeleteInactiveTopicsEnabled=false",
        "functionsWorkerEnabled=false",
    ]
    conf.write_text("\n".join([*settings, ""]))
    data = d / "data"
    return [
        str(java_home() / "bin" / "java"),
        *("-Xms1g", "-Xmx2g", "-XX:MaxDirectMemorySize=2g", "-cp", str(root / "libs" / "*")),
        *("org.apache.pulsar.PulsarStandaloneStarter", "--config", str(conf)),
        *("--no-functions-worker", "--no-stream-storage", "--wipe-data"),
        *("--bookkeeper-dir", str(data / "bookkeeper"), "--metadata-dir", str(data / "metadata")),
        *("--bookkeeper-port", str(procs.free_port())),
    ]


def _mosquitto_command(d: Path, port: int) -> list[str]:
    """Debian's mosquitto on `port`, anonymous, in memory, with queues deep enough for a backlog run."""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(exe).exists():
        raise EnvironmentProblem("mosquitto is not installed: `make deps` installs Debian's mosquitto")
    conf = d / "mosquitto.conf"
    settings = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous true",
        "persistence false",
        "max_queued_messages 1000000",
        "max_inflight_messages 1000",
        "log_dest stdout",
        "log_type error",
        "log_type warning",
    ]
    conf.write_text("\n".join([*settings, ""]))
    return [exe, "-c", str(conf)]
