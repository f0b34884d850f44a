"""Spark analysis time for a generated 100-trial study at 1 M, 3 M and 10 M per-second samples.

    .venv/bin/python benchmarks/spark_analysis.py [--master local[2]] [--repeats 3] [--sizes 1,3,10]

The studies are generated (spark/synthetic.py, marked synthetic) in a temporary folder; one Spark session
analyses each size `repeats` times and the median is printed, with the growth against the smallest size.
Target (issue 4): ≤ 3 minutes for 10 M samples on local[2], roughly linear.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.analysis import analyze
from records import synthetic
from spark.session import session


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="1,3,10", help="millions of samples, comma-separated")
    ap.add_argument("--trials", type=int, default=100)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kt-spark-bench-"))
    spark = session(a.master, app="kafkatune-bench")
    rows = []
    try:
        # warm the JVM once (class loading, codegen) so the first size is not charged for it
        warm = synthetic.generate(root / "warm", trials=5, samples=10_000)
        analyze(warm, spark)
        for m in [float(x) for x in a.sizes.split(",")]:
            n = int(m * 1_000_000)
            t0 = time.perf_counter()
            d = synthetic.generate(root / f"s{m:g}M", trials=a.trials, samples=n)
            gen = time.perf_counter() - t0
            size_mb = sum(f.stat().st_size for f in d.rglob("*.parquet")) / 1e6
            times = []
            for _ in range(a.repeats):
                shutil.rmtree(d / "analysis", ignore_errors=True)
                t0 = time.perf_counter()
                s = analyze(d, spark)
                times.append(time.perf_counter() - t0)
            rows.append((m, s.samples, size_mb, gen, statistics.median(times), min(times), max(times)))
            print(
                f"{m:g} M: {s.samples or 0:,} samples ({size_mb:.0f} MB Parquet), analysis median "
                f"{statistics.median(times):.1f} s (min {min(times):.1f}, max {max(times):.1f}), "
                f"generated in {gen:.1f} s",
                flush=True,
            )
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    base = rows[0]
    print(f"\n{a.trials} trials, {a.master}, median of {a.repeats}")
    print(f"{'samples':>12} {'Parquet MB':>11} {'median s':>9} {'× time':>7} {'× samples':>10} {'s per M':>8}")
    for _m, n, mb, _gen, med, _lo, _hi in rows:
        print(f"{n:>12,} {mb:>11.0f} {med:>9.1f} {med / base[4]:>7.2f} {n / base[1]:>10.2f} {med / (n / 1e6):>8.2f}")


if __name__ == "__main__":
    main()
