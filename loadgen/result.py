"""Turn a `RawRun` into the run record (records.run): OMB-named result JSON, per-second rows, broker metrics.

result        schema_version, OMB's TestResult fields, and a `summary` kafkatune reads (its tail budget too,
              loadgen.tail, when an SLO is given)
samples       one row per worker per second (role, worker, second, phase, msgs, bytes, stall evidence, …)
brokers       one row per broker per second (bytes in/out, replication in/out, idle %; loadgen.brokerside)
host          one row per second of the brokers' machine, when it is this one (cluster.hoststats)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from core.typed import to_json
from core.units import MB
from loadgen import brokerside, clientside, omb, payload, recorder, tail
from loadgen.rawrun import EVIDENCE_FIELDS, ConsumerEnd, ProducerEnd
from loadgen.runner import RawRun, measured_seconds, phase_of
from loadgen.sustainable import Sustainable
from records.profile import ClusterProfile
from records.result import ProducerLoss, RunResult, RunSummary
from records.run import RunRecord
from records.seconds import BrokerSecond, HostSecond

_OMB_PCTS = (("50pct", 50.0), ("75pct", 75.0), ("95pct", 95.0), ("99pct", 99.0), ("999pct", 99.9), ("9999pct", 99.99))


def _per_host(raw: RawRun) -> dict[str, dict[str, int]]:
    """What the workers on each client host did; the run's totals (and latency counts) are these summed."""
    out: dict[str, dict[str, int]] = {}
    for (role, wid), host in raw.worker_hosts.items():
        h = out.setdefault(
            host or "local",
            dict.fromkeys(
                (
                    "producers",
                    "consumers",
                    "sent",
                    "acknowledged",
                    "consumed",
                    "publish_latency_count",
                    "end_to_end_latency_count",
                ),
                0,
            ),
        )
        if role == "producer":
            p = raw.producers.get(wid) or ProducerEnd()
            h["producers"] += 1
            h["sent"] += p.sent
            h["acknowledged"] += p.acked
            h["publish_latency_count"] += recorder.merge([p.publish_hist]).get_total_count()
        else:
            c = raw.consumers.get(wid) or ConsumerEnd()
            h["consumers"] += 1
            h["consumed"] += c.received
            h["end_to_end_latency_count"] += recorder.merge([c.e2e_hist]).get_total_count()
    return out


def _phase(raw: RawRun, second: int) -> str:
    return phase_of(second, raw.workload.warmup_seconds, raw.test_s)


def _omb_latency(prefix: str, h: Any, scale: float) -> dict[str, float | None]:
    """OMB's aggregated fields for one histogram; `scale` turns µs into the field's unit. None for a histogram without
    a sample (no send time in the payload, no schedule at the maximum rate): not measured, as RunResult says."""
    keys = [f"{prefix}Avg", *(f"{prefix}{name}" for name, _ in _OMB_PCTS), f"{prefix}Max"]
    if not h.get_total_count():
        return dict.fromkeys(keys)
    values = recorder.percentiles(h, [p for _, p in _OMB_PCTS])
    figures = [recorder.mean_std(h)[0] * scale, *(v * scale for v in values), h.get_max_value() * scale]
    return dict(zip(keys, figures, strict=True))


def _quantiles(h: Any, scale: float) -> dict[str, float]:
    if not h.get_total_count():
        return {}
    qs = [50, 75, 90, 95, 99, 99.9, 99.99, 99.999, 100]
    return {f"{q:g}": v * scale for q, v in zip(qs, recorder.percentiles(h, qs), strict=True)}


# At most this many ranges of lost sequence numbers per producer are listed (the count is always exact).
MAX_LOST_RANGES = 200


def seq_ranges(seqs: np.ndarray) -> list[list[int]]:
    """Sorted sequence numbers as [first, last] ranges (inclusive), the first MAX_LOST_RANGES of them."""
    if seqs.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(seqs) != 1)
    starts = np.concatenate(([seqs[0]], seqs[breaks + 1]))
    ends = np.concatenate((seqs[breaks], [seqs[-1]]))
    return [[int(a), int(b)] for a, b in zip(starts[:MAX_LOST_RANGES], ends[:MAX_LOST_RANGES], strict=True)]


@dataclass(frozen=True)
class Losses:
    """What became of the acknowledged messages, summed over the producers and per producer (written into the
    summary as records.result.RunSummary reads it)."""

    lost: int = 0
    duplicated: int = 0
    unacked_but_received: int = 0
    not_consumed_in_time: int = 0
    loss_verified: bool | None = None  # None: the log was not read again; False: the system keeps no log
    per_producer: Mapping[str, ProducerLoss] = field(default_factory=dict)  # producer id -> its losses


