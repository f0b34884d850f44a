"""What the client side of a run says about who the limit was: each worker's main loop's CPU, the producers'
full buffers and queue times, the machine's CPU (a load generator that shares the cores with the brokers).

`summary` is the record's `client` part and its warnings; `never_waited` is the rule that a max-rate producer
the cluster never pushed back on made all the load there was (loadgen.scaleout acts on it, advisor.diagnose
names it).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from core.typed import from_json
from loadgen.runner import RawRun, phase_of
from loadgen.worker import FULL_WAIT_S
from records.result import ClientSummary, ProducerStats

LOOP_HOT = 0.85  # a worker's main loop at this fraction of a core or more: the load generator is the limit
HELD_SHARE = 0.02  # a producer held by a full buffer ≤ 2 % of the window made nearly all the load it could
QUEUE_SLACK_MS = 10.0  # a record waiting ≤ 2 × linger.ms + this in the producer's queue did not wait for the cluster
LINGER_DEFAULT_MS = 5.0  # librdkafka's


def never_waited(full: float, secs: float, queue_ms: float | None, linger_ms: float | None) -> str | None:
    """At the maximum rate, a producer the cluster never pushed back on made all the load there was: its buffer
    (almost) never filled (`full` times in `secs`) and its records did not queue beyond the linger. Then the client
    was the limit, whatever share of a core its loop got on a shared machine. None when that is not what was
    measured (no queue time known: no verdict)."""
    linger = LINGER_DEFAULT_MS if linger_ms is None else linger_ms
    held = full * FULL_WAIT_S  # at most this long did a full buffer hold the producer
    if queue_ms is None or not secs or held > HELD_SHARE * secs or queue_ms > 2 * linger + QUEUE_SLACK_MS:
        return None
    return (
        f"a full buffer held it {full:.0f} times in {secs:.0f} s (≤ {held / secs:.1%} of the time) and records "
        f"waited {queue_ms:.1f} ms in its queue (linger.ms {linger:g})"
    )


def _phase(raw: RawRun, second: int) -> str:
    return phase_of(second, raw.workload.warmup_seconds, raw.test_s)


def _by_worker(raw: RawRun) -> dict[tuple[str, int], list[Any]]:
    """Each worker's ticks, in order of their seconds."""
    by_worker: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for t in raw.ticks:
        by_worker[(t.role, t.wid)].append(t)
    for ticks in by_worker.values():
        ticks.sort(key=lambda t: t.second)
    return by_worker


def loop_utils(raw: RawRun) -> dict[str, list[float]]:
    """Per role, each worker's main loop's CPU over the measure window, in cores (LOOP_HOT or more: the limit)."""
    cpu: dict[str, list[float]] = defaultdict(list)
    for (role, _wid), u in loop_util_by_worker(raw).items():
        cpu[role].append(u)
    return cpu


def loop_util_by_worker(raw: RawRun) -> dict[tuple[str, int], float]:
    out = {}
    for key, ticks in _by_worker(raw).items():
        m = [t for t in ticks if _phase(raw, t.second) == "measure"]
        if len(m) >= 2:
            out[key] = (m[-1].thread_cpu_s - m[0].thread_cpu_s) / (m[-1].second - m[0].second)
    return out


def _received_nothing(raw: RawRun) -> str | None:
    """The warning when records were acknowledged but no consumer received any, with where each consumer waited."""
    acked = sum(p.acked for p in raw.producers.values())
    if not (acked and raw.consumers) or any(c.received for c in raw.consumers.values()):
        return None
    said = (
        "; ".join(f"consumer {wid}: {c.client_state}" for wid, c in sorted(raw.consumers.items()) if c.client_state)
        or "the client did not say where it waited"
    )
    return f"no consumer received anything of the {acked:,} acknowledged records: {said}"


def _medians(samples: list[Mapping[str, float]]) -> dict[str, float]:
    """The producers' own statistics (api.CLIENT_STATS), one sample per producer per measured second: the median of
    each key over the samples that have it."""
    keys = sorted({k for x in samples for k in x})
    return {k: round(statistics.median(x[k] for x in samples if k in x), 3) for k in keys}


def summary(raw: RawRun, meas: list[Any]) -> tuple[list[str], ClientSummary]:
    """Was the load generator, not the cluster, the limit? Only when a worker's loop saturates a core. What
    else the client saw is said, not counted as client-bound: buffer-full events (at the maximum rate the
    cluster's back-pressure) and the machine's CPU when the generator shares it with the brokers."""
    warnings: list[str] = []
    by_worker = _by_worker(raw)
    cpu = loop_utils(raw)
    full = sum(t.buffer_full for t in meas)
    # consumers that received nothing in the window while others did: more consumers than partitions
    got = {
        wid: sum(t.msgs for t in ticks if _phase(raw, t.second) == "measure")
        for (role, wid), ticks in by_worker.items()
        if role == "consumer"
    }
    idle = sum(1 for n in got.values() if n == 0) if any(got.values()) else 0
    if idle:
        warnings.append(f"{idle} of {len(got)} consumers received nothing in the measure window (fewer partitions)")
    if (nothing := _received_nothing(raw)) is not None:
        warnings.append(nothing)
    for role, utils in cpu.items():
        hot = [u for u in utils if u > LOOP_HOT]
        if hot:
            warnings.append(
                f"{len(hot)} {role} process(es) had their main loop at ≥85 % of a core: "
                "the load generator may be the limit (add processes)"
            )
    if full:
        warnings.append(
            f"producer buffer full {full} times in the measure window: the producer offered more than the "
            "cluster took (back-pressure at the maximum rate; at a fixed rate, lower it)"
        )
    if raw.machine_cpu_percent is not None and raw.machine_cpu_percent > 90:
        warnings.append(
            f"machine CPU at {raw.machine_cpu_percent:.0f} %: clients and brokers share the "
            "cores; the figure is a machine limit, not the cluster's"
        )
    samples = [x for p in raw.producers.values() for x in p.client_stats]
    receive_calls = [c.records_per_receive_call for c in raw.consumers.values()]
    client = ClientSummary(
        buffer_full_events=full,
        machine_cpu_percent=raw.machine_cpu_percent,
        loop_cpu_util={r: tuple(round(u, 3) for u in us) for r, us in cpu.items()},
        producer_stats=from_json(ProducerStats, _medians(samples)),
        producer_stats_samples=len(samples),
        records_per_send_call=max((p.records_per_send_call for p in raw.producers.values()), default=1),
        records_per_receive_call=round(statistics.median(receive_calls), 1) if receive_calls else None,
        consumers_idle=idle,
    )
    return warnings, client
