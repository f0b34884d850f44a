"""A run as OpenMessaging Benchmark's `TestResult` (records.omb): what OMB's chart script and any tool that
reads OMB results read.

The windows are OMB's: the measured phase cut into `WINDOW_S`-second windows (a shorter last one when the
phase is not a multiple of 10 s), each window's rates over its own seconds and its latency percentiles from
the exact merge of the workers' per-second histograms. Publish rate is acknowledged messages, as OMB counts a
send when it completes. The aggregated fields are the whole measured phase's (the same histograms as
result.json's). Backlog is OMB's: subscriptions × acknowledged − received, counted from the start of the run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from hdrh.histogram import HdrHistogram

from loadgen import recorder
from loadgen.runner import RawRun, Tick
from records.omb import FIELDS, PCTS, WINDOW_S

_LEVELS = (50.0, 75.0, 95.0, 99.0, 99.9, 99.99)
QUANTILE_TICKS = 10  # percentile levels per halving of the distance to 100 % (OMB iterates with 100)


def quantile_levels(n: int, ticks: int = QUANTILE_TICKS) -> list[float]:
    """OMB's percentile iteration (HdrHistogram's PercentileIterator): `ticks` levels in each half of the
    remaining distance to 100 %, as far as `n` samples resolve, then 100."""
    out: list[float] = []
    lo, span = 0.0, 50.0
    while n and span * n / 100 >= 1:  # the band [lo, lo + span) holds at least one sample
        out += [lo + span * i / ticks for i in range(ticks)]
        lo, span = lo + span, span / 2
    return [*out, 100.0] if n else []


def _latency(prefix: str, h: HdrHistogram | None, scale: float, whole: bool) -> dict[str, float | None]:
    """OMB's Avg, percentile and Max fields of one histogram; None where it has no sample."""
    keys = [f"{prefix}Avg", *(f"{prefix}{p}" for p in PCTS), f"{prefix}Max"]
    if h is None or not h.get_total_count():
        return dict.fromkeys(keys)
    vals = [v * scale for v in recorder.percentiles(h, _LEVELS)]
    pcts = [round(v) if whole else v for v in vals]
    mx = h.get_max_value() * scale
    return dict(zip(keys, [recorder.mean_std(h)[0] * scale, *pcts, round(mx) if whole else mx], strict=True))


def _quantiles(h: HdrHistogram | None, scale: float, whole: bool) -> dict[str, float | int]:
    if h is None or not h.get_total_count():
        return {}
    levels = quantile_levels(h.get_total_count())
    # keys as Jackson writes a Map<Double, …>'s: "50.0", "99.9"
    return {
        str(float(lv)): (round(v * scale) if whole else v * scale)
        for lv, v in zip(levels, recorder.percentiles(h, levels), strict=True)
    }


def _merge(encoded: Iterable[bytes | None]) -> HdrHistogram | None:
    h = recorder.merge(encoded)
    return h if h.get_total_count() else None


def _windows(
    by: defaultdict[tuple[str, int], list[Tick]], measured: Sequence[int], subs: int, timed: bool
) -> dict[str, list[Any]]:
    """OMB's per-window series over the measured seconds (WINDOW_S each): rates, errors, the backlog at each
    window's end (subscriptions × acknowledged − received) and each window's latency quantiles."""
    series: dict[str, list[Any]] = {k: [] for k, kind in FIELDS.items() if kind.startswith("list")}
    owed: dict[int, int] = {}  # second -> the backlog at its end
    acked = received = 0
    for s in range(max(measured, default=-1) + 1):
        acked += sum(t.msgs for t in by["producer", s])
        received += sum(t.msgs for t in by["consumer", s])
        owed[s] = subs * acked - received
    for i in range(0, len(measured), WINDOW_S):
        secs = list(measured[i : i + WINDOW_S])
        prod = [t for s in secs for t in by["producer", s]]
        cons = [t for s in secs for t in by["consumer", s]]
        n = len(secs)
        series["publishRate"].append(sum(t.msgs for t in prod) / n)
        series["publishErrorRate"].append(sum(t.errors for t in prod) / n)
        series["consumeRate"].append(sum(t.msgs for t in cons) / n)
        series["backlog"].append(max(0, owed[secs[-1]]))
        rows = (
            ("publishLatency", _merge(t.hist for t in prod) if timed else None, 1e-3, False),
            ("publishDelayLatency", _merge(t.delay for t in prod), 1.0, True),
            ("endToEndLatency", _merge(t.hist for t in cons) if timed else None, 1e-3, False),
        )
        for prefix, h, scale, whole in rows:
            for k, v in _latency(prefix, h, scale, whole).items():
                series[k].append(v)
    return series


def omb_result(
    raw: RawRun,
    measured: Sequence[int],
    aggregated: tuple[HdrHistogram, HdrHistogram, HdrHistogram],
    timed: bool,
    driver: str | None = None,
) -> dict[str, Any]:
    """OMB's TestResult of `raw`: `measured` the seconds of its measured phase, `aggregated` the phase's
    publish, publish-delay and end-to-end histograms, `timed` whether payloads carried their send time,
    `driver` the name to report (an OMB driver file's `name`; else kafkatune's driver)."""
    w = raw.workload
    by: defaultdict[tuple[str, int], list[Tick]] = defaultdict(list)
    for t in raw.ticks:
        by[(t.role, t.second)].append(t)
    subs = w.subscriptionsPerTopic
    doc: dict[str, Any] = {
        "workload": w.name,
        "driver": driver or w.driver,
        "messageSize": w.messageSize,
        "topics": w.topics,
        "partitions": w.partitionsPerTopic,
        "producersPerTopic": w.producersPerTopic,
        "consumersPerTopic": w.consumerPerSubscription,  # OMB's: consumers per subscription
    }
    doc.update(_windows(by, measured, subs, timed))
    pub, delay, e2e = aggregated
    for prefix, h, scale, whole in (
        ("aggregatedPublishLatency", pub, 1e-3, False),
        ("aggregatedPublishDelayLatency", delay, 1.0, True),
        ("aggregatedEndToEndLatency", e2e, 1e-3, False),
    ):
        agg = _latency(prefix, h, scale, whole)
        if whole and (avg := agg[f"{prefix}Avg"]) is not None:
            agg[f"{prefix}Avg"] = float(avg)
        doc.update(agg)
        doc[f"{prefix}Quantiles"] = _quantiles(h, scale, whole)
    return doc
