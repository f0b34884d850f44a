"""What `kafkatune testbed status` shows of one node and of the cluster, read live (metrics and admin API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster import admin as kadmin
from cluster import metrics
from records.testbed import Node


def node_row(node: Node, pid: int | None, log: Path) -> tuple[dict[str, Any], bool]:
    """The node's status row, and whether it is the active controller (its exporter says so; False when the node
    is down or its exporter does not answer, which the row then names)."""
    row: dict[str, Any] = {
        "id": node.id,
        "pid": pid,
        "alive": pid is not None,
        "listener": node.listener,
        "metrics_url": node.metrics_url,
        "netns": node.netns,
        "log": str(log),
    }
    if pid is None:
        return row, False
    try:
        m = metrics.scrape(node.metrics_url)
    except OSError:
        row["metrics_error"] = "exporter not answering"
        return row, False
    row["under_replicated_partitions"] = int(m.get("under_replicated", 0))
    return row, m.get("active_controller") == 1.0


def under_replicated(bootstrap: str) -> list[str] | None:
    """The cluster's under-replicated partitions as topic-partition names; None when the admin API does not
    answer within 5 s."""
    try:
        return [f"{p.topic}-{p.partition}" for p in kadmin.under_replicated(kadmin.admin_client(bootstrap), 5)]
    except Exception:
        return None
