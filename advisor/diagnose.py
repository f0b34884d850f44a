"""Which resource bound a trial: rules over one row of the analysis's trials table, each read from a measurement.

The row carries what the records measured: the busiest broker's in/out rate per second (produce +
replication, from JMX), the request-handler idle fraction (a counter difference over the window), the
brokers' counters over the window (produce requests, records and bytes per request, the produce request's
time split, log flushes per request: spark.series.evidence), the client's own figures (its busiest loop's
CPU, buffer-full events, the machine's CPU), and the configs read back: the brokers' and the topic's. The
profile gives the ceilings (NIC per host, disk per log dir). A config explains a measurement; it never
decides a bound on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor import links
from core.units import number, number_of
from loadgen import clientside
from records.profile import ClusterProfile, Limits
from records.trialrow import TrialRow

SATURATED = 0.85  # a link or disk carrying ≥ 85 % of its measured rate is the bottleneck
IDLE_LOW = 0.20  # Kafka's own guidance: idle below 20-30 % means the pool is saturated
FSYNC_EVERY = 100  # log.flush.interval.messages at or below this forces a flush per request or so
FLUSH_PER_REQUEST = 0.5  # a log flush for every other produce request or more: flushes are forced
# ... and fsync taking ≥ 5 % of each broker's time. Without it a trickle of produce requests looks forced: a
# KRaft node also flushes its metadata log, a few times a second, which at a low produce rate is more than one
# flush per request.
FLUSH_TIME_SHARE = 0.05
SMALL_REQUEST_BYTES = 16384  # produce requests below Kafka's default batch.size: small batches (small_batches)
BATCH_FILLED = 0.9  # a batch this full of its batch.size was closed by the size, not by the linger
LOOP_HOT = 0.85  # a client loop at ≥ 85 % of a core is the client's limit
QUEUE_SLACK_MS = clientside.QUEUE_SLACK_MS
MACHINE_HOT = 90.0  # % of the machine's CPU: brokers and clients sharing it saturate it

CONSUMER_BEHIND = 0.9  # consumers receiving below 90 % of what the producers had acknowledged: the backlog grows
LEADER_HEAVY = 1.5  # the busiest broker takes ≥ 1.5× its fair 1/N of the produce bytes: leaders are not spread

BOUNDS = (
    "network_in",
    "network_out",
    "degraded_link",
    "forced_flush",
    "disk",
    "request_handlers",
    "network_threads",
    "replication",
    "partitions",
    "consumer",
    "cpu",
    "small_batches",
    "client",
    "none",
    "unknown",
)

# What each part of a produce request's time means (cluster.metrics.PRODUCE_TIMES), and what moves it.
TIME_PARTS = {
    "produce_queue_ms": "queued for a request handler (num.io.threads)",
    "produce_local_ms": "on the leader: append and any forced flush",
    "produce_remote_ms": "waiting for the followers to fetch it (acks=all: replication)",
    "produce_response_queue_ms": "queued for a network thread (num.network.threads)",
    "produce_response_send_ms": "sending the response",
}


@dataclass(frozen=True)
class Diagnosis:
    bound: str  # one of BOUNDS
    reason: str


def flush_every(broker: Mapping[str, Any] | None) -> float | None:
    """log.flush.interval.messages as a number, when every broker agrees on it."""
    return number_of(broker, "log.flush.interval.messages")


def flush_settings(row: TrialRow) -> dict[str, str]:
    """The settings that force flushes, where they are set below their defaults: the topic's overrides
    (flush.messages, flush.ms) win over the brokers' (log.flush.interval.*)."""
    topic, broker = row.topic_config or {}, row.broker or row.params
    out = {}
    scopes = (
        ("topic", topic, ("flush.messages", "flush.ms")),
        ("broker", broker, ("log.flush.interval.messages", "log.flush.interval.ms")),
    )
    for scope, conf, keys in scopes:
        for k in keys:
            v = number_of(conf, k)
            if v is not None and v < 2**62:  # Long.MAX_VALUE: never
                out[f"{scope} {k}"] = str(conf[k])
    return out


