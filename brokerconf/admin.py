"""Cluster health read through the Admin API: brokers, under-replicated partitions, full-ISR waits."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient


def admin_client(bootstrap: str, extra: Mapping[str, str] | None = None) -> AdminClient:
    conf: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10000,
        "log_level": 0,
    }
    conf.update(extra or {})
    return AdminClient(conf)


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def partitions(admin: AdminClient, topic: str | None = None, timeout_s: float = 10) -> list[PartitionState]:
    md = admin.list_topics(topic=topic, timeout=timeout_s)
    out = []
    for t in md.topics.values():
        if t.error is not None:
            continue
        for p in t.partitions.values():
            out.append(PartitionState(str(t.topic), p.id, p.leader, tuple(p.replicas), tuple(p.isrs)))
    return out


def live_brokers(admin: AdminClient, timeout_s: float = 5) -> list[int]:
    return sorted(admin.list_topics(timeout=timeout_s).brokers)


def under_replicated(admin: AdminClient, timeout_s: float = 10) -> list[PartitionState]:
    return [p for p in partitions(admin, timeout_s=timeout_s) if len(p.isr) < len(p.replicas)]


def wait_full_isr(admin: AdminClient, timeout_s: float = 120, progress: Callable[[str], None] | None = None) -> None:
    """Block until no partition of any topic is under-replicated; TimeoutError names what still lags."""
    deadline = time.monotonic() + timeout_s
    lagging: list[PartitionState] = []
    while time.monotonic() < deadline:
        try:
            lagging = under_replicated(admin)
        except Exception:  # metadata briefly unavailable during a restart
            lagging = []
            time.sleep(0.5)
            continue
        if not lagging:
            return
        if progress:
            progress(f"waiting for full ISR: {len(lagging)} partitions under-replicated")
        time.sleep(0.5)
    names = ", ".join(f"{p.topic}-{p.partition} isr={list(p.isr)}" for p in lagging[:5])
    raise TimeoutError(f"ISR not full after {timeout_s:.0f} s: {names}")