def _loss(raw: RawRun) -> Losses:
    """Acknowledged-but-never-consumed and consumed-more-than-once, per producer, per subscription. When the log
    was read again (loadgen.verify), a missing message found in it is counted `not_consumed_in_time`, not lost."""
    subs = max(1, raw.workload.subscriptionsPerTopic)
    per_producer: dict[str, ProducerLoss] = {}
    in_log = raw.verified.in_log if raw.verified else {}
    unacked_received = 0
    for pid in raw.producers:
        acked, counts = raw.receipts(pid)
        if raw.workload.subscriptionsPerTopic == 0:
            per_producer[str(pid)] = ProducerLoss(acked=int(acked.sum()))
            continue
        found = np.zeros(len(acked), dtype=bool)
        found[[s for s in in_log.get(pid, ()) if s < len(acked)]] = True
        short = np.maximum(subs - counts, 0) * ((acked == 1) & ~found)
        # With S subscriptions every message is due S times; what is short of that, and not in the log, is lost.
        unacked_received += int((counts[acked == 0] > 0).sum())
        per_producer[str(pid)] = ProducerLoss(
            acked=int(acked.sum()),
            lost=int(short.sum()),
            duplicated=int(np.maximum(counts - subs, 0).sum()),
            not_consumed_in_time=int(found.sum()),
            lost_seqs=tuple(tuple(r) for r in seq_ranges(np.flatnonzero(short > 0))),
        )
    ps = per_producer.values()
    return Losses(
        lost=sum(p.lost for p in ps),
        duplicated=sum(p.duplicated for p in ps),
        unacked_but_received=unacked_received,
        not_consumed_in_time=sum(p.not_consumed_in_time for p in ps),
        loss_verified=None if raw.verified is None else raw.verified.replayed,
        per_producer=per_producer,
    )


def build(
    raw: RawRun,
    profile: ClusterProfile | None = None,
    driver_info: Mapping[str, str] | None = None,
    slo_ms: float | None = None,
    tail_seconds: Sequence[int] | None = None,
) -> RunRecord:
    """The run record of `raw`: `profile` is the cluster's (records.profile), `driver_info` the client's; with
    `slo_ms` (a p99 end-to-end SLO) its summary carries the tail budget against it (loadgen.tail) over
    `tail_seconds` (default: the measure window; a search's: the seconds of its steps that held)."""
    w = raw.workload
    timed = payload.timed(w.messageSize)
    pub, delay, e2e = _histograms(raw, timed)
    broker_rows = brokerside.broker_rows(raw)  # as the Parquet file keeps them; typed for what reads them here
    hosts = brokerside.host_rows(raw)
    seconds = [BrokerSecond.of(r) for r in broker_rows]
    measured = sorted({t.second for t in raw.ticks if _phase(raw, t.second) == "measure"})
    summary = _summary(raw, timed, (pub, delay, e2e), seconds)
    if slo_ms is not None and timed:
        found = tail.budget(raw, tail_seconds or measured, slo_ms, seconds, [HostSecond.of(r) for r in hosts])
        summary = replace(summary, tail=found)
    aggregates = {
        **_omb_latency("aggregatedPublishLatency", pub, 1e-3),
        "aggregatedPublishLatencyQuantiles": _quantiles(pub, 1e-3),
        **_omb_latency("aggregatedPublishDelayLatency", delay, 1.0),  # µs, as OMB
        "aggregatedPublishDelayLatencyQuantiles": _quantiles(delay, 1.0),
        **_omb_latency("aggregatedEndToEndLatency", e2e, 1e-3),
        "aggregatedEndToEndLatencyQuantiles": _quantiles(e2e, 1e-3),
    }
    omb_fields = {**_series(raw, timed), **aggregates}
    result = RunResult.from_json(  # the workload's counts and the aggregates under OMB's names, typed
        {
            "workload": w.name,
            "driver": w.driver,
            "messageSize": w.messageSize,
            "topics": w.topics,
            "partitions": w.partitionsPerTopic,
            "producersPerTopic": w.producersPerTopic,
            "consumersPerTopic": w.consumerPerSubscription * w.subscriptionsPerTopic,
            **aggregates,
        }
    )
    result = replace(
        result,
        summary=summary,
        topics_used=tuple(raw.topics),
        client_hosts=tuple(sorted({h or "local" for h in raw.worker_hosts.values()})),
        per_client_host=_per_host(raw),
        started_ns=raw.started_wall_ns,
        timing=to_json(raw.timing),
        producer_config=w.str_map("producerConfig"),
        consumer_config=w.str_map("consumerConfig"),
        topic_config=w.str_map("topicConfig"),
        profile=profile.to_json() if profile else None,
        driver_info=dict(driver_info or {}),
    )
    brokers = pa.Table.from_pylist(broker_rows) if broker_rows else pa.table({"broker_id": pa.array([], pa.int64())})
    doc = omb.omb_result(raw, measured, (pub, delay, e2e), timed)
    host = pa.Table.from_pylist(hosts) if hosts else None
    return RunRecord(result, _samples(raw, timed), brokers, doc, host, omb_fields)


