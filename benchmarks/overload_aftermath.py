"""What an overloaded search step leaves behind: the same rate before and after it, from one recorded search run.

Reads a search run's records (samples, broker and host metrics, and its steps: search.json) and prints, per step,
its rate, verdict and p99 end-to-end beside what the brokers spent on it over its judged seconds: the machine's busy
CPU share, the brokers' cores, their JIT compilers' cores, the produce request's local (log append) time per
request and the producers' queue p99. A rate measured both before and after an overload shows the aftermath.
The default run is the search recorded in tests/fixtures/recorded/after-overload (the suite's tuned shaped sweep,
12 MB/s links, 6 partitions: its first repeat landed 29 % below the other two).

    .venv/bin/python benchmarks/overload_aftermath.py [RUN_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from _common import REPO, result_file

DEFAULT = REPO / "tests" / "fixtures" / "recorded" / "after-overload"


def per_step(run: Path) -> list[dict[str, Any]]:
    """Each step's verdict beside the cluster's cost of it, averaged over the step's judged seconds."""
    steps = json.loads((run / "search.json").read_text())["steps"]
    host = pq.read_table(run / "host_metrics.parquet").to_pandas().set_index("second")
    brokers = pq.read_table(run / "broker_metrics.parquet").to_pandas()
    samples = pq.read_table(run / "samples.parquet").to_pandas()
    b = brokers.groupby("second").agg(
        jit=("jit_compile_s_per_s", "sum"),
        local_ms=("produce_local_ms_per_s", "sum"),
        requests=("produce_requests_per_s", "sum"),
    )
    b_cpu = host[[c for c in host.columns if c.startswith("broker") and c.endswith("_cpu")]].sum(axis=1)
    queue = samples[samples.role == "producer"].groupby("second")["queue_p99_ms"].max()
    out = []
    for st in steps:
        js = st["judged_s"]
        win = b.loc[js[0] : js[-1]]
        out.append(
            {
                "rate_msg_s": round(st["rate_msg_s"]),
                "held": st["held"],
                "phase": st["phase"],
                "seconds": js,
                "p99_e2e_ms": st["p99_e2e_ms"],
                "cpu_busy": round(float(host.loc[js[0] : js[-1], "cpu_busy"].mean()), 3),
                "broker_cores": round(float(b_cpu.loc[js[0] : js[-1]].mean()), 3),
                "broker_jit_cores": round(float(win["jit"].mean()), 3),
                "produce_local_ms_per_request": round(float(win["local_ms"].sum() / win["requests"].sum()), 3),
                "producer_queue_p99_ms": round(float(queue.loc[js[0] : js[-1]].median()), 1),
            }
        )
    return out


def main() -> None:
    run = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    rows = per_step(run)
    print(f"{'rate':>7} {'':4} {'p99 ms':>7} {'CPU busy':>8} {'brokers':>7} {'JIT':>5} {'local ms':>8} {'queue':>6}")
    for r in rows:
        verdict = "held" if r["held"] else "miss"
        cost = (r["cpu_busy"], r["broker_cores"], r["broker_jit_cores"], r["produce_local_ms_per_request"])
        print(
            f"{r['rate_msg_s']:>7,} {verdict:4} {r['p99_e2e_ms']:>7.1f} {cost[0]:>8.2f} {cost[1]:>7.2f} "
            f"{cost[2]:>5.2f} {cost[3]:>8.3f} {r['producer_queue_p99_ms']:>6.1f}"
        )
    result_file(
        "overload_aftermath", {"run": str(run.relative_to(REPO) if run.is_relative_to(REPO) else run), "steps": rows}
    )


if __name__ == "__main__":
    main()