def time_split(row: TrialRow) -> list[tuple[str, float]]:
    """A produce request's measured time, ms per request, largest part first."""
    parts = [(k, number(getattr(row, k))) for k in TIME_PARTS]
    return sorted(((k, v) for k, v in parts if v is not None), key=lambda kv: -kv[1])


def where_time_goes(row: TrialRow) -> str:
    split = time_split(row)
    total = number(row.produce_total_ms)
    if not split or not total:
        return ""
    k, v = split[0]
    return f"a produce request takes {total:.1f} ms, most of it ({v:.1f} ms) {TIME_PARTS[k]}"


def _network(row: TrialRow, nic: float | None) -> Diagnosis | None:
    b_in, b_out = number(row.broker_in_max_mb_s), number(row.broker_out_max_mb_s)
    if nic and b_in is not None and b_in >= SATURATED * nic:
        return Diagnosis(
            "network_in", f"busiest broker receives {b_in:.1f} MB/s = {b_in / nic:.0%} of its {nic:g} MB/s link"
        )
    if nic and b_out is not None and b_out >= SATURATED * nic:
        return Diagnosis(
            "network_out", f"busiest broker sends {b_out:.1f} MB/s = {b_out / nic:.0%} of its {nic:g} MB/s link"
        )
    return None


def _degraded_link(row: TrialRow) -> Diagnosis | None:
    why = links.degraded(row)
    return Diagnosis("degraded_link", why) if why else None


def flush_time_share(row: TrialRow, brokers: int = 3) -> float | None:
    """The share of each broker's time spent flushing the log over the window (measured), when known."""
    fpr, ms, rps = (
        number(getattr(row, k)) for k in ("log_flushes_per_request", "log_flush_ms", "produce_requests_per_s")
    )
    if fpr is None or ms is None or rps is None:
        return None
    return fpr * rps * ms / 1000 / max(1, brokers)


def forced_flush(row: TrialRow, brokers: int = 3) -> bool:
    """Flushes for every other produce request or more, taking a material share of the brokers' time."""
    fpr, share = number(row.log_flushes_per_request), flush_time_share(row, brokers)
    return fpr is not None and fpr >= FLUSH_PER_REQUEST and (share is None or share >= FLUSH_TIME_SHARE)


def _flush(row: TrialRow, brokers: int) -> Diagnosis | None:
    if not forced_flush(row, brokers):
        return None
    fpr = number(row.log_flushes_per_request) or 0.0
    ms, rps, share = (
        number(row.log_flush_ms),
        number(row.produce_requests_per_s),
        flush_time_share(row, brokers),
    )
    each = f", {ms:.2f} ms each" if ms is not None else ""
    per_s = f" ({fpr * rps:,.0f} flushes/s)" if rps else ""
    busy = f", {share:.0%} of each broker's time" if share is not None else ""
    cause = ", ".join(f"{k}={v}" for k, v in flush_settings(row).items()) or "no flush setting read back"
    why = f"{fpr:.2f} log flushes per produce request{per_s}{each}{busy}, measured; set by: {cause}"
    return Diagnosis("forced_flush", why)


def _pools(row: TrialRow) -> Diagnosis | None:
    rh, npi = number(row.request_handler_idle), number(row.network_processor_idle)
    if rh is not None and rh < IDLE_LOW:
        q = number(row.produce_queue_ms)
        wait = f"; a produce request waits {q:.1f} ms for one" if q is not None else ""
        why = f"request handler pool {rh:.0%} idle over the window (num.io.threads){wait}"
        return Diagnosis("request_handlers", why)
    if npi is not None and npi < IDLE_LOW:
        return Diagnosis("network_threads", f"network processors {npi:.0%} idle (num.network.threads saturated)")
    return None


def _replication(row: TrialRow) -> Diagnosis | None:
    """Followers that fell out of the ISR or left partitions under-replicated during the window (measured)."""
    shrinks, ur = number(row.isr_shrinks) or 0, number(row.under_replicated_seconds) or 0
    if not shrinks and not ur:
        return None
    ratio, lag = number(row.replication_ratio), number(row.replica_lag_max)
    rep = f"; followers copied {ratio:.2f}× the produced bytes" if ratio is not None else ""
    rep += f"; the furthest follower was {lag:,.0f} messages behind its leader" if lag is not None else ""
    return Diagnosis(
        "replication", f"the ISR shrank {shrinks:.0f} times and partitions were under-replicated for {ur:.0f} s{rep}"
    )


