"""The local testbed: three KRaft nodes (broker + controller in one JVM each) on this machine.

Every node has its own data dir, ports and log file under the state folder, and runs the Prometheus JMX
exporter agent. In loopback mode the nodes listen on 127.0.0.1 with distinct ports; in shaped mode each
node runs in its own network namespace (see `brokerconf.netns`) and the clients of `bench` run in the
client namespaces. The state file (`testbed.json`) is what `status`, `kill`, `restart` and `bench` read.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

from brokerconf import netns
from brokerconf.dist import KafkaDist
from cluster import admin as kadmin
from cluster import metrics
from cluster.target import node_running
from core import procs
from core.errors import EnvironmentProblem, UserError
from records.profile import ClusterProfile, ProfileBroker, write_profile
from records.testbed import Node, TestbedState, load_state, node_dir, save_state

SCHEMA_VERSION = 1
NODES = 3
CLIENT_HOSTS = 2
Progress = Callable[[str], None]

# Broker defaults of the testbed: synchronous replication as the product targets it. Everything else
# is Kafka's default, so a sweep's baseline is what an untuned cluster does.
SASL_USER = "kafkatune"

BROKER_DEFAULTS = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    # Not a throughput setting: makes a new consumer group start at once instead of after 3 s.
    "group.initial.rebalance.delay.ms": "0",
    # Not a throughput setting either: a restarted node cannot register again until its previous
    # incarnation's session expires (DUPLICATE_BROKER_REGISTRATION), so Kafka's 9 s session timeout is
    # the bulk of every rolling restart here. 5 s (heartbeats each 1 s) halves that, and a killed node
    # is fenced sooner.
    "broker.heartbeat.interval.ms": "1000",
    "broker.session.timeout.ms": "5000",
}

LOG4J2 = """<Configuration status="WARN">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="[%d] %p %m (%c)%n"/></Console>
  </Appenders>
  <Loggers><Root level="INFO"><AppenderRef ref="out"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/></Loggers>
