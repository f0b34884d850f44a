"""Building a run record: hdrh's per-bucket Python loops vs kafkatune's numpy path, same histograms.

An 80 s run with one producer and one consumer has 160 per-second histograms plus the aggregates; the
record asks each for OMB's percentiles and mean. Prints the median of `--reps` timings of each and
the ratio (values are checked equal first).

    .venv/bin/python benchmarks/record_build.py [--seconds 80] [--workers 2] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import log

from loadgen import recorder

PCTS = (50, 75, 95, 99, 99.9, 99.99)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=80)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    hists = []
    for _ in range(a.seconds * a.workers):
        h = recorder.new_histogram()
        recorder.record_many(h, rng.lognormal(15, 1.2, 8000).astype(np.int64))
        hists.append(h)
    recorder.percentiles(hists[0], PCTS)  # build the index tables once, as a process does

    def hdrh() -> list[object]:
        return [([h.get_value_at_percentile(p) for p in PCTS], h.get_mean_value()) for h in hists]

    def numpy_path() -> list[object]:
        return [(recorder.percentiles(h, PCTS), recorder.mean_std(h)[0]) for h in hists]

    a_vals, b_vals = hdrh(), numpy_path()
    assert [v[0] for v in a_vals] == [v[0] for v in b_vals]
    times: dict[str, list[float]] = {"hdrh": [], "numpy": []}
    for _ in range(a.reps):
        for name, fn in (("hdrh", hdrh), ("numpy", numpy_path)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
        log(f"hdrh {times['hdrh'][-1]:.3f} s, numpy {times['numpy'][-1]:.4f} s")
    h_med, n_med = statistics.median(times["hdrh"]), statistics.median(times["numpy"])
    print(
        f"{len(hists)} histograms ({a.seconds} s × {a.workers} workers), median of {a.reps}: "
        f"hdrh {h_med:.3f} s, numpy {n_med:.4f} s, ratio {h_med / n_med:.0f}x"
    )


if __name__ == "__main__":
    main()