def judge_step_tails(raw: RawRun, found: Sustainable, slo_ms: float) -> None:
    """Each step of `found` gets its tail budget in brief (loadgen.tail, TailBudget.brief) over its judged seconds:
    why a step missed, when a transient and not the rate made it (the run's own budget reads the steps that held)."""
    brokers = [BrokerSecond.of(r) for r in brokerside.broker_rows(raw)]
    hosts = [HostSecond.of(r) for r in brokerside.host_rows(raw)]
    for st in found.steps:
        st.tail = tail.budget(raw, st.judged_s, slo_ms, brokers, hosts).brief()


def _histograms(raw: RawRun, timed: bool) -> tuple[Any, Any, Any]:
    """The measure window's publish, publish-delay and end-to-end histograms, merged over the workers."""
    pub = recorder.merge(p.publish_hist for p in raw.producers.values())
    delay = recorder.merge(t.delay for t in raw.ticks if t.role == "producer" and _phase(raw, t.second) == "measure")
    e2e = recorder.merge(c.e2e_hist for c in raw.consumers.values())
    if not timed:  # no send time in the payload: the workers recorded 0s as placeholders, not latencies
        pub, e2e = recorder.new_histogram(), recorder.new_histogram()
    return pub, delay, e2e


def _series(raw: RawRun, timed: bool) -> dict[str, list[float | None]]:
    """Per-second series over the whole run (OMB keeps them as lists), merged across workers."""
    by: defaultdict[tuple[str, int], list[Any]] = defaultdict(list)
    for t in raw.ticks:
        by[(t.role, t.second)].append(t)
    series: dict[str, list[float | None]] = defaultdict(list)
    for s in sorted({t.second for t in raw.ticks}):
        prod, cons = by["producer", s], by["consumer", s]
        series["publishRate"].append(float(sum(t.msgs for t in prod)))
        series["consumeRate"].append(float(sum(t.msgs for t in cons)))
        series["publishErrorRate"].append(float(sum(t.errors for t in prod)))
        for prefix, ticks in (("publishLatency", prod), ("endToEndLatency", cons)):
            h = recorder.merge(t.hist for t in ticks) if timed else recorder.new_histogram()
            for k, v in _omb_latency(prefix, h, 1e-3).items():
                series[k].append(v)
    return series


def _summary(raw: RawRun, timed: bool, hists: tuple[Any, Any, Any], broker_rows: Sequence[BrokerSecond]) -> RunSummary:
    """What kafkatune reads of a run: rates over the measure window, counts, losses, latencies, warnings; `hists`
    the window's publish, publish-delay and end-to-end histograms."""
    w, (pub, delay, e2e) = raw.workload, hists
    window_s = max(1, measured_seconds(w.warmup_seconds, raw.test_s))
    meas = [t for t in raw.ticks if _phase(raw, t.second) == "measure"]

    def total(role: str, field: str) -> int:
        return sum(getattr(t, field) for t in meas if t.role == role)

    pub_bytes, con_bytes = total("producer", "nbytes"), total("consumer", "nbytes")
    warnings, client = clientside.summary(raw, meas)
    if not timed:
        warnings.append(
            f"{w.messageSize}-byte payloads have no room for a send time: counted, latencies not measured (≥ 16 B)"
        )
    jit = brokerside.jit_warning(broker_rows)
    if jit:
        warnings.append(jit)
    late = "max rate: there is no schedule to be late against" if not w.fixed_rate else "no sends"
    return replace(
        _counts(raw),
        window_s=window_s,
        warmup_s=w.warmup_seconds,
        mode="fixed-rate" if w.fixed_rate else "max-rate",
        target_rate_msg_s=w.fixed_rate,
        publish_msg_s=total("producer", "msgs") / window_s,
        send_msg_s=total("producer", "sent") / window_s,
        publish_mb_s=pub_bytes / window_s / MB,
        publish_bit_s=pub_bytes * 8 / window_s,
        consume_msg_s=total("consumer", "msgs") / window_s,
        consume_mb_s=con_bytes / window_s / MB,
        consume_bit_s=con_bytes * 8 / window_s,
        **vars(_loss(raw)),
        latency_measured=timed,
        publish_latency_ms=recorder.summary_ms(pub, _why_empty(raw, timed, "acknowledged")),
        publish_delay_ms=recorder.summary_ms(delay, late),
        end_to_end_latency_ms=recorder.summary_ms(e2e, _why_empty(raw, timed, "received")),
        broker_rates=brokerside.broker_summary(broker_rows),
        drain_s=raw.drain_s,
        drain_ended=raw.drain_ended,
        consumer_assignment_wait_s=raw.consumer_assignment_wait_s,
        client=client,
        client_bound=any(u > clientside.LOOP_HOT for us in client.loop_cpu_util.values() for u in us),
        warnings=tuple(warnings),
    )


