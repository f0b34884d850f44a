"""How long a load worker's loop stops once a second to fold its latencies into that second's histogram.

Every worker buffers raw latencies and folds them once a second (loadgen.recorder.LatencyBuffer.fold), on its own
loop: while it folds, a consumer receives nothing and a producer sends nothing, so the fold's length lands on the
latencies of the messages behind it, the tail a p99 reads. This times the fold of one second's latencies at
`--rates` (msg/s), the old way (one hdrh `record_value` per distinct bucket) and the new (counts added with numpy),
`--reps` times each, interleaved, and checks that both give the same histogram.

    .venv/bin/python benchmarks/record_fold.py [--rates 1000,12000,50000] [--reps 15] [--result NAME]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import result_file

from loadgen import recorder
from loadgen.recorder import HIGHEST_US, LOWEST_US, new_histogram


def per_bucket(h: recorder.HdrHistogram, values_ns: np.ndarray) -> None:
    """The former loadgen.recorder.record_many: buckets with numpy, then one record_value per distinct bucket."""
    us = np.clip(values_ns // 1000, LOWEST_US, HIGHEST_US).astype(np.int64)
    pow2ceiling = np.floor(np.log2((us | h.sub_bucket_mask).astype(np.float64))).astype(np.int64) + 1
    shift = pow2ceiling - (h.sub_bucket_half_count_magnitude + 1)
    vals, counts = np.unique((us >> shift) << shift, return_counts=True)
    for v, c in zip(vals.tolist(), counts.tolist(), strict=True):
        h.record_value(v, c)


def fold_ms(record: object, lat: np.ndarray) -> float:
    """One fold as LatencyBuffer.fold does it: the second's histogram and the window's, ms."""
    t = time.perf_counter()
    for h in (new_histogram(), new_histogram()):
        record(h, lat)  # type: ignore[operator]
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,12000,50000")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="3 repetitions")
    ap.add_argument(
        "--result", default="record_fold", help="benchmarks/results/RESULT.json (another name keeps the committed one)"
    )
    a = ap.parse_args()
    reps = 3 if a.quick else a.reps
    rng = np.random.default_rng(1)
    out = {}
    for rate in (int(r) for r in a.rates.split(",")):
        lat = rng.lognormal(15.5, 0.9, rate).astype(np.int64)  # ~5 ms median, a long tail
        one, other = new_histogram(), new_histogram()
        per_bucket(one, lat)
        recorder.record_many(other, lat)
        assert one.encode() == other.encode(), "the two folds disagree"
        old, new = [], []
        for _ in range(reps):
            old.append(fold_ms(per_bucket, lat))
            new.append(fold_ms(recorder.record_many, lat))
        row = {
            "old_ms": statistics.median(old),
            "new_ms": statistics.median(new),
            "n": reps,
            "old_range_ms": [min(old), max(old)],
            "new_range_ms": [min(new), max(new)],
        }
        row["ratio"] = row["old_ms"] / row["new_ms"]
        out[str(rate)] = row
        print(
            f"{rate:>7,} latencies: per bucket {row['old_ms']:.2f} ms, numpy {row['new_ms']:.2f} ms "
            f"({row['ratio']:.1f}x; medians of {reps})"
        )
    result_file(a.result, {"rates": out})


if __name__ == "__main__":
    main()
