"""The analysis JVM's JIT: a cold Spark session and its first analyses with the tiered compiler (C1 then C2, the
JVM's default) against C1 only (spark.session.QUICK_JIT), as `kafkatune analyze` and `report` start one per study.

    .venv/bin/python benchmarks/spark_jit.py [--repeats 3] [--sizes 0.002,1] [--quick]

Each measurement is a fresh process (a cold JVM): the session's start, then each study size analysed once in
order (generated studies, records.synthetic: 6 trials; `--sizes` in millions of per-second samples), then the
smallest again (warm). The two JIT settings alternate, the first of each pair swapped every repeat. Printed: the
medians with their ranges and the ratio C1 / tiered; kept in benchmarks/results/spark_jit.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import log, median, paired_rows, result_file

CHILD = """
import json, shutil, sys, time
from pathlib import Path
t0 = time.perf_counter()
from spark.session import session
from advisor.analysis import analyze
quick, studies = json.loads(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
s = session("local[2]", app="kafkatune-bench", driver_memory="2g", quick_jit=quick)
out = {"session_s": time.perf_counter() - t0}
for i, d in enumerate([*studies, studies[0]]):
    shutil.rmtree(d / "analysis", ignore_errors=True)
    t = time.perf_counter()
    analyze(d, s)
    out[f"analysis_{i}_s"] = time.perf_counter() - t
s.stop()
print(json.dumps(out))
"""


def measure(quick: bool, studies: list[Path]) -> dict[str, float]:
    p = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(quick), *map(str, studies)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
    )
    if p.returncode != 0:
        sys.exit(f"the analysis child failed ({p.returncode}): {p.stderr[-2000:]}")
    d: dict[str, float] = json.loads(p.stdout.strip().splitlines()[-1])
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="0.002,1", help="millions of samples per study, comma-separated")
    ap.add_argument("--quick", action="store_true", help="1 repeat, the small study only (a check that it runs)")
    a = ap.parse_args()
    sizes = [0.002] if a.quick else [float(x) for x in a.sizes.split(",")]
    repeats = 1 if a.quick else a.repeats
    from records import synthetic

    root = Path(tempfile.mkdtemp(prefix="kt-spark-jit-"))
    try:
        studies = [synthetic.generate(root / f"s{m:g}M", trials=6, samples=int(m * 1e6)) for m in sizes]
        keys = ["session_s", *(f"analysis_{i}_s" for i in range(len(sizes))), f"analysis_{len(sizes)}_s"]
        names = ["session start", *(f"first analysis, {m:g} M samples" for m in sizes), "the smallest again (warm)"]
        runs: dict[str, list[dict[str, float]]] = {"tiered": [], "c1": []}
        for r in range(repeats):
            for quick in (False, True) if r % 2 == 0 else (True, False):
                label = "c1" if quick else "tiered"
                t0 = time.monotonic()
                runs[label].append(measure(quick, studies))
                log(f"repeat {r + 1}/{repeats} {label}: {time.monotonic() - t0:.1f} s {runs[label][-1]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    header = f"(seconds, median of {repeats})"
    rows = paired_rows(runs, "tiered", "c1", dict(zip(keys, names, strict=True)), header, 36)
    total = {lb: [sum(x[k] for k in keys[:-1]) for x in runs[lb]] for lb in runs}
    rows["session and first analyses"] = {
        "tiered_s_median": round(median(total["tiered"]), 2),
        "c1_s_median": round(median(total["c1"]), 2),
        "ratio_c1_tiered": round(median(total["c1"]) / median(total["tiered"]), 2),
    }
    print(f"session and first analyses: {rows['session and first analyses']}")
    if not a.quick:
        result_file(
            "spark_jit",
            {
                "args": {"repeats": repeats, "sizes_m_samples": sizes, "trials": 6, "master": "local[2]"},
                "n": repeats,
                "summary": rows,
                "runs": runs,
            },
        )


if __name__ == "__main__":
    main()
