"""What `kafkatune testbed status` shows of one node and of the cluster, read live (metrics and admin API)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cluster import admin as kadmin
from cluster import metrics
from core.typed import to_json
from records.testbed import Node


@dataclass(frozen=True)
class NodeStatus:
    """One node as it runs now: its process, listener and exporter, and what the exporter says."""

    id: int
    pid: int | None  # None: not running
    listener: str
    metrics_url: str
    netns: str | None
    log: str
    under_replicated_partitions: int | None = None  # None: down, or its exporter did not answer
    metrics_error: str | None = None

    @property
    def alive(self) -> bool:
        return self.pid is not None


@dataclass(frozen=True)
class ClusterStatus:
    """The cluster as it runs now (`kafkatune testbed status`)."""

    bootstrap_servers: str
    network: str
    kafka_version: str
    cluster_id: str
    controller: int | None  # the active controller's node id; None: no exporter said so
    under_replicated_partitions: list[str] | None  # None: no node answered the admin API
    nodes: tuple[NodeStatus, ...]
    profile: str  # the cluster profile's file

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = to_json(self)
        doc["nodes"] = [{**to_json(n), "alive": n.alive} for n in self.nodes]
        return doc


def node_row(node: Node, pid: int | None, log: Path) -> tuple[NodeStatus, bool]:
    """The node's status row, and whether it is the active controller (its exporter says so; False when the node
    is down or its exporter does not answer, which the row then names)."""
    row = NodeStatus(node.id, pid, node.listener, node.metrics_url, node.netns, str(log))
    if pid is None:
        return row, False
    try:
        m = metrics.scrape(node.metrics_url)
    except OSError:
        return replace(row, metrics_error="exporter not answering"), False
    return replace(row, under_replicated_partitions=int(m.get("under_replicated", 0))), m.get(
        "active_controller"
    ) == 1.0


def under_replicated(bootstrap: str) -> list[str] | None:
    """The cluster's under-replicated partitions as topic-partition names; None when the admin API does not
    answer within 5 s."""
    try:
        return [f"{p.topic}-{p.partition}" for p in kadmin.under_replicated(kadmin.admin_client(bootstrap), 5)]
    except Exception:
        return None
