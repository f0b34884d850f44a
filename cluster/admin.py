"""Cluster health read through the Admin API: brokers, under-replicated partitions, full-ISR waits."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient


def admin_client(bootstrap: str, extra: Mapping[str, Any] | None = None) -> AdminClient:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10000,
        "log_level": 0,
    }
    conf.update(extra or {})
    return AdminClient(conf)


class Unreachable(Exception):
    """No broker answered; `kind` says why: "authentication", "tls" or "timeout"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def reach(bootstrap: str, extra: Mapping[str, Any] | None = None, timeout_s: float = 10) -> list[int]:
    """The live broker ids, or Unreachable as soon as the cluster refuses the credentials or the TLS handshake.

    librdkafka retries a refused login quietly and the caller only sees a timeout much later ("Broker
    transport failure", "timed out waiting for controller"); the client's error callback carries the real
    cause, so it is read here before anything else talks to the cluster. Its text holds no secret.
    """
    seen: list[KafkaError] = []
    a = admin_client(bootstrap, {**(extra or {}), "error_cb": seen.append})
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        a.poll(0)  # serves the error callback
        for e in seen:
            if e.code() == KafkaError._AUTHENTICATION:
                raise Unreachable("authentication", f"{bootstrap} refused the login: {e.str()}")
            if e.code() == KafkaError._SSL:
                raise Unreachable("tls", f"TLS with {bootstrap} failed: {e.str()}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unreachable("timeout", f"no broker at {bootstrap} answered within {timeout_s:g} s ({last})")
        try:
            return sorted(a.list_topics(timeout=min(1.0, left)).brokers)
        except KafkaException as e:
            last = e


def unreachable_hint(e: Unreachable, *, login: str, tls: str) -> str:
    """e's message and what to fix: `login`/`tls` name the settings the user wrote (an inventory's, a spec's)."""
    fixes = {"authentication": f"check {login}", "tls": f"check {tls}"}
    fix = fixes.get(e.kind, "check the address and that the cluster runs")
    return f"{e}: {fix}"


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


def down(admin: AdminClient, broker_ids: list[int], timeout_s: float = 2) -> list[str]:
    """Why each of `broker_ids` that is down now is down: missing from the cluster's metadata, or its listener there
    refusing TCP connections (a crash is seen at once, before the controller fences it). Empty when none is, or
    when the metadata cannot be read (a request's own error then says more). Asked before waiting on a request: one
    to a down broker waits its whole timeout, as librdkafka keeps retrying the connection."""
    try:
        known = admin.list_topics(timeout=timeout_s).brokers
    except KafkaException:
        return []
    out = []
    for b in broker_ids:
        md = known.get(b)
        if md is None:
            out.append(f"broker {b} is not in the cluster's metadata")
            continue
        try:
            socket.create_connection((md.host, md.port), timeout=timeout_s).close()
        except ConnectionRefusedError:
            out.append(f"broker {b} refuses connections on {md.host}:{md.port}")
        except OSError:
            pass  # slow or unreachable from here: not known to be down
    return out


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
