"""Which resource bound a trial: rules over one row of the analysis's trials table.

The row carries what the records measured: the busiest broker's in/out rate per second (produce +
replication, from JMX), the brokers' request-handler and network-processor idle fractions, the client's
own flags (buffer full, CPU), and the broker configs read back during the trial. The profile gives the
ceilings (NIC per host, disk per log dir, fsyncs per second).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SATURATED = 0.85  # a link or disk carrying ≥ 85 % of its measured rate is the bottleneck
IDLE_LOW = 0.20  # Kafka's own guidance: idle below 20-30 % means the pool is saturated
FSYNC_EVERY = 100  # log.flush.interval.messages at or below this forces a flush per request or so

BOUNDS = ("network_in", "network_out", "disk", "request_handlers", "network_threads", "client", "none")


@dataclass(frozen=True)
class Diagnosis:
    bound: str  # one of BOUNDS
    reason: str


def _num(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def flush_every(broker: dict[str, Any] | None) -> float | None:
    """log.flush.interval.messages as a number, when every broker agrees on it."""
    return _num((broker or {}).get("log.flush.interval.messages"))


def binding(row: dict[str, Any], profile: dict[str, Any] | None) -> Diagnosis:
    net = (profile or {}).get("network") or {}
    disk = (profile or {}).get("disk") or {}
    nic = _num(net.get("nic_mb_s_measured"))
    disk_mb_s = _num(disk.get("write_mb_s_measured"))
    b_in = _num(row.get("broker_in_max_mb_s"))
    b_out = _num(row.get("broker_out_max_mb_s"))
    if row.get("state") != "complete" or row.get("mb_s") is None:
        return Diagnosis("none", f"no measurement: {row.get('fail_reason') or row.get('state')}")
    if nic and b_in is not None and b_in >= SATURATED * nic:
        return Diagnosis(
            "network_in", f"busiest broker receives {b_in:.1f} MB/s = {b_in / nic:.0%} of its {nic:g} MB/s link"
        )
    if nic and b_out is not None and b_out >= SATURATED * nic:
        return Diagnosis(
            "network_out", f"busiest broker sends {b_out:.1f} MB/s = {b_out / nic:.0%} of its {nic:g} MB/s link"
        )
    every = flush_every(row.get("broker"))
    rh = _num(row.get("request_handler_idle"))
    if every is not None and every <= FSYNC_EVERY:
        fs = _num(disk.get("fsync_per_s"))
        extra = f"; the log dir takes {fs:g} small fsyncs/s" if fs else ""
        idle = f"; request handlers {rh:.0%} idle (waiting on fsync)" if rh is not None else ""
        return Diagnosis(
            "disk", f"log.flush.interval.messages={every:g}: an fsync every {every:g} message(s){extra}{idle}"
        )
    if disk_mb_s and b_in is not None and b_in >= SATURATED * disk_mb_s:
        return Diagnosis(
            "disk",
            f"busiest broker writes {b_in:.1f} MB/s = {b_in / disk_mb_s:.0%} of its log dir's {disk_mb_s:g} MB/s",
        )
    if rh is not None and rh < IDLE_LOW:
        return Diagnosis("request_handlers", f"request handler pool {rh:.0%} idle (num.io.threads saturated)")
    npi = _num(row.get("network_processor_idle"))
    if npi is not None and npi < IDLE_LOW:
        return Diagnosis("network_threads", f"network processors {npi:.0%} idle (num.network.threads saturated)")
    cpu = _num(row.get("machine_cpu_percent"))
    if row.get("client_bound") or (cpu is not None and cpu >= 90):
        why = []
        if row.get("buffer_full_events"):
            why.append(f"producer buffer full {row['buffer_full_events']} times")
        if cpu is not None:
            why.append(f"load host CPU {cpu:.0f} %")
        return Diagnosis("client", "the load generator was the limit: " + (", ".join(why) or "flagged by the run"))
    parts = []
    if nic and b_in is not None:
        parts.append(f"links at {b_in / nic:.0%}")
    if rh is not None:
        parts.append(f"request handlers {rh:.0%} idle")
    return Diagnosis(
        "none",
        "no resource saturated"
        + (f" ({', '.join(parts)})" if parts else "")
        + ": the rate is set by round trips (acks=all waits for the ISR); bigger batches or more producers help",
    )
