"""The harness's own latency floor: raw-TCP ping-pong through `kafkatune compare` beside sockperf, same run.

Each round runs one compare spec (the raw-TCP driver's ping-pong, 64 B, through the same harness every system
uses; then sockperf's TCP ping-pong on 127.0.0.1) and reads both RTT/2 medians from comparison.json. Prints
per round and the medians over rounds, and the ratio harness / sockperf (the issue's bar: at most 2×).

    .venv/bin/python benchmarks/pingpong_floor.py [--rounds 3] [--messages 5000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from _common import log, median

REPO = Path(__file__).resolve().parent.parent


def one_round(work: Path, i: int, messages: int) -> tuple[float, float]:
    spec = {
        "name": f"floor-{i}",
        "systems": [{"name": "harness-tcp", "driver": "tcp", "common": {"tcp.dir": str(work / "tcp")}}],
        "baseline": False,
        "throughput": None,
        "pingpong": {"size": 64, "messages": messages, "warmupMessages": 500, "repeats": 1},
        "native": {"iperf3": False, "sockperf": True, "seconds": 5},
    }
    f = work / f"floor-{i}.yaml"
    f.write_text(yaml.safe_dump(spec))
    p = subprocess.run(
        [sys.executable, "-m", "kafkatune", "compare", str(f), "--runs-dir", str(work / "runs")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if p.returncode != 0:
        raise SystemExit(f"compare failed ({p.returncode}):\n{p.stderr[-3000:]}")
    doc = json.loads((work / "runs" / f"floor-{i}" / "comparison.json").read_text())
    (row,) = doc["pingpong"]
    return float(row["p50_us"]), float(doc["native"]["sockperf"]["p50_us"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=5000)
    a = ap.parse_args()
    harness, sockperf = [], []
    with tempfile.TemporaryDirectory(prefix="kt-floor-") as tmp:
        for i in range(a.rounds):
            h, s = one_round(Path(tmp), i, a.messages)
            harness.append(h)
            sockperf.append(s)
            log(f"round {i + 1}: harness raw-TCP RTT/2 p50 {h:.1f} µs, sockperf {s:.1f} µs, ratio {h / s:.2f}")
    ratios = [h / s for h, s in zip(harness, sockperf, strict=True)]
    print(f"64 B TCP ping-pong on 127.0.0.1, RTT/2 median per round, {a.rounds} rounds of {a.messages} round trips:")
    for label, xs in (("harness (raw-TCP driver)", harness), ("sockperf", sockperf)):
        print(f"  {label + ':':<26}median {median(xs):.1f} µs (rounds {', '.join(f'{x:.1f}' for x in xs)})")
    print(f"  {'harness / sockperf:':<26}median {median(ratios):.2f}× (range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