</Configuration>
"""


def _kafka_uuid() -> str:
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not s.startswith("-"):
            return s


class Testbed:
    """Start, stop and inspect the local 3-node cluster kept in `state_dir`."""

    __test__ = False

    def __init__(
        self, state_dir: Path, dist: KafkaDist, *, base_port: int = 29090, prefix: str = "kt", heap: str = "1g"
    ) -> None:
        self.state_dir = state_dir
        self.dist = dist
        self.base_port = base_port
        self.prefix = prefix
        self.heap = heap

    # ---- state -------------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.state_dir / "testbed.json"

    @property
    def profile_file(self) -> Path:
        return self.state_dir / "profile.json"

    def state(self) -> TestbedState:
        if not self.state_file.exists():
            raise UserError(f"no testbed in {self.state_dir}: run `kafkatune testbed up` first")
        return load_state(self.state_file)

    def _save(self, st: TestbedState) -> None:
        save_state(self.state_file, st)

    def node_dir(self, node_id: int) -> Path:
        return node_dir(self.state_dir, node_id)

    def network(self, st: TestbedState) -> netns.ShapedNetwork | None:
        if st.network != "shaped":
            return None
        assert st.subnet and st.nic_mb_s
        return netns.plan(st.prefix, st.subnet, NODES, CLIENT_HOSTS, st.nic_mb_s)

    def client_netns(self, st: TestbedState) -> list[str | None]:
        """Where load workers run: the client hosts' namespaces when shaped, this host (None) otherwise."""
        return list(st.client_netns) or [None]

    # ---- layout ------------------------------------------------------------------------------------
    def _plan(self, subnet: str) -> netns.ShapedNetwork:
        return netns.plan(self.prefix, subnet, NODES, CLIENT_HOSTS, 1.0)

    def _layout(self, network: str, subnet: str, security: str = "plaintext") -> tuple[Node, ...]:
        sasl = security == "sasl_ssl"
        if network == "shaped":
            net = self._plan(subnet)
            return tuple(
                Node(i, net.host(f"b{i}").ip, 9092, 9093, 9404, net.host(f"b{i}").netns, 9094 if sasl else None)
                for i in range(1, NODES + 1)
            )
        b = self.base_port
        return tuple(
            Node(i, "127.0.0.1", b + i, b + 100 + i, b + 200 + i, None, b + 300 + i if sasl else None)
            for i in range(1, NODES + 1)
        )

    # ---- the SASL_SSL listener ---------------------------------------------------------------------
    @property
    def security_dir(self) -> Path:
        """Key store, CA certificate and the generated passwords (files readable by the owner only)."""
        return self.state_dir / "security"

    def _secret(self, name: str) -> str:
        """A generated secret kept in security_dir/`name` (made on first use)."""
        import secrets

        p = self.security_dir / name
        if not p.exists():
            self.security_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(24))
        return p.read_text().strip()

    def _make_keystore(self, st: TestbedState) -> None:
        """A self-signed certificate for every node address (keytool, PKCS12), and its PEM for clients."""
        d = self.security_dir
        ks, pem = d / "broker.p12", d / "ca.pem"
        if ks.exists() and pem.exists():
            return
        keytool = str(Path(self._java()).with_name("keytool"))
        env = {**os.environ, "KT_STOREPASS": self._secret("store-password")}  # never on a command line
        san = ",".join(["dns:localhost", *sorted({f"ip:{n.host}" for n in st.nodes})])
        for cmd in (
            [keytool, "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", "CN=kafkatune-testbed", "-ext", f"SAN={san}", "-ext", "BC:c=ca:true",
             "-keystore", str(ks), "-storetype", "PKCS12", "-storepass:env", "KT_STOREPASS"],
            [keytool, "-exportcert", "-rfc", "-alias", "broker", "-keystore", str(ks), "-storetype", "PKCS12",
             "-storepass:env", "KT_STOREPASS", "-file", str(pem)],
        ):  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            if proc.returncode != 0:
                raise EnvironmentProblem(f"keytool failed: {(proc.stdout + proc.stderr).strip()[-500:]}")
        ks.chmod(0o600)

    def _sasl_props(self, node: Node) -> dict[str, str]:
        user, pw = SASL_USER, self._secret("password")
        return {
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}="{pw}";'
            ),
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.security_dir / "broker.p12"),
            "ssl.keystore.password": self._secret("store-password"),
        }

    def _add_scram_user(self, st: TestbedState) -> None:
        """The SCRAM-SHA-512 credential of the testbed's user (through the PLAINTEXT listener, as an operator
        would with kafka-configs); PLAIN checks the same password from the listener's JAAS config."""
        from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        a = kadmin.admin_client(st.bootstrap_servers)
        up = UserScramCredentialUpsertion(
            SASL_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), self._secret("password").encode()
        )
        for fut in a.alter_user_scram_credentials([up], request_timeout=30).values():
            fut.result(timeout=60)

    def client_security(self, st: TestbedState, mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
        """An inventory's `security` block for the SASL_SSL listener (the password by file reference)."""
        return {
            "protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "username": SASL_USER,
            "password": {"file": str(self.security_dir / "password")},
            "ca_file": str(self.security_dir / "ca.pem"),
        }

    def _write_node_files(self, st: TestbedState, node: Node, overrides: dict[str, str] | None = None) -> Path:
        d = self.node_dir(node.id)
        d.mkdir(parents=True, exist_ok=True)
        voters = ",".join(f"{n.id}@{n.host}:{n.controller_port}" for n in st.nodes)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.id),
            "controller.quorum.voters": voters,
            "listeners": ",".join(
                [f"PLAINTEXT://{node.host}:{node.port}", f"CONTROLLER://{node.host}:{node.controller_port}"]
                + ([f"SASL_SSL://{node.sasl_listener}"] if node.sasl_port else [])
            ),
            "advertised.listeners": ",".join(
                [f"PLAINTEXT://{node.host}:{node.port}"]
                + ([f"SASL_SSL://{node.sasl_listener}"] if node.sasl_port else [])
            ),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            + (",SASL_SSL:SASL_SSL" if node.sasl_port else ""),
            "log.dirs": str(d / "data"),
            **BROKER_DEFAULTS,
            **(st.overrides if overrides is None else overrides),
        }
        if node.sasl_port:
            props.update(self._sasl_props(node))
        path = d / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        if node.sasl_port:
            path.chmod(0o600)  # it holds the key store's and the PLAIN user's passwords
        (d / "log4j2.xml").write_text(LOG4J2)
        metrics.write_exporter_config(d / "jmx-exporter.yaml")
        return path

    # ---- processes ---------------------------------------------------------------------------------
    def _java(self) -> str:
        return str(self.dist.java)

    def _format(self, st: TestbedState, node: Node, props: Path) -> None:
        cmd = [
            self._java(),
            "-cp",
            self.dist.classpath,
            f"-Dlog4j2.configurationFile={self.node_dir(node.id) / 'log4j2.xml'}",
            "kafka.tools.StorageTool",
            "format",
            "-t",
            st.cluster_id,
            "-c",
            str(props),
            "--ignore-formatted",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise EnvironmentProblem(f"formatting node {node.id} failed: {proc.stdout[-500:]}{proc.stderr[-500:]}")

    def _start(self, st: TestbedState, node: Node) -> int:
        d = self.node_dir(node.id)
        agent = f"{self.dist.jmx_agent}={node.host}:{node.metrics_port}:{d / 'jmx-exporter.yaml'}"
        cmd = [
            *netns.exec_prefix(node.netns),
            self._java(),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={d / 'log4j2.xml'}",
            f"-javaagent:{agent}",
            "-cp",
            self.dist.classpath,
            "kafka.Kafka",
            str(d / "server.properties"),
        ]
        with open(d / "server.log", "ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=d
            )
        return proc.pid

    def _alive(self, st: TestbedState, node: Node) -> int | None:
        return st.pids.get(str(node.id)) if node_running(self.state_dir, st, node) else None

    def _wait_serving(self, st: TestbedState, ids: list[int], progress: Progress, timeout_s: float = 180) -> None:
        admin = kadmin.admin_client(st.bootstrap_servers)
        deadline = time.monotonic() + timeout_s
        want = set(ids)
        last = ""
        while time.monotonic() < deadline:
            for n in st.nodes:
                if n.id in want and self._alive(st, n) is None:
                    log = self.node_dir(n.id) / "server.log"
                    raise EnvironmentProblem(f"node {n.id} exited while starting; see {log}")
            try:
                brokers = set(kadmin.live_brokers(admin, timeout_s=3))
            except Exception:
                brokers = set()
            msg = f"brokers serving: {len(brokers & {n.id for n in st.nodes})}/{NODES}"
            if msg != last:
                progress(msg)
                last = msg
            if want <= brokers and self._metrics_ok(st, want):
                return
            time.sleep(0.5)
        raise EnvironmentProblem(
            f"brokers {sorted(want)} not serving after {timeout_s:.0f} s; see {self.state_dir}/node*/server.log"
        )

    def _metrics_ok(self, st: TestbedState, ids: set[int]) -> bool:
        for n in st.nodes:
            if n.id in ids:
                try:
                    metrics.scrape(n.metrics_url, timeout_s=2)
                except OSError:
                    return False
        return True

    # ---- commands ----------------------------------------------------------------------------------
    def up(
        self,
        *,
        network: str = "loopback",
        nic_mb_s: float | None = None,
        subnet: str = "198.18.0",
        security: str | None = None,
        progress: Progress = print,
    ) -> TestbedState:
        """Start every node that is not running; format a new cluster when there is none.

        `security="sasl_ssl"`: each node also gets a SASL_SSL listener for clients (SCRAM-SHA-512 and PLAIN,
        a certificate made with keytool; brokers talk to each other over PLAINTEXT). None: what the existing
        testbed has (plaintext for a new one), so healing or restarting never drops the listener."""
        if security not in (None, "plaintext", "sasl_ssl"):
            raise UserError(f"--security must be plaintext or sasl_ssl (got {security!r})")
        if not self.dist.installed():
            raise EnvironmentProblem("Kafka jars not installed: run `kafkatune testbed install`")
        if network == "shaped":
            ok, why = netns.can_shape()
            if not ok:
                raise EnvironmentProblem(f"--network shaped needs root and iproute2 ({why}); use --network loopback")
            if not nic_mb_s or nic_mb_s <= 0:
                raise UserError("--nic-mbps must be a positive number of MB/s with --network shaped")
        st: TestbedState | None = None
        if self.state_file.exists():
            st = self.state()
            if (
                st.network != network
                or (network == "shaped" and (st.nic_mb_s != nic_mb_s or st.subnet != subnet))
                or (security is not None and st.security != security)
            ):
                progress(
                    f"network or security changed ({st.network}/{st.security} -> {network}/{security}): recreating"
                )
                self.down(wipe=True, progress=progress)
                st = None
        if st is None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            st = TestbedState(
                SCHEMA_VERSION,
                network,
                _kafka_uuid(),
                self.dist.version,
                self._layout(network, subnet, security or "plaintext"),
                nic_mb_s if network == "shaped" else None,
                subnet if network == "shaped" else None,
                self.prefix,
                security=security or "plaintext",
                client_netns=tuple(h.netns for h in netns.host_names(self._plan(subnet), "c"))
                if network == "shaped"
                else (),
            )
            self._save(st)
        if st.security == "sasl_ssl":
            self._make_keystore(st)
        net = self.network(st)
        if net is not None and not netns.exists(net):
            progress(f"building the shaped network: {len(net.hosts)} hosts at {net.rate_mb_s:g} MB/s each way")
            netns.create(net)
        to_start = [n for n in st.nodes if self._alive(st, n) is None]
        for n in to_start:
            props = self._write_node_files(st, n)
            self._format(st, n, props)
            progress(f"starting node {n.id} on {n.listener}")
            st = st.with_pid(n.id, self._start(st, n))
            self._save(st)
        self._wait_serving(st, [n.id for n in st.nodes], progress)
        if to_start and len(to_start) < NODES:
            kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), progress=progress)
        if st.security == "sasl_ssl":
            self._add_scram_user(st)
            progress(
                f"SASL_SSL listener: {st.sasl_bootstrap_servers} (user {SASL_USER}, password in {self.security_dir})"
            )
        self.write_profile(st, progress)
        return st

    def _stop_node(self, st: TestbedState, node: Node, timeout_s: float = 60) -> None:
        pid = self._alive(st, node)
        if pid is not None:
            procs.stop(pid, timeout_s=timeout_s)  # SIGTERM: a controlled shutdown moves leadership away first

    def down(self, *, wipe: bool = False, progress: Progress = print) -> None:
        if not self.state_file.exists():
            progress("no testbed running")
            return
        st = self.state()
        # All at once: one by one, the last nodes wait for a controller quorum that has already gone.
        pids = {n.id: pid for n in st.nodes if (pid := self._alive(st, n)) is not None}
        for nid in pids:
            progress(f"stopping node {nid}")
        procs.stop_all(pids.values(), timeout_s=30)
        st = st.replace(pids={})
        self._save(st)
        net = self.network(st)
        if net is not None:
            netns.destroy(net)
        if wipe:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            progress(f"removed {self.state_dir}")

    def kill(self, node_id: int) -> int:
        st = self.state()
        node = self._node(st, node_id)
        pid = self._alive(st, node)
        if pid is None:
            raise UserError(f"node {node_id} is not running")
        procs.kill(pid)
        return pid

    def restart(
        self,
        node_id: int,
        progress: Progress = print,
        overrides: dict[str, str] | None = None,
        *,
        keep_config: bool = False,
    ) -> None:
        """Clean restart of one node; returns once it serves and every partition has a full ISR.

        `overrides`: the restart-only configs it starts with (default: the testbed's current ones).
        `keep_config`: start it with its server.properties as it is on disk (edited by someone else, as a
        remote sweep does over SSH), instead of writing it from the testbed's state.
        """
        st = self.state()
        node = self._node(st, node_id)
        progress(f"stopping node {node_id}")
        self._stop_node(st, node)
        if not keep_config:
            self._write_node_files(st, node, overrides)
        progress(f"starting node {node_id}")
        st = st.with_pid(node_id, self._start(st, node))
        self._save(st)
        self._wait_serving(st, [node_id], progress)
        kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), progress=progress)

    def set_overrides(self, overrides: dict[str, str], progress: Progress = print) -> int:
        """Make `overrides` the restart-only configs of every node; rolling restart if they changed.

        One node at a time, each back in full ISR before the next goes down, so a min.insync.replicas=2
        topic stays writable throughout. Returns the number of node restarts.
        """
        st = self.state()
        if st.overrides == overrides:
            return 0
        for n in st.nodes:
            self.restart(n.id, progress=progress, overrides=overrides)
        # Recorded only once every node runs them: after a failed roll the state still differs,
        # so the next call rolls all nodes again instead of trusting half-restarted brokers.
        self._save(self.state().replace(overrides=dict(overrides)))
        return len(st.nodes)

    def heal(self, progress: Progress = print) -> list[int]:
        """Start the nodes that are down and wait for full ISR; returns the ids that were restarted."""
        st = self.state()
        dead = [n for n in st.nodes if self._alive(st, n) is None]
        for n in dead:
            self._write_node_files(st, n)
            progress(f"healing: starting node {n.id}")
            st = st.with_pid(n.id, self._start(st, n))
            self._save(st)
        if dead:
            self._wait_serving(st, [n.id for n in st.nodes], progress)
        kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), timeout_s=180, progress=progress)
        return [n.id for n in dead]

    @staticmethod
    def _node(st: TestbedState, node_id: int) -> Node:
        for n in st.nodes:
            if n.id == node_id:
                return n
        raise UserError(f"no node {node_id}: the testbed has nodes {[n.id for n in st.nodes]}")

    def status(self) -> dict[str, Any]:
        st = self.state()
        nodes = []
        controller = None
        for n in st.nodes:
            pid = self._alive(st, n)
            row: dict[str, Any] = {
                "id": n.id,
                "pid": pid,
                "alive": pid is not None,
                "listener": n.listener,
                "metrics_url": n.metrics_url,
                "netns": n.netns,
                "log": str(self.node_dir(n.id) / "server.log"),
            }
            if pid is not None:
                try:
                    m = metrics.scrape(n.metrics_url)
                    row["under_replicated_partitions"] = int(m.get("under_replicated", 0))
                    if m.get("active_controller") == 1.0:
                        controller = n.id
                except OSError:
                    row["metrics_error"] = "exporter not answering"
            nodes.append(row)
        under: list[str] | None = None
        if any(r["alive"] for r in nodes):
            try:
                ur = kadmin.under_replicated(kadmin.admin_client(st.bootstrap_servers), timeout_s=5)
                under = [f"{p.topic}-{p.partition}" for p in ur]
            except Exception:
                under = None
        return {
            "bootstrap_servers": st.bootstrap_servers,
            "network": st.network,
            "kafka_version": st.kafka_version,
            "cluster_id": st.cluster_id,
            "controller": controller,
            "under_replicated_partitions": under,
            "nodes": nodes,
            "profile": str(self.profile_file),
        }

    # ---- profile -----------------------------------------------------------------------------------
    def write_profile(
        self,
        st: TestbedState,
        progress: Progress = print,
        *,
        disk_segment_mb: int = 64,
        disk_files: int = 2,
        measure_network: bool = True,
    ) -> dict[str, Any]:
        """The cluster profile a run records: brokers, listeners, network (measured when shaped), disk.

        `up` runs it quickly (2 × 64 MiB per log dir); `kafkatune probe` runs it with larger files.
        With measure_network=False the network section of the existing profile is kept.
        """
        from cluster import probe

        net = self.network(st)
        network_: dict[str, Any] = {"mode": st.network, "shaped": net is not None}
        if not measure_network and self.profile_file.exists():
            network_ = json.loads(self.profile_file.read_text())["network"]
        elif net is not None:
            progress("measuring the host-to-host rate (iperf3, b1 -> b2)")
            measured = netns.measure_rate(net.host("b1"), net.host("b2"))
            network_.update(
                nic_mb_s_configured=st.nic_mb_s,
                nic_mb_s_measured=round(measured, 2),
                client_hosts=[asdict(h) for h in netns.host_names(net, "c")],
            )
            progress(f"measured {measured:.1f} MB/s per link (configured {st.nic_mb_s:g} MB/s)")
        else:
            network_.update(
                nic_mb_s_configured=None, nic_mb_s_measured=None, note="unshaped loopback: no network ceiling is known"
            )
        log_dirs = [self.node_dir(n.id) / "data" for n in st.nodes]
        du = shutil.disk_usage(log_dirs[0]) if log_dirs[0].exists() else None
        progress(
            f"measuring disk writes in the {len(log_dirs)} log dirs at once ({disk_files} × {disk_segment_mb} MiB each)"
        )
        d = probe.probe_disk(log_dirs, segment_mb=disk_segment_mb, files=disk_files)
        progress(
            f"disk: {d.write_mb_s_measured:g} MB/s per log dir with fsync ({d.write_mb_s_total:g} MB/s together), "
            f"{d.fsync_per_s:g} small fsyncs/s"
        )
        return write_profile(
            self.profile_file,
            ClusterProfile(
                source="testbed",
                kafka_version=st.kafka_version,
                brokers=[ProfileBroker(n.id, n.host, n.listener, n.netns) for n in st.nodes],
                bootstrap_servers=st.bootstrap_servers,
                network=network_,
                disk={**d.as_profile(), "free_bytes": du.free if du else None},
                machine={
                    "cpus": os.cpu_count(),
                    "memory_bytes": psutil.virtual_memory().total,
                    "kernel": platform.release(),
                },
            ),
        )
