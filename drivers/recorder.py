"""Latency histograms and per-second counters that the load workers record into.

Latencies are recorded in microseconds in HdrHistograms (1 µs .. 1 h, 3 significant digits), which
merge exactly across workers: the run's percentiles are those of the merged histogram, never an
average of percentiles.
"""

from __future__ import annotations

from collections.abc import Iterable

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIG_DIGITS = 3

PERCENTILES = (50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIG_DIGITS)


def record_ns(h: HdrHistogram, delta_ns: int) -> None:
    us = delta_ns // 1000
    h.record_value(min(max(us, LOWEST_US), HIGHEST_US))


def merge(encoded: Iterable[bytes | None]) -> HdrHistogram:
    h = new_histogram()
    for e in encoded:
        if e:
            h.decode_and_add(e)
    return h


def summary_ms(h: HdrHistogram) -> dict[str, float | int]:
    """count, mean, std, min, the percentiles and max, in ms (NaN-free: an empty histogram gives zeros)."""
    n = h.get_total_count()
    out: dict[str, float | int] = {"count": n}
    if n == 0:
        out.update(mean=0.0, std=0.0, min=0.0, max=0.0, **{f"p{p:g}": 0.0 for p in PERCENTILES})
        return out
    out["mean"] = h.get_mean_value() / 1000
    out["std"] = h.get_stddev() / 1000
    out["min"] = h.get_min_value() / 1000
    for p in PERCENTILES:
        out[f"p{p:g}"] = h.get_value_at_percentile(p) / 1000
    out["max"] = h.get_max_value() / 1000
    return out
