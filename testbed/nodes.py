"""One testbed node: its files (server.properties, log4j2.xml, the JMX exporter's config), its storage format,
and its process (broker + controller in one JVM, in its network namespace when the network is shaped).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from cluster import metrics
from core.errors import EnvironmentProblem
from records.testbed import Node, TestbedState, node_config, node_dir
from testbed import cds, netns
from testbed.dist import KafkaDist

# Broker defaults of the testbed: synchronous replication as the product targets it. Everything else
# is Kafka's default, so a sweep's baseline is what an untuned cluster does.
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


def kafka_uuid() -> str:
    """A cluster id as Kafka's storage tool takes it (URL-safe base64 of 16 bytes, not starting with '-')."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not s.startswith("-"):
            return s


def properties(state_dir: Path, st: TestbedState, node: Node, overrides: Mapping[str, str]) -> dict[str, str]:
    """The node's server.properties: KRaft roles and listeners, the testbed's defaults, then `overrides`."""
    voters = ",".join(f"{n.id}@{n.host}:{n.controller_port}" for n in st.nodes)
    sasl = [f"SASL_SSL://{node.sasl_listener}"] if node.sasl_port else []
    return {
        "process.roles": "broker,controller",
        "node.id": str(node.id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(
            [f"PLAINTEXT://{node.host}:{node.port}", f"CONTROLLER://{node.host}:{node.controller_port}", *sasl]
        ),
        "advertised.listeners": ",".join([f"PLAINTEXT://{node.host}:{node.port}", *sasl]),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        + (",SASL_SSL:SASL_SSL" if node.sasl_port else ""),
        "log.dirs": str(node_dir(state_dir, node.id) / "data"),
        **BROKER_DEFAULTS,
        **overrides,
    }


def write_files(state_dir: Path, node: Node, props: Mapping[str, str]) -> Path:
    """The node's folder with its server.properties (owner-only when it holds passwords), log4j2.xml and the
    JMX exporter's config; returns the server.properties path."""
    d = node_dir(state_dir, node.id)
    d.mkdir(parents=True, exist_ok=True)
    path = node_config(state_dir, node.id)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    if node.sasl_port:
        path.chmod(0o600)  # it holds the key store's and the PLAIN user's passwords
    (d / "log4j2.xml").write_text(LOG4J2)
    metrics.write_exporter_config(d / "jmx-exporter.yaml")
    return path


# A one-shot tool's JVM compiles with C1 only: nothing it runs is measured, and it exits before C2 would pay off.
TOOL_JIT = "-XX:TieredStopAtLevel=1"


def format_storage(dist: KafkaDist, state_dir: Path, st: TestbedState, node: Node) -> None:
    """`kafka-storage format` of the node's log dir for the testbed's cluster id. A log dir that holds
    meta.properties is formatted already: skipped without starting a JVM (a restart, a heal). The tool's JVM maps
    the brokers' class archive and compiles with C1 only: a new testbed formats each node before its broker starts
    (benchmarks/broker_start.py)."""
    if (node_dir(state_dir, node.id) / "data" / "meta.properties").is_file():
        return
    cmd = [
        str(dist.java),
        *cds.mapped(dist),
        TOOL_JIT,
        "-cp",
        dist.classpath,
        f"-Dlog4j2.configurationFile={node_dir(state_dir, node.id) / 'log4j2.xml'}",
        "kafka.tools.StorageTool",
        "format",
        "-t",
        st.cluster_id,
        "-c",
        str(node_config(state_dir, node.id)),
        "--ignore-formatted",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise EnvironmentProblem(f"formatting node {node.id} failed: {proc.stdout[-500:]}{proc.stderr[-500:]}")


HEAP = "1g"  # each broker's, unless the testbed is brought up with another


def jvm_options(heap: str, extra: Sequence[str] = ()) -> list[str]:
    """The brokers' JVM settings, the same for every node and written into the cluster profile (records.profile):
    a fixed heap (no resizing mid-run) and G1 with Kafka's own pause target (kafka-run-class.sh's), then `extra`
    (later options win: how a benchmark tries other settings, benchmarks/broker_jvm.py)."""
    base = [f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
    return [*base, *extra]


def start(dist: KafkaDist, state_dir: Path, node: Node, jvm: Sequence[str]) -> int:
    """Start the node's JVM with the options `jvm` (jvm_options) in its own session, logging to server.log;
    returns its pid."""
    d = node_dir(state_dir, node.id)
    agent = f"{dist.jmx_agent}={node.host}:{node.metrics_port}:{d / 'jmx-exporter.yaml'}"
    archive = cds.options(dist)
    cmd = [
        *netns.exec_prefix(node.netns),
        str(dist.java),
        *archive,  # before `jvm`: an option of the caller's (-Xshare:off) has the last word
        *jvm,
        f"-Dlog4j2.configurationFile={d / 'log4j2.xml'}",
        f"-javaagent:{agent}",
        "-cp",
        dist.classpath,
        "kafka.Kafka",
        str(node_config(state_dir, node.id)),
    ]
    with open(d / "server.log", "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=d
        )
    cds.started(dist, archive, proc.pid)  # `ip netns exec` execs the JVM: the same pid
    return proc.pid


def why_exited(log: Path, lines: int = 400) -> str:
    """The last error a node's server.log shows (its final `lines`), for the message of a node that exited while
    starting: the testbed is wiped after a test run, and its log with it."""
    try:
        tail = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "no server.log"
    errors = [ln.strip() for ln in tail if "ERROR" in ln or "FATAL" in ln or "Exception" in ln]
    return errors[-1][:500] if errors else (tail[-1].strip()[:500] if tail else "server.log is empty")
