"""Nagle's algorithm in the load generator's Kafka clients: the p99 latency of one fixed rate with it on and off.

The Java clients set TCP_NODELAY on every connection; librdkafka, which kafkatune's Kafka driver runs on, leaves
Nagle's algorithm on unless `socket.nagle.disable` says otherwise. With it on, the tail of a produce request can
wait for the broker's delayed ACK. This measures the same workload (1-KB records, 6 partitions, acks=all,
linger.ms 5, one producer and one consumer) at `--rate` msg/s on the shaped testbed (25 MB/s links), with
`socket.nagle.disable` false (librdkafka's default) and true (the harness's, drivers.kafka) in the producer and the
consumer, alternating and each first in turn, `--pairs` times, on links as they are and with `--delay-ms` added
to every broker's link (testbed.netns.degrade, the stretched scenario's). It prints each run and the medians, and
keeps them in benchmarks/results/client_nodelay.json.

    .venv/bin/python benchmarks/client_nodelay.py [--rate 2000] [--pairs 3] [--seconds 20] [--delay-ms 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from _common import bench, broker_delay, demo_workload, log, median, result_file, testbed

SIDES = {"nagle on (librdkafka's default)": "false", "nagle off (TCP_NODELAY, as Java)": "true"}
SLO_MS = 100.0


def one(tb: Any, tmp: Path, name: str, nodelay: str, rate: float, seconds: float) -> dict[str, Any]:
    conf = {"socket.nagle.disable": nodelay}
    producer = {"acks": "all", "linger.ms": 5, **conf}
    wl = demo_workload(tmp / f"{name}.json", f"nodelay-{name}", producer, rate, seconds, consumer=conf)
    d = bench(tb, wl, tmp / name, SLO_MS)
    return {
        "p99_e2e_ms": d["end_to_end_latency_ms"]["p99"],
        "p99_publish_ms": d["publish_latency_ms"]["p99"],
        "consume_msg_s": d["consume_msg_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=2000, help="msg/s, well below what the links carry")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--delay-ms", type=float, default=5, help="added to every broker's link in the second half")
    ap.add_argument("--warm-up", type=float, default=120)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kt-nodelay-"))
    runs: list[dict[str, Any]] = []
    up = {"network": "shaped", "nic_mb_s": 25.0, "subnet": "198.18.3"}
    with testbed(tmp / "tb", warm_up_s=a.warm_up, **up) as tb:
        for delay in (0.0, a.delay_ms):
            with broker_delay(tb, delay):
                for pair in range(a.pairs):
                    order = list(SIDES) if pair % 2 == 0 else list(reversed(SIDES))
                    for side in order:
                        name = f"d{delay:g}-p{pair}-{SIDES[side]}"
                        row = {"delay_ms": delay, "side": side, **one(tb, tmp, name, SIDES[side], a.rate, a.seconds)}
                        runs.append(row)
                        log(f"delay {delay:g} ms, {side}: p99 e2e {row['p99_e2e_ms']} ms, {row['p99_publish_ms']}")
    summary = []
    for delay in (0.0, a.delay_ms):
        for side in SIDES:
            mine = [r for r in runs if r["delay_ms"] == delay and r["side"] == side]
            e2e = [r["p99_e2e_ms"] for r in mine if r["p99_e2e_ms"] is not None]
            row = {
                "delay_ms": delay,
                "side": side,
                "n": len(mine),
                "median_p99_e2e_ms": median(e2e) if e2e else None,
                "min_p99_e2e_ms": min(e2e) if e2e else None,
                "max_p99_e2e_ms": max(e2e) if e2e else None,
                "median_p99_publish_ms": median([r["p99_publish_ms"] for r in mine if r["p99_publish_ms"] is not None]),
            }
            summary.append(row)
            print(
                f"delay {delay:g} ms, {side}: p99 e2e median {row['median_p99_e2e_ms']} ms "
                f"(n={row['n']}, {row['min_p99_e2e_ms']}-{row['max_p99_e2e_ms']}), "
                f"publish {row['median_p99_publish_ms']} ms"
            )
    args = {"rate_msg_s": a.rate, "pairs": a.pairs, "seconds": a.seconds, "delay_ms": a.delay_ms, "nic_mb_s": 25.0}
    result_file("client_nodelay", {"args": args, "summary": summary, "runs": runs})


if __name__ == "__main__":
    main()
