"""The catalogue of sweepable keys: scope, type, legal range, Kafka's default, and how each is applied.

Scopes and how a value reaches the system:

    producer / consumer   client config, passed to every producer / consumer of the trial
    workload              a field of the bench workload (producer count, consumer count)
    topic                 set when the trial's fresh topic is created (partitions)
    broker                `dynamic`: per broker id through the Admin API, no restart (KIP-226);
                          `restart`: written to server.properties, then a rolling restart

Defaults are Apache Kafka's (Java client and broker, 4.x), so a "defaults" baseline is what an untuned
cluster does. Legal ranges are what Kafka (or librdkafka, the client we drive) accepts; a spec may only
narrow them. Cross-key rules are checked on every configuration before it is applied.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["producer", "consumer", "workload", "topic", "broker"]
Apply = Literal["client", "workload", "topic", "dynamic", "restart"]
Kind = Literal["int", "choice"]

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647
BROKER_MESSAGE_MAX_BYTES = 1048588  # broker message.max.bytes default: the largest record batch it accepts


@dataclass(frozen=True)
class Param:
    name: str
    scope: Scope
    apply: Apply
    kind: Kind
    default: int | str | None  # Kafka's default; None = unset (Kafka derives it)
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    thread_pool: bool = False  # dynamic thread pools change by at most ×2 / ÷2 per step
    workload_field: str | None = None  # for scope workload/topic: the bench workload field it sets
    doc: str = ""

    def check(self, value: object) -> str | None:
        """None if `value` is legal for this key, otherwise what is allowed."""
        if self.kind == "choice":
            if str(value) not in self.choices:
                return f"one of {', '.join(self.choices)}"
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            return f"an integer in [{self.low}, {self.high}]"
        assert self.low is not None and self.high is not None
        if not self.low <= value <= self.high:
            return f"an integer in [{self.low}, {self.high}]"
        return None


def _p(name: str, scope: Scope, apply: Apply, default: int | str | None, **kw: object) -> Param:
    kind: Kind = "choice" if "choices" in kw else "int"
    return Param(name, scope, apply, kind, default, **kw)  # type: ignore[arg-type]


_PARAMS = [
    # --- producer (client config; librdkafka accepts the Java names used here) ---
    _p(
        "batch.size",
        "producer",
        "client",
        16384,
        low=1,
        high=BROKER_MESSAGE_MAX_BYTES,
        unit="bytes",
        doc="Bytes per partition batch. Larger batches: fewer requests, more throughput, more latency.",
    ),
    _p(
        "linger.ms",
        "producer",
        "client",
        5,
        low=0,
        high=900000,
        unit="ms",
        doc="How long a batch waits for more records before it is sent.",
    ),
    _p(
        "acks",
        "producer",
        "client",
        "all",
        choices=("0", "1", "all"),
        doc="all = the leader waits for min.insync.replicas in-sync replicas (synchronous replication).",
    ),
    _p("compression.type", "producer", "client", "none", choices=("none", "gzip", "snappy", "lz4", "zstd")),
    _p(
        "buffer.memory",
        "producer",
        "client",
        33554432,
        low=1024,
        high=INT_MAX,
        unit="bytes",
        doc="Producer buffer; when full, send() blocks and latency is queueing time.",
    ),
    _p("max.in.flight.requests.per.connection", "producer", "client", 5, low=1, high=1000000),
    _p(
        "producers",
        "workload",
        "workload",
        1,
        low=1,
        high=256,
        workload_field="producersPerTopic",
        doc="Producer processes per topic.",
    ),
    # --- consumer ---
    _p(
        "fetch.max.bytes",
        "consumer",
        "client",
        52428800,
        low=1000000,
        high=2147483135,
        unit="bytes",
        doc="librdkafka needs at least its message.max.bytes (1,000,000).",
    ),
    _p("max.partition.fetch.bytes", "consumer", "client", 1048576, low=1, high=1000000000, unit="bytes"),
    _p("fetch.min.bytes", "consumer", "client", 1, low=1, high=100000000, unit="bytes"),
    _p(
        "consumers",
        "workload",
        "workload",
        1,
        low=1,
        high=256,
        workload_field="consumerPerSubscription",
        doc="Consumers in the (one) consumer group.",
    ),
    # --- topic ---
    _p(
        "partitions",
        "topic",
        "topic",
        1,
        low=1,
        high=10000,
        workload_field="partitionsPerTopic",
        doc="Partitions of the trial's topic (broker num.partitions default: 1).",
    ),
    # --- broker, dynamic per broker id (KIP-226) ---
    _p(
        "num.replica.fetchers",
        "broker",
        "dynamic",
        1,
        low=1,
        high=256,
        thread_pool=True,
        doc="Fetcher threads per source broker; a multiple of the broker count leaves some idle.",
    ),
    _p("num.io.threads", "broker", "dynamic", 8, low=1, high=256, thread_pool=True),
    _p("num.network.threads", "broker", "dynamic", 3, low=1, high=256, thread_pool=True),
    _p(
        "log.flush.interval.messages",
        "broker",
        "dynamic",
        LONG_MAX,
        low=1,
        high=LONG_MAX,
        doc="Messages written before fsync; Kafka's default leaves flushing to the OS.",
    ),
    _p(
        "log.flush.interval.ms",
        "broker",
        "dynamic",
        None,
        low=0,
        high=LONG_MAX,
        unit="ms",
        doc="Unset by default (the scheduler interval, never, applies).",
    ),
    # --- broker, read at start only ---
    _p("replica.fetch.max.bytes", "broker", "restart", 1048576, low=1, high=INT_MAX, unit="bytes"),
    _p("replica.fetch.response.max.bytes", "broker", "restart", 10485760, low=1, high=INT_MAX, unit="bytes"),
]

CATALOGUE: dict[str, Param] = {p.name: p for p in _PARAMS}
DYNAMIC_KEYS = tuple(p.name for p in _PARAMS if p.apply == "dynamic")
RESTART_KEYS = tuple(p.name for p in _PARAMS if p.apply == "restart")
# Broker keys never swept but read back with every run, because they decide what a result means: with RF 3,
# min.insync.replicas 2 is synchronous replication that survives a broker; 1 is not, 3 stops writes when one is down.
# default.replication.factor is the RF of topics created without one (what a live cluster's check is judged by).
CONTEXT_KEYS = ("min.insync.replicas", "default.replication.factor")
READ_BACK_KEYS = (*DYNAMIC_KEYS, *RESTART_KEYS, *CONTEXT_KEYS)


def param(name: str) -> Param:
    """The catalogue's entry for `name`; a KeyError naming the sweepable keys when it has none."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"unknown key {name!r} (sweepable: {', '.join(CATALOGUE)})") from None


