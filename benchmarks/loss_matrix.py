"""Is 'lost' lost? Kafka's replication test case under a fault, run again and again, each run's missing messages
classified by reading the log again (loadgen.verify).

The case of tests/faults/test_faults.py (3 brokers, RF 3, min.insync.replicas 2, acks=all, 2 producers of 512-B
records at 2,000 msg/s, a fault 2 s into the window) with `--fault` (default a hard bounce of a partition's leader),
`--runs` times on a private loopback testbed. Per run: acknowledged, consumed, the acknowledged messages no consumer
received before the drain ended, and of those how many were in the log when it was read again (not consumed in
time) and how many were not (lost). Writes benchmarks/results/loss_matrix.json.

    .venv/bin/python benchmarks/loss_matrix.py [--runs 20] [--fault hard_bounce:leader@2]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from _common import log, result_file, testbed

from faults.inject import Injector
from faults.spec import parse
from loadgen import result, runner
from loadgen.workload import parse_workload

LOAD = {
    "partitionsPerTopic": 3,
    "messageSize": 512,
    "producersPerTopic": 2,
    "producerRate": 2000,
    "warmupDurationMinutes": 2 / 60,
    "testDurationMinutes": 8 / 60,
    "drainTimeoutSeconds": 60,
    "producerConfig": {"acks": "all"},
    "topicConfig": {"min.insync.replicas": "2"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--fault", default="hard_bounce:leader@2")
    ap.add_argument("--quick", action="store_true", help="3 runs")
    a = ap.parse_args()
    runs = 3 if a.quick else a.runs
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as td, testbed(Path(td) / "tb", warm_up_s=60, base_port=26090) as tb:
        st = tb.state()
        for i in range(runs):
            w = parse_workload({"name": f"loss-{i}", **LOAD}).with_faults()
            inj = Injector(tb, [parse(a.fault)], say=lambda m: None)
            try:
                at = runner.RunSettings({"bootstrap.servers": st.bootstrap_servers}, on_tick=inj.on_tick)
                raw = runner.run(w, at.quiet())
            finally:
                events = inj.finish()
            s = result.build(raw).result.summary
            v = raw.verified
            row = {
                "run": i,
                "acknowledged": s.acknowledged,
                "consumed": s.consumed,
                "missing": v.missing if v else 0,
                "not_consumed_in_time": s.not_consumed_in_time,
                "lost": s.lost,
                "verified": s.loss_verified,
                "recovery_s": events[0].recovery_s if events else None,
            }
            rows.append(row)
            log(
                f"run {i}: acknowledged {row['acknowledged']:,}, missing {row['missing']}, in the log "
                f"{row['not_consumed_in_time']}, lost {row['lost']}"
            )
    print(
        f"{runs} runs of {a.fault}: {sum(r['missing'] > 0 for r in rows)} with acknowledged messages missing at the "
        f"drain's end; in the log when read again: {sum(r['not_consumed_in_time'] for r in rows)}; lost: "
        f"{sum(r['lost'] for r in rows)}"
    )
    result_file("loss_matrix", {"fault": a.fault, "load": LOAD, "runs": rows})


if __name__ == "__main__":
    main()
