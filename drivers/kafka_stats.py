"""What librdkafka's statistics documents (its STATISTICS.md) say, in the terms kafkatune reads: a producer's queue
time, round trip, requests in flight and batch size (drivers.api.CLIENT_STATS), and where a consumer waits.

The document is read into the typed records below at its edge (core.typed.from_json), naming only the fields
kafkatune reads; librdkafka's other fields are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.typed import from_json

STATS_INTERVAL_MS = 1000


@dataclass(frozen=True)
class Window:
    """One of librdkafka's rolling windows (µs for latencies, bytes or records for batches): empty when cnt is 0."""

    avg: float = 0.0
    p99: float = 0.0
    cnt: int = 0


@dataclass(frozen=True)
class BrokerStats:
    nodeid: int = -1  # -1 for the bootstrap servers' own entries, which carry no produce traffic
    int_latency: Window = field(default_factory=Window)  # a message's time in the producer's queue
    rtt: Window = field(default_factory=Window)
    waitresp_cnt: int = 0  # requests sent, awaiting their response


@dataclass(frozen=True)
class PartitionStats:
    leader: int | None = None
    fetch_state: str | None = None
    next_offset: Any = None  # an offset, or librdkafka's -1001 for none known yet
    hi_offset: Any = None


@dataclass(frozen=True)
class TopicStats:
    batchsize: Window = field(default_factory=Window)
    batchcnt: Window = field(default_factory=Window)
    partitions: Mapping[str, PartitionStats] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupStats:
    state: str | None = None
    join_state: str | None = None
    assignment_size: int | None = None
    rebalance_cnt: int | None = None


@dataclass(frozen=True)
class Stats:
    brokers: Mapping[str, BrokerStats] = field(default_factory=dict)
    topics: Mapping[str, TopicStats] = field(default_factory=dict)
    cgrp: GroupStats = field(default_factory=GroupStats)

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Stats:
        return from_json(cls, doc, "librdkafka statistics")


def client_stats(doc: Mapping[str, Any], topic: str) -> dict[str, float]:
    """One librdkafka statistics document as api.CLIENT_STATS: queue time and round trip averaged over the
    brokers (weighted by their sample counts, µs to ms) and their p99s (the highest broker's), requests in flight
    summed, the topic's batch size."""
    stats = Stats.of(doc)
    brokers = [b for b in stats.brokers.values() if b.nodeid >= 0]

    def weighted(ws: list[Window]) -> float | None:
        n = sum(w.cnt for w in ws)
        return sum(w.avg * w.cnt for w in ws) / n / 1000 if n else None

    def p99(ws: list[Window]) -> float | None:
        return max(w.p99 for w in ws if w.cnt) / 1000 if any(w.cnt for w in ws) else None

    queue, rtt = [b.int_latency for b in brokers], [b.rtt for b in brokers]
    t = stats.topics.get(topic) or TopicStats()
    out = {
        "queue_ms": weighted(queue),
        "rtt_ms": weighted(rtt),
        "queue_p99_ms": p99(queue),
        "rtt_p99_ms": p99(rtt),
        "inflight": float(sum(b.waitresp_cnt for b in brokers)),
        "batch_bytes": t.batchsize.avg if t.batchsize.cnt else None,
        "batch_records": t.batchcnt.avg if t.batchcnt.cnt else None,
    }
    return {k: float(v) for k, v in out.items() if v is not None}


def consumer_state(doc: Mapping[str, Any], topic: str) -> str:
    """One librdkafka consumer statistics document (its STATISTICS.md) in words: the group's state, and how many
    of the topic's partitions are in each fetch state, with their leaders and the offsets they wait at."""
    stats = Stats.of(doc)
    g = stats.cgrp
    t = stats.topics.get(topic) or TopicStats()
    parts = {p: v for p, v in t.partitions.items() if p != "-1"}

    def offset(v: Any) -> str:  # librdkafka's -1001 (and any logical offset): none known yet
        return str(v) if isinstance(v, int) and v >= 0 else "not known"

    states: dict[str, list[str]] = {}
    for p, v in sorted(parts.items(), key=lambda kv: int(kv[0])):
        where = f"{p} (leader {v.leader}, next offset {offset(v.next_offset)}, high watermark {offset(v.hi_offset)})"
        states.setdefault(str(v.fetch_state), []).append(where)
    fetch = "; ".join(f"{st}: {', '.join(ps)}" for st, ps in states.items()) or "none known"
    return (
        f"group {g.state}/{g.join_state}, {g.assignment_size} partition(s) assigned, "
        f"rebalances {g.rebalance_cnt}; fetch state per partition: {fetch}"
    )