def _counts(raw: RawRun) -> RunSummary:
    """The workers' own counts over the whole run: sent, acknowledged, failed, left over at the end, received."""
    producers, consumers = raw.producers.values(), raw.consumers.values()
    return RunSummary(
        sent=sum(p.sent for p in producers),
        acknowledged=sum(p.acked for p in producers),
        publish_errors=sum(p.errors for p in producers),
        unacknowledged_at_end=sum(p.outstanding for p in producers),
        dropped_unsent_at_end=sum(p.dropped_unsent for p in producers),
        consume_errors=sum(c.errors for c in consumers),
        publish_error_samples=tuple(sorted({e for p in producers for e in p.error_samples})[:5]),
        consumed=sum(c.received for c in consumers),
    )


def _why_empty(raw: RawRun, timed: bool, verb: str) -> str:
    """Why a latency histogram of the measure window has no sample (said instead of a figure)."""
    if not timed:
        return f"{raw.workload.messageSize}-byte payloads carry no send time (16 B or more needed)"
    done = sum(p.acked for p in raw.producers.values()) if verb == "acknowledged" else None
    if done == 0:
        return "nothing was acknowledged"
    if done and any(p.acks_counted for p in raw.producers.values()):
        return (
            "max rate: acknowledgements were counted, not timed one by one (at max rate a message's publish latency "
            "is its wait in the client's full queue); publishLatencyAtMaxRate: true times them"
        )
    return (
        f"no message sent inside the measure window was {verb} before the run ended: every one waited longer "
        "than the window (lengthen the window, or lower the rate)"
    )


def _samples(raw: RawRun, timed: bool) -> pa.Table:
    """One row per worker per second (latency columns are float64 even when no second has a sample)."""
    t = pa.Table.from_pylist(
        [
            {
                "role": t.role,
                "worker": t.wid,
                "second": t.second,
                "phase": _phase(raw, t.second),
                "msgs": t.msgs,
                "sent": t.sent,
                "bytes": t.nbytes,
                "errors": t.errors,
                "buffer_full": t.buffer_full,
                **{f"latency_{k}_ms": v for k, v in _tick_pcts(t.hist if timed else None).items()},
                "thread_cpu_s": t.thread_cpu_s,
                "process_cpu_s": t.process_cpu_s,
                "delay_max_ms": _delay_max(t.delay),
                **{k: getattr(t.evidence, k) if t.evidence else None for k in EVIDENCE_FIELDS},
            }
            for t in raw.ticks
        ]
    )
    for i, f in enumerate(t.schema):
        if pa.types.is_null(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.float64()))
    return t


def _delay_max(enc: bytes | None) -> float | None:
    """The latest send of a second against its schedule, ms (None: no schedule or no send)."""
    h = recorder.merge([enc])
    return h.get_max_value() / 1000 if h.get_total_count() else None


def _tick_pcts(enc: bytes | None) -> dict[str, float | None]:
    h = recorder.merge([enc])
    n = h.get_total_count()
    p50, p99 = recorder.percentiles(h, (50, 99))
    if not n:  # nothing arrived in this second: no figure, not a zero
        return {"p50": None, "p99": None, "max": None}
    return {"p50": p50 / 1000, "p99": p99 / 1000, "max": h.get_max_value() / 1000}