def _consumers(row: TrialRow, brokers: int) -> Diagnosis | None:
    """Consumers behind the producers (the backlog grew over the window), or a cluster whose partitions do not
    give every consumer, or every broker, a share of the work."""
    pub, con = number(row.publish_mb_s), number(row.client_consume_mb_s)
    idle = int(number(row.consumers_idle) or 0)
    p = row.params
    parts, cons = number_of(p, "partitions"), number_of(p, "consumers")
    behind = pub is not None and con is not None and pub > 0 and con < CONSUMER_BEHIND * pub
    lag = f"consumers received {con:.2f} MB/s of the {pub:.2f} MB/s acknowledged (the backlog grew)" if behind else ""
    if idle and cons:
        why = f"{idle} of {cons:.0f} consumers received nothing: {parts or 1:.0f} partition(s) for {cons:.0f} consumers"
        return Diagnosis("partitions", why + (f"; {lag}" if lag else ""))
    share = number(row.leader_share)
    if share is not None and parts is not None and parts < brokers and share >= LEADER_HEAVY / brokers:
        why = (
            f"{parts:.0f} partition(s) on {brokers} brokers: the busiest broker took {share:.0%} of the produce "
            f"bytes (a fair share is {1 / brokers:.0%}); the others only follow"
        )
        return Diagnosis("partitions", why)
    if behind:
        loop = number(row.consumer_loop_cpu_max)
        cpu = f"; their busiest loop used {loop:.0%} of a core" if loop is not None else ""
        return Diagnosis("consumer", lag + cpu)
    return None


def _never_waited(row: TrialRow) -> str | None:
    """At the maximum rate, a producer the cluster never pushed back on made all the load there was: its buffer
    (almost) never filled and its records did not queue beyond the linger. Then the client was the limit,
    whatever share of a core its loop got on a shared machine. None when that is not what was measured."""
    if row.rate_mode != "max-rate":
        return None
    full, secs = number(row.buffer_full_events) or 0.0, number(row.measure_seconds) or 0.0
    return clientside.never_waited(full, secs, number(row.client_queue_ms), number_of(row.params, "linger.ms"))


def capped_batches(row: TrialRow) -> bool:
    """The producer's batches filled to a batch.size below SMALL_REQUEST_BYTES (librdkafka's batch sizes, which
    count the batch's own overhead): the setting, not the traffic, made them small, at any rate the run was held at
    (a paced run's buffer never fills, so that witness is missing there)."""
    bb, size = number(row.batch_bytes), number_of(row.params, "batch.size")
    return bb is not None and size is not None and size < SMALL_REQUEST_BYTES and bb >= BATCH_FILLED * size


def small_batches(row: TrialRow) -> Diagnosis | None:
    """Produce requests smaller than Kafka's default batch while the producer's buffer was full (the cluster pushed
    back at the maximum rate) or its batches were filled to a small batch.size: per-request cost sets the rate."""
    bpr, full = number(row.bytes_per_request), row.buffer_full_events or 0
    if bpr is None or bpr >= SMALL_REQUEST_BYTES or not (full or capped_batches(row)):
        return None
    recs, rps = number(row.records_per_request), number(row.produce_requests_per_s)
    bb, size = number(row.batch_bytes), row.params.get("batch.size")
    batches = ""
    if bb is not None:
        batches = f"; the producer's batches {bb / 1024:.1f} KiB" + (f" (batch.size {size})" if size else "")
    witness = f"the producer's buffer was full {full} times" if full else f"its batches filled batch.size={size}"
    return Diagnosis(
        "small_batches",
        f"produce requests carry {bpr / 1024:.1f} KiB each ({recs or 0:.1f} records) at {rps or 0:,.0f} requests/s "
        f"while {witness}: per-request cost, not bytes, sets the rate" + batches,
    )


