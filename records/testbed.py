"""The local testbed's state, `<state>/testbed.json`: its nodes and where they listen, their pids, the
restart-only configs they run with, its network, and where its load workers run. Beside it in the state
folder: `profile.json` (records.profile), `node<id>/` per node, `security/` (the SASL_SSL listener's files).

Written by the testbed (testbed.lifecycle) whenever a node starts or its configs change; read by
`testbed status|kill|restart` and, through cluster.target, by every command that measures the testbed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core import files

SCHEMA_VERSION = 1
STATE = "testbed.json"


@dataclass(frozen=True)
class Node:
    id: int
    host: str
    port: int
    controller_port: int
    metrics_port: int
    netns: str | None = None
    sasl_port: int | None = None  # a SASL_SSL listener for clients (`up --security sasl_ssl`)

    @property
    def listener(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sasl_listener(self) -> str | None:
        return f"{self.host}:{self.sasl_port}" if self.sasl_port else None

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"


@dataclass(frozen=True)
class TestbedState:
    __test__ = False  # not a pytest class
    schema_version: int
    network: str  # "loopback" | "shaped"
    cluster_id: str
    kafka_version: str
    nodes: tuple[Node, ...]
    nic_mb_s: float | None = None
    subnet: str | None = None
    prefix: str = "kt"
    pids: Mapping[str, int] = field(default_factory=dict)
    # restart-only broker configs on top of the testbed's broker defaults (a sweep sets them, then rolls)
    overrides: Mapping[str, str] = field(default_factory=dict)
    security: str = "plaintext"  # "sasl_ssl": each node also has a SASL_SSL client listener
    # the network namespaces of the client hosts when shaped; empty: load workers run on this host
    client_netns: tuple[str, ...] = ()
    # the brokers' JVM options as the testbed was brought up (testbed.nodes.jvm_options): every process that starts
    # a node (a sweep's rolling restart, a heal) starts it with these, not with its own defaults
    jvm_options: tuple[str, ...] = ()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.listener for n in self.nodes)

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        return ",".join(n.sasl_listener or "" for n in self.nodes) if self.security == "sasl_ssl" else None

    @property
    def metrics_urls(self) -> dict[int, str]:
        return {n.id: n.metrics_url for n in self.nodes}

    def node(self, node_id: int) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def with_pid(self, node_id: int, pid: int | None) -> TestbedState:
        pids = {k: v for k, v in self.pids.items() if k != str(node_id)}
        if pid is not None:
            pids[str(node_id)] = pid
        return dataclasses.replace(self, pids=pids)

    def replace(self, **changes: Any) -> TestbedState:
        return dataclasses.replace(self, **changes)


def _migrate(d: dict[str, Any]) -> dict[str, Any]:
    """Older states: before `client_netns` was kept, a shaped testbed's two client hosts were <prefix>-c1, -c2."""
    if "client_netns" not in d:
        d["client_netns"] = [f"{d.get('prefix', 'kt')}-c{i}" for i in (1, 2)] if d.get("network") == "shaped" else []
    return d


def load_state(path: Path) -> TestbedState:
    d = _migrate(json.loads(path.read_text()))
    d["nodes"] = tuple(Node(**n) for n in d["nodes"])
    d["client_netns"] = tuple(d["client_netns"])
    d["jvm_options"] = tuple(d.get("jvm_options") or ())
    return TestbedState(**d)


def save_state(path: Path, st: TestbedState) -> None:
    doc = asdict(st)
    doc["nodes"] = [asdict(n) for n in st.nodes]
    doc["client_netns"], doc["jvm_options"] = list(st.client_netns), list(st.jvm_options)
    doc["pids"], doc["overrides"] = dict(st.pids), dict(st.overrides)
    files.write_json(path, doc)


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE


def node_dir(state_dir: Path, node_id: int) -> Path:
    """A node's folder: server.properties, log4j2.xml, the exporter's config, data/ (its log dir), server.log."""
    return state_dir / f"node{node_id}"


def node_config(state_dir: Path, node_id: int) -> Path:
    """The node's server.properties; its path is on the node's command line, which tells its process apart."""
    return node_dir(state_dir, node_id) / "server.properties"
