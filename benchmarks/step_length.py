"""How long must a step be for its p99 to be stable? The p99 of one fixed rate over windows of T seconds.

The sustainable-rate search (loadgen.search) judges each step's p99 against the SLO; how long a step runs decides
how much that p99 moves by chance. This runs the demo's workload (1 KB, acks=all, 6 partitions) at one fixed rate
for `--seconds` on the running testbed, cuts the measure window into non-overlapping windows of each length T and
prints, per T, the p99 end-to-end of every window: median, largest / smallest, and the coefficient of variation.

    .venv/bin/python benchmarks/step_length.py [--rate 12000] [--seconds 240] [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from _common import log, result_file

from core import paths
from loadgen import recorder, runner
from loadgen.workload import parse_workload
from records.testbed import load_state, state_path

LENGTHS = (3, 5, 10, 15, 20, 30, 60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=12000, help="msg/s")
    ap.add_argument("--seconds", type=int, default=240)
    ap.add_argument("--state-dir", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="60 s")
    a = ap.parse_args()
    secs = 60 if a.quick else a.seconds
    st = load_state(state_path(a.state_dir or paths.state_dir()))
    w = parse_workload(
        {
            "name": "step-length",
            "partitionsPerTopic": 6,
            "messageSize": 1024,
            "producerRate": a.rate,
            "warmupDurationMinutes": 5 / 60,
            "testDurationMinutes": secs / 60,
            "producerConfig": {"acks": "all"},
        }
    )
    log(f"{a.rate:,.0f} msg/s for {secs} s on the testbed ({st.network})")
    at = runner.RunSettings(
        {"bootstrap.servers": st.bootstrap_servers}, tuple(st.client_netns) or (None,), st.metrics_urls
    )
    raw = runner.run(w, at.quiet())
    hists: dict[int, list[bytes | None]] = {}
    for t in raw.ticks:
        if t.role == "consumer" and 5 <= t.second < 5 + secs:
            hists.setdefault(t.second, []).append(t.hist)
    seconds = sorted(hists)
    out = {}
    for n in LENGTHS:
        p99s = []
        for i in range(0, len(seconds) - n + 1, n):
            h = recorder.merge(e for s in seconds[i : i + n] for e in hists[s])
            p99s.append(recorder.percentiles(h, [99])[0] / 1000)
        if len(p99s) < 2:
            continue
        row = {
            "windows": len(p99s),
            "p99_ms": [round(p, 1) for p in p99s],
            "median_ms": statistics.median(p99s),
            "largest_over_smallest": max(p99s) / min(p99s),
            "cv": statistics.stdev(p99s) / statistics.fmean(p99s),
        }
        out[str(n)] = row
        print(
            f"T={n:>3} s: {len(p99s):>3} windows, p99 median {row['median_ms']:6.1f} ms, largest/smallest "
            f"{row['largest_over_smallest']:.2f}, cv {row['cv']:.2f}"
        )
    result_file(
        "step_length",
        {"rate_msg_s": a.rate, "seconds": secs, "network": st.network, "nic_mb_s": st.nic_mb_s, "lengths": out},
    )


if __name__ == "__main__":
    main()
