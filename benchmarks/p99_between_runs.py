"""How much the p99 end-to-end latency of one fixed rate moves between runs, near the sustainable rate.

The operating point (sweeps.hold) is a rate that held the SLO in one run; an operator who sets it runs it
again, in another run. Near the knee, where latency climbs steeply with rate, the p99 of a short run swings
from run to run, so a rate that held at 95 % of the SLO can miss in the next run. This measures that swing
on the shaped testbed (the one tests/e2e/test_shaped.py uses): the same workload at each of `--rates`, `--reps`
runs per rate, interleaved (A B C A B C ...), each `--seconds` long after a 3-s warm-up, on one warm cluster.
It prints, per rate, the median p99 and the largest / smallest p99 of its runs: the headroom the operating
point needs (`hold.headroom`, docs/design.md) is about the smallest / largest ratio.

    .venv/bin/python benchmarks/p99_between_runs.py [--rates 6000,6800,7400] [--reps 4] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import log, median, testbed

from core.typed import to_json
from loadgen import result, runner
from loadgen.workload import parse_workload
from testbed import netns


def one_run(tb: object, rate: float, seconds: float) -> dict[str, float | None]:
    st = tb.state()  # type: ignore[attr-defined]
    w = parse_workload(
        {
            "name": f"p99-{rate:.0f}",
            "partitionsPerTopic": 6,
            "messageSize": 1024,
            "producerRate": rate,
            "warmupDurationMinutes": 3 / 60,
            "testDurationMinutes": seconds / 60,
            "producerConfig": {"acks": "all"},
        }
    )
    at = runner.RunSettings(
        {"bootstrap.servers": st.bootstrap_servers},
        tb.client_netns(st),  # type: ignore[attr-defined]
        {nd.id: nd.metrics_url for nd in st.nodes},
    )
    raw = runner.run(w, at.quiet())
    s = to_json(result.build(raw).result.summary)
    return {"p99_e2e_ms": s["end_to_end_latency_ms"]["p99"], "consume_msg_s": s["consume_msg_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="6000,6800,7400", help="msg/s, comma-separated")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--nic-mbps", type=float, default=12)
    ap.add_argument("--warm-up", type=float, default=40)
    a = ap.parse_args()
    if not netns.can_shape()[0]:
        raise SystemExit(f"needs the shaped testbed: {netns.can_shape()[1]}")
    rates = [float(x) for x in a.rates.split(",")]
    got: dict[float, list[dict[str, float | None]]] = {r: [] for r in rates}
    with testbed(
        Path(tempfile.mkdtemp(prefix="kt-p99-")),
        warm_up_s=a.warm_up,
        network="shaped",
        nic_mb_s=a.nic_mbps,
        subnet="198.18.3",
    ) as tb:
        for i in range(a.reps):
            for r in rates:
                got[r].append(one_run(tb, r, a.seconds))
                log(f"rep {i + 1} {r:,.0f} msg/s: p99 e2e {got[r][-1]['p99_e2e_ms']} ms")
    out = []
    for r in rates:
        p99s = [x["p99_e2e_ms"] for x in got[r] if x["p99_e2e_ms"] is not None]
        row = {
            "rate_msg_s": r,
            "n": len(p99s),
            "p99_e2e_ms": p99s,
            "median_ms": round(median(p99s), 1) if p99s else None,
            "max_over_min": round(max(p99s) / min(p99s), 2) if p99s else None,
        }
        out.append(row)
        print(
            f"{r:>7,.0f} msg/s  p99 e2e median {row['median_ms']} ms over n={row['n']} runs of {a.seconds:g} s, "
            f"range {min(p99s):.1f}-{max(p99s):.1f} ms, largest/smallest {row['max_over_min']}x"
        )
    print(json.dumps({"bench": "p99_between_runs", "seconds": a.seconds, "rates": out}))


if __name__ == "__main__":
    main()