def _clients(row: TrialRow) -> Diagnosis | None:
    """Small batches (a cause the brokers measure), then the client's own loop, then the shared machine."""
    found = small_batches(row)
    if found is not None:
        return found
    loop, cpu = number(row.client_loop_cpu_max), number(row.machine_cpu_percent)
    never = _never_waited(row)
    if loop is not None and loop >= LOOP_HOT:
        also = f"; at the maximum rate the producer never waited for the cluster: {never}" if never else ""
        return Diagnosis(
            "client", f"the load generator's busiest loop used {loop:.0%} of a core{also}: add client processes"
        )
    if never is not None:
        share = f"; its send loop got {loop:.0%} of a core" if loop is not None else ""
        machine = f" on a machine at {cpu:.0f} % CPU" if cpu is not None else ""
        return Diagnosis(
            "client", f"at the maximum rate the producer never waited for the cluster: {never}{share}{machine}"
        )
    if cpu is not None and cpu >= MACHINE_HOT:
        bc = number(row.broker_cpu)
        brokers = f"; the brokers' JVMs {bc:.0%} of it each" if bc is not None else ""
        return Diagnosis("cpu", f"the machine's CPU at {cpu:.0f} % (clients and brokers share it){brokers}")
    return None


def _unsaturated(row: TrialRow) -> str:
    if row.rate_mode == "fixed-rate":
        return "the rate was the workload's fixed rate, held without saturating anything"
    return "the rate is set by round trips (acks=all waits for the ISR)"


def binding(row: TrialRow, profile: ClusterProfile | None) -> Diagnosis:
    """What bound the trial's run. A sweep's sustainable-rate trial's evidence is its max-rate probe's (the run
    that pushed to the limit; the rate that held saturates nothing by definition): said so, with the probe's rate.
    A bench run's is its search run's, said so with the rate it held."""
    d = _binding(row, profile)
    probe = number(row.throughput_mb_s)
    if row.objective != "sustainable_mb_s" or row.state != "complete":
        return d
    if row.stage == "bench":  # a bench run's record is its search run: steered steps, no max-rate window
        return Diagnosis(d.bound, f"over its search's steps (it held {number(row.mb_s) or 0:.2f} MB/s): {d.reason}")
    if probe is not None:
        return Diagnosis(d.bound, f"at its max-rate probe ({probe:.2f} MB/s): {d.reason}")
    return d


def _binding(row: TrialRow, profile: ClusterProfile | None) -> Diagnosis:
    lim = Limits.of(profile)
    nic, disk_mb_s = lim.nic_mb_s, lim.disk_mb_s
    if row.state != "complete" or row.mb_s is None:
        return Diagnosis("none", f"no measurement: {row.fail_reason or row.state}")
    if row.rate_mode == "omb-import":  # records.omb.imported_result: OMB keeps no evidence to read
        return Diagnosis(
            "unknown",
            "an imported OpenMessaging Benchmark result: it carries no broker metrics or client statistics, so no "
            "resource can be named (its rate was its workload's producerRate)",
        )
    brokers = lim.brokers
    found = _network(row, nic) or _degraded_link(row) or _flush(row, brokers)
    b_in = number(row.broker_in_max_mb_s)
    if found is None and disk_mb_s and b_in is not None and b_in >= SATURATED * disk_mb_s:
        why = f"busiest broker writes {b_in:.1f} MB/s = {b_in / disk_mb_s:.0%} of its log dir's {disk_mb_s:g} MB/s"
        found = Diagnosis("disk", why)
    found = found or _pools(row) or _replication(row) or _consumers(row, brokers) or _clients(row)
    if found is not None:
        return found
    parts = []
    if nic and b_in is not None:
        parts.append(f"links at {b_in / nic:.0%}")
    rh = number(row.request_handler_idle)
    if rh is not None:
        parts.append(f"request handlers {rh:.0%} idle")
    time = where_time_goes(row)
    pushed = (
        f"; the producer's buffer filled {row.buffer_full_events} times: back-pressure from the cluster"
        if row.buffer_full_events
        else ""
    )
    return Diagnosis(
        "none",
        "no resource saturated"
        + (f" ({', '.join(parts)})" if parts else "")
        + pushed
        + (f"; {time}" if time else f": {_unsaturated(row)}"),
    )
