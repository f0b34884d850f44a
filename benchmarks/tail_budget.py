"""What a run's seconds over the SLO met (loadgen.tail), and what removing the testbed's own part changed.

1. The warm-up, before and after its fixed-rate shape (loadgen.warmup): a freshly started shaped testbed (25 MB/s
   links) warmed at the maximum rate only, then another warmed with the fixed-rate shape too; on each, one
   `--fixed-s` run of the demo's workload at `--rate` msg/s: its seconds over the SLO, window p99, the brokers' JIT
   over its first 30 s and its tail budget.
2. On the second testbed, one search for the sustainable rate (`kafkatune bench`, producerRate 0), then one
   fixed-rate run at 100 % and one at 80 % of it, each with its tail budget.

    .venv/bin/python benchmarks/tail_budget.py [--rate 12000] [--fixed-s 120]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from _common import bench as run_bench
from _common import log, result_file, testbed

from loadgen.tail import words
from loadgen.warmup import PACED
from records.tail import TailBudget
from testbed import netns

SLO_MS = 100.0


def bench(tb: Any, tmp: Path, name: str, rate: float, secs: float) -> dict[str, Any]:
    wl = tmp / f"{name}.json"
    wl.write_text(
        json.dumps(
            {
                "name": name,
                "partitionsPerTopic": 6,
                "messageSize": 1024,
                "producerRate": rate,
                "warmupDurationMinutes": 3 / 60,
                "testDurationMinutes": secs / 60,
                "producerConfig": {"acks": "all"},
            }
        )
    )
    out = tmp / name
    d = run_bench(tb, wl, out, SLO_MS)
    b = pq.read_table(out / "broker_metrics.parquet").to_pandas()
    first = b[(b["phase"] == "measure") & (b["second"] < b[b["phase"] == "measure"]["second"].min() + 30)]
    jit = first.groupby("second")["jit_compile_s_per_s"].sum()
    row = {
        "rate_msg_s": rate,
        "seconds": secs,
        "p99_e2e_ms": d["end_to_end_latency_ms"]["p99"],
        "jit_cores_first_30_s": float(jit.mean()) if len(jit) else None,
        "tail": d.get("tail"),
        "sustainable": d.get("sustainable"),
    }
    log(f"{name}: p99 e2e {row['p99_e2e_ms']} ms; JIT over the first 30 s {row['jit_cores_first_30_s']}")
    for line in words(TailBudget.from_json(d["tail"])) if d.get("tail") else []:
        log(f"  {line}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=12000)
    ap.add_argument("--fixed-s", type=float, default=120)
    ap.add_argument("--quick", action="store_true", help="30-s runs")
    a = ap.parse_args()
    secs = 30 if a.quick else a.fixed_s
    if not netns.can_shape()[0]:
        sys.exit(f"needs the shaped testbed: {netns.can_shape()[1]}")
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for name, paced in (("max_rate_shapes_only", None), ("with_fixed_rate_shape", PACED)):
            with testbed(
                tmp / name, warm_up_s=240, paced=paced, network="shaped", nic_mb_s=25.0, subnet="198.18.3"
            ) as tb:
                out[name] = bench(tb, tmp, f"{name}-fixed", a.rate, secs)
                if paced is None:
                    continue
                found = bench(tb, tmp, "search", 0, 6)["sustainable"]
                rate = found["rate_msg_s"]
                out["search"] = {"rate_msg_s": rate, "mb_s": found["mb_s"], "note": found["note"]}
                if rate:
                    out["at_100"] = bench(tb, tmp, "at-100", round(rate), secs)
                    out["at_80"] = bench(tb, tmp, "at-80", round(0.8 * rate), secs)
    for k in ("max_rate_shapes_only", "with_fixed_rate_shape", "at_100", "at_80"):
        if k in out:
            t = out[k]["tail"] or {}
            print(
                f"{k}: p99 {out[k]['p99_e2e_ms']} ms, {t.get('above_slo')} of {t.get('seconds')} s over the SLO, "
                f"unexplained {t.get('unexplained', {}).get('share', 0):.0%}, JIT {out[k]['jit_cores_first_30_s']}"
            )
    result_file("tail_budget", {"args": vars(a), "runs": out})


if __name__ == "__main__":
    main()
