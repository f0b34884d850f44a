"""Latency histograms and per-second counters that the load workers record into.

Latencies are recorded in microseconds in HdrHistograms (1 µs .. 1 h, 3 significant digits), which
merge exactly across workers: the run's percentiles are those of the merged histogram, never an
average of percentiles.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

from core.typed import from_json
from records.result import Latency

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


# hdrh answers percentiles, mean and stddev with Python loops over all 23,552 buckets, too slow for a run's
# per-second histograms (benchmarks/record_build.py). The same arithmetic over numpy arrays, per bucket index:
# the lowest, highest and median equivalent value (computed once with hdrh's own functions, so results match).
_TABLES: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _tables(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = _TABLES.get(h.counts_len)
    if t is None:
        low = [h.get_value_from_index(i) for i in range(h.counts_len)]
        high = np.array([h.get_highest_equivalent_value(v) for v in low], dtype=np.int64)
        mid = np.array([h._hdr_median_equiv_value(v) for v in low], dtype=np.float64)
        t = _TABLES[h.counts_len] = (np.array(low, dtype=np.int64), high, mid)
    return t


def _counts(h: HdrHistogram) -> np.ndarray:
    return np.ctypeslib.as_array(h.counts).astype(np.int64)


def percentiles(h: HdrHistogram, ps: Iterable[float]) -> list[int]:
    """`h.get_value_at_percentile(p)` for each p, in one pass."""
    ps = list(ps)
    n = h.get_total_count()
    if n == 0:
        return [0] * len(ps)
    low, high, _ = _tables(h)
    cum = np.cumsum(_counts(h))
    out = []
    for p in ps:
        idx = int(np.searchsorted(cum, h.get_target_count_at_percentile(p), side="left"))
        if idx >= len(cum):
            out.append(0)
        else:
            out.append(int(high[idx] if p else low[idx]))
    return out


def mean_std(h: HdrHistogram) -> tuple[float, float]:
    """`(h.get_mean_value(), h.get_stddev())` without hdrh's per-bucket Python loop."""
    n = h.get_total_count()
    if n == 0:
        return 0.0, 0.0
    _, _, mid = _tables(h)
    c = _counts(h).astype(np.float64)
    mean = float((c * mid).sum() / n)
    return mean, float(np.sqrt((c * (mid - mean) ** 2).sum() / n))


def summary_ms(h: HdrHistogram, why_empty: str = "no samples") -> Latency:
    """count, mean, std, min, the percentiles and max, in ms.

    An empty histogram measured nothing: every figure is None and `missing` says why (`why_empty`), so no
    reader can print a latency that was not measured.
    """
    n = h.get_total_count()
    if n == 0:
        return Latency(missing=why_empty)
    mean, std = mean_std(h)
    pcts = {f"p{p:g}": v / 1000 for p, v in zip(PERCENTILES, percentiles(h, PERCENTILES), strict=True)}
    figures = {"count": n, "mean": mean / 1000, "std": std / 1000, "min": h.get_min_value() / 1000, **pcts}
    return from_json(Latency, {**figures, "max": h.get_max_value() / 1000}, "latency")


def record_many(h: HdrHistogram, values_ns: np.ndarray) -> None:
    """Record many latencies (ns) at once, bucketed with numpy and added to the histogram's counts in one step.

    Equivalent to `record_ns` per value (same buckets; min and max are their buckets' lowest equivalents), at a
    fraction of the cost: the load workers buffer raw latencies in flat arrays in their callbacks and fold them in
    here once a second, on their own loop, so the fold's length lands on the latency of the messages behind it (one
    `record_value` per distinct bucket made that stall long enough to reach a p99: benchmarks/record_fold.py).
    """
    if values_ns.size == 0:
        return
    us = np.clip(values_ns // 1000, LOWEST_US, HIGHEST_US).astype(np.int64)
    # hdrh's bucket arithmetic, vectorised: bit_length(v | sub_bucket_mask) is the power-of-two ceiling.
    pow2ceiling = np.floor(np.log2((us | h.sub_bucket_mask).astype(np.float64))).astype(np.int64) + 1
    bucket = pow2ceiling - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
    sub_bucket = us >> (bucket + h.unit_magnitude)
    index = ((bucket + 1) << h.sub_bucket_half_count_magnitude) + (sub_bucket - h.sub_bucket_half_count)
    counts = np.ctypeslib.as_array(h.counts)
    counts += np.bincount(index, minlength=h.counts_len)[: h.counts_len].astype(counts.dtype)
    lowest = sub_bucket << (bucket + h.unit_magnitude)
    h.total_count += int(us.size)
    h.min_value = min(h.min_value, int(lowest.min()))
    h.max_value = max(h.max_value, int(lowest.max()))


class LatencyBuffer:
    """Per-message (latency, send time) pairs in flat int64 arrays; the hot path only appends.

    `fold()` empties the buffer into a fresh histogram for the second just ended and adds the samples
    whose send time lies in the measure window to `window`. The arrays are cleared in place, so bound
    `append` methods taken once stay valid.
    """

    def __init__(self) -> None:
        self.lat = array("q")
        self.sent = array("q")
        self.window = new_histogram()
        self.m_start = 0
        self.m_end = 0  # nothing is in the window until the run's time line is known

    def fold(self) -> tuple[int, HdrHistogram]:
        lat = np.array(self.lat, dtype=np.int64)
        sent = np.array(self.sent, dtype=np.int64)
        del self.lat[:]
        del self.sent[:]
        second = new_histogram()
        record_many(second, lat)
        if lat.size and self.m_end > self.m_start:
            record_many(self.window, lat[(sent >= self.m_start) & (sent < self.m_end)])
        return int(lat.size), second