def defaults() -> dict[str, int | str]:
    """Kafka's default of every key that has one."""
    return {p.name: p.default for p in _PARAMS if p.default is not None}


def short(cfg: Mapping[str, Any]) -> str:
    """The keys of `cfg` that differ from Kafka's defaults, compactly (sizes in K and M)."""
    parts = []
    for k, v in cfg.items():
        p = param(k)
        if p.default is not None and str(p.default) == str(v):
            continue
        val = str(v)
        if p.unit == "bytes" and isinstance(v, int) and v >= 1024:
            val = f"{v / 1024:.0f}K" if v < 1024 * 1024 else f"{v / 1048576:.1f}M"
        parts.append(f"{k}={val}")
    return " ".join(parts) or "(defaults)"


# ---- cross-key rules -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """`left` ≥ `right` (a key, or a constant); `why` says what breaks otherwise."""

    left: str
    right: str | int
    why: str

    def text(self) -> str:
        return f"{self.left} ≥ {self.right}"


RULES = (
    Rule("buffer.memory", "batch.size", "a batch must fit in the producer buffer"),
    Rule("fetch.max.bytes", "max.partition.fetch.bytes", "one partition's fetch must fit in the whole fetch"),
    Rule(
        "replica.fetch.response.max.bytes",
        "replica.fetch.max.bytes",
        "one partition's replica fetch must fit in the whole response",
    ),
    Rule(
        "replica.fetch.max.bytes",
        "batch.size",
        "a follower must be able to fetch a whole producer batch in one request",
    ),
)


def _resolve(v: Mapping[str, object], key: str | int) -> int | None:
    if isinstance(key, int):
        return key
    x = v.get(key, CATALOGUE[key].default if key in CATALOGUE else None)
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def broken_rules(values: Mapping[str, object]) -> list[str]:
    """Rules a full configuration breaks (keys not given take Kafka's default)."""
    out = []
    for r in RULES:
        a, b = _resolve(values, r.left), _resolve(values, r.right)
        if a is not None and b is not None and a < b:
            out.append(f"{r.text()} is broken ({r.left}={a}, {r.right}={b}): {r.why}")
    return out


def infeasible_rules(bounds: Mapping[str, tuple[int, int]]) -> list[str]:
    """Rules no configuration within `bounds` (key -> (min, max)) can satisfy."""
    out = []
    for r in RULES:
        lb = bounds.get(r.left)
        rb = bounds.get(r.right) if isinstance(r.right, str) else (r.right, r.right)
        if lb is None and isinstance(CATALOGUE[r.left].default, int):
            d = CATALOGUE[r.left].default
            assert isinstance(d, int)
            lb = (d, d)
        if rb is None and isinstance(r.right, str) and isinstance(CATALOGUE[r.right].default, int):
            d = CATALOGUE[r.right].default
            assert isinstance(d, int)
            rb = (d, d)
        if lb is not None and rb is not None and lb[1] < rb[0]:
            out.append(f"{r.text()} can never hold: {r.left} is at most {lb[1]}, {r.right} at least {rb[0]}")
    return out


# ---- legal steps for dynamic thread pools ----------------------------------------------------------
def thread_pool_steps(old: int, new: int) -> Iterator[int]:
    """Values to set, in order, to go from `old` to `new` threads.

    Kafka rejects a thread-pool change outside [old/2, old×2] (DynamicThreadPool.validateReconfiguration),
    so a big change is made in several legal steps.
    """
    cur = old
    while cur != new:
        cur = min(new, cur * 2) if new > cur else max(new, math.ceil(cur / 2))
        yield cur
