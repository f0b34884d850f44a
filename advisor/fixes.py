"""The settings that move a bound or a latency part, with values within the catalogue's ranges and cross-key
rules (brokerconf.catalogue): the actions the advisor's rules and live advice recommend.
"""

from __future__ import annotations

from typing import Any

from advisor import diagnose
from advisor.trials import num
from brokerconf import catalogue


def binding_fix(bound: str, t: dict[str, Any], brokers: int = 3) -> dict[str, str]:
    """The settings that move `bound`, with values within the catalogue's ranges and rules (a thread pool
    doubles, Kafka's largest legal step; a batch grows to 128 KiB and waits up to 5 ms to fill)."""
    p = t.get("params") or {}
    if bound == "replication":
        return replication_fix(p, brokers)
    if bound in ("partitions", "consumer"):
        return consumer_fix(bound, p, brokers)
    if bound == "client":
        hot_consumer = (num(t.get("consumer_loop_cpu_max")) or 0) >= diagnose.LOOP_HOT
        key = "consumers" if hot_consumer else "producers"
        return {key: str(2 * int(num(p.get(key)) or 1))}
    if bound in ("request_handlers", "network_threads"):
        key = "num.io.threads" if bound == "request_handlers" else "num.network.threads"
        cur = num(p.get(key)) or catalogue.get(key).default
        return {key: str(int(cur) * 2)} if isinstance(cur, int | float) else {}
    if bound == "small_batches":
        size = max(131072, int(num(p.get("batch.size")) or 0))
        out = {"batch.size": str(size), "linger.ms": str(max(5, int(num(p.get("linger.ms")) or 0)))}
        memory = num(p.get("buffer.memory"))
        if memory is not None and memory < size:  # buffer.memory ≥ batch.size (catalogue.RULES)
            out["buffer.memory"] = str(size)
        return out
    if bound == "forced_flush":
        out = {}
        for scoped in diagnose.flush_settings(t):
            scope, key = scoped.split(" ", 1)
            default = catalogue.get(key).default if scope == "broker" else None
            out[key] = "(delete the topic override)" if scope == "topic" else str(default or "(unset: Kafka's default)")
        return out
    return {}


def _fetchers_above(cur: int, brokers: int) -> int:
    """The next fetcher count above `cur` that is not a multiple of the broker count (docs/reference.md §1)."""
    nxt = cur + 1
    while brokers > 1 and nxt % brokers == 0:
        nxt += 1
    return nxt


def replication_fix(p: dict[str, Any], brokers: int) -> dict[str, str]:
    """More fetcher threads than now (never fewer, never a multiple of the brokers), and replica fetches of at
    least two producer batches, with the response limit raised when the fetch would no longer fit in it
    (catalogue.RULES: replica.fetch.response.max.bytes ≥ replica.fetch.max.bytes)."""

    def cur(key: str) -> int:
        d = catalogue.get(key).default
        return int(num(p.get(key)) or (d if isinstance(d, int) else 0))

    fetch = max(2 * cur("replica.fetch.max.bytes"), 2 * int(num(p.get("batch.size")) or 16384))
    fetch = min(fetch, catalogue.INT_MAX)
    out = {
        "num.replica.fetchers": str(_fetchers_above(cur("num.replica.fetchers"), brokers)),
        "replica.fetch.max.bytes": str(fetch),
    }
    if cur("replica.fetch.response.max.bytes") < fetch:
        out["replica.fetch.response.max.bytes"] = str(min(catalogue.INT_MAX, 4 * fetch))
    return out


def consumer_fix(bound: str, p: dict[str, Any], brokers: int) -> dict[str, str]:
    """Partitions for every consumer and broker (a multiple of the brokers, so leaders stay balanced), then
    twice the consumers, up to the partitions."""

    def count(key: str) -> int:
        return max(1, int(num(p.get(key)) or 1))

    parts, cons, prods = count("partitions"), count("consumers"), count("producers")
    want_cons = cons if bound == "partitions" else 2 * cons
    want_parts = max(parts, brokers, want_cons, prods)
    want_parts = -(-want_parts // brokers) * brokers
    out = {"partitions": str(want_parts)} if want_parts > parts else {}
    if want_cons > cons:
        out["consumers"] = str(want_cons)
    return out


def behind(t: dict[str, Any]) -> tuple[float, float] | None:
    """(produced, consumed) MB/s of a trial whose consumers fell behind: as the load generator counted them
    (acknowledged vs received), else as the brokers did (bytes in vs bytes out to consumers)."""
    for a, b in (("publish_mb_s", "client_consume_mb_s"), ("produce_mb_s", "consume_mb_s")):
        pub, con = num(t.get(a)), num(t.get(b))
        if pub and con is not None:
            return (pub, con) if con < diagnose.CONSUMER_BEHIND * pub else None
    return None


def latency_fix(part: str, t: dict[str, Any], brokers: int = 3) -> dict[str, str]:
    """The setting that moves the latency part `part` (advisor.latency.LATENCY_PARTS) down, with a legal value."""
    p = t.get("params") or {}
    if part == "client_queue_ms":
        linger = num(p.get("linger.ms"))
        queue = num(t.get("client_queue_ms")) or 0
        if linger is not None and linger >= 1 and queue <= 2 * linger + diagnose.QUEUE_SLACK_MS:  # the linger's wait
            return {"linger.ms": str(int(linger // 10))}
        return {"producer rate": "lower: records queue behind a full batch pipeline (the sustainable rate)"}
    if part == "produce_queue_ms":
        return binding_fix("request_handlers", t)
    if part == "produce_response_queue_ms":
        return binding_fix("network_threads", t)
    if part == "produce_local_ms":
        return binding_fix("forced_flush", t) or {"log dirs": "faster disks (the leader's append is slow)"}
    if part == "produce_remote_ms":
        return {"num.replica.fetchers": replication_fix(p, brokers)["num.replica.fetchers"]}
    if part == "consumer_ms":
        return consumer_fix("consumer", p, brokers) if behind(t) else {"fetch.wait.max.ms": "100"}
    return {}
