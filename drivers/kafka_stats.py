"""What librdkafka's statistics documents (its STATISTICS.md) say, in the terms kafkatune reads: a producer's queue
time, round trip, requests in flight and batch size (drivers.api.CLIENT_STATS), and where a consumer waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STATS_INTERVAL_MS = 1000


def client_stats(doc: Mapping[str, Any], topic: str) -> dict[str, float]:
    """One librdkafka statistics document as api.CLIENT_STATS: queue time and round trip averaged over the
    brokers (weighted by their sample counts, µs to ms) and their p99s (the highest broker's), requests in flight
    summed, the topic's batch size."""

    def weighted(field: str) -> float | None:
        ws = [(b[field]["avg"], b[field]["cnt"]) for b in brokers if (b.get(field) or {}).get("cnt")]
        n = sum(c for _, c in ws)
        return sum(a * c for a, c in ws) / n / 1000 if n else None

    def p99(field: str) -> float | None:
        ws = [b[field]["p99"] for b in brokers if (b.get(field) or {}).get("cnt")]
        return max(ws) / 1000 if ws else None

    brokers = [b for b in (doc.get("brokers") or {}).values() if int(b.get("nodeid", -1)) >= 0]
    t = (doc.get("topics") or {}).get(topic) or {}
    out = {
        "queue_ms": weighted("int_latency"),
        "rtt_ms": weighted("rtt"),
        "queue_p99_ms": p99("int_latency"),
        "rtt_p99_ms": p99("rtt"),
        "inflight": float(sum(int(b.get("waitresp_cnt") or 0) for b in brokers)),
        "batch_bytes": (t.get("batchsize") or {}).get("avg") if (t.get("batchsize") or {}).get("cnt") else None,
        "batch_records": (t.get("batchcnt") or {}).get("avg") if (t.get("batchcnt") or {}).get("cnt") else None,
    }
    return {k: float(v) for k, v in out.items() if v is not None}


def consumer_state(doc: Mapping[str, Any], topic: str) -> str:
    """One librdkafka consumer statistics document (its STATISTICS.md) in words: the group's state, and how many
    of the topic's partitions are in each fetch state, with their leaders and the offsets they wait at."""
    g = doc.get("cgrp") or {}
    parts = {p: v for p, v in ((doc.get("topics") or {}).get(topic, {}).get("partitions") or {}).items() if p != "-1"}

    def offset(v: Any) -> str:  # librdkafka's -1001 (and any logical offset): none known yet
        return str(v) if isinstance(v, int) and v >= 0 else "not known"

    states: dict[str, list[str]] = {}
    for p, v in sorted(parts.items(), key=lambda kv: int(kv[0])):
        where = (
            f"{p} (leader {v.get('leader')}, next offset {offset(v.get('next_offset'))}, high watermark "
            f"{offset(v.get('hi_offset'))})"
        )
        states.setdefault(str(v.get("fetch_state")), []).append(where)
    fetch = "; ".join(f"{st}: {', '.join(ps)}" for st, ps in states.items()) or "none known"
    return (
        f"group {g.get('state')}/{g.get('join_state')}, {g.get('assignment_size')} partition(s) assigned, "
        f"rebalances {g.get('rebalance_cnt')}; fetch state per partition: {fetch}"
    )
