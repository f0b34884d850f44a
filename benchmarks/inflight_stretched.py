"""In-flight produce requests on a stretched cluster: the p99 latency of one fixed rate at 5, 2 and 1 per connection.

A broker reads one request per connection at a time: it mutes the connection from the moment a request arrives until
its response is sent, so requests a producer pipelines wait in the socket behind the one being served. With acks=all
a produce request is served when the followers' next fetch has taken it, a few round trips; on a stretched cluster
that is tens of milliseconds, and a producer that keeps `max.in.flight.requests.per.connection` requests queued
(Kafka's default 5, which kafkatune's defaults run) makes each wait behind the others. This measures Kafka's
defaults otherwise (1-KB records, 6 partitions, acks=all, linger.ms 5, batch.size 16 KB, one producer and one
consumer) at `--rate` msg/s on the shaped testbed (25 MB/s links) with `--delay-ms` on every broker's link
(testbed.netns.degrade, benchmarks/tuning/stretched.yaml's), the in-flight limits interleaved in a rotating order,
`--rounds` times. Per run: p99 publish and end-to-end, and the producer's own request round trip (librdkafka's
`rtt`, which counts the wait in the socket) median and p99. It prints each run and the medians, and keeps them in
benchmarks/results/inflight_stretched.json.

    .venv/bin/python benchmarks/inflight_stretched.py [--rate 1000] [--rounds 3] [--seconds 20] [--delay-ms 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from _common import bench, broker_delay, demo_workload, log, median, producer_stats, result_file, testbed

IN_FLIGHT = (5, 2, 1)  # Kafka's default first
SLO_MS = 200.0  # the stretched scenario's


def one(tb: Any, tmp: Path, name: str, in_flight: int, rate: float, seconds: float) -> dict[str, Any]:
    producer = {"acks": "all", "linger.ms": 5, "batch.size": 16384, "max.in.flight.requests.per.connection": in_flight}
    wl = demo_workload(tmp / f"{name}.json", f"inflight-{name}", producer, rate, seconds)
    d = bench(tb, wl, tmp / name, SLO_MS)
    ps = producer_stats(Path(d["out"]))
    return {
        "p99_e2e_ms": d["end_to_end_latency_ms"]["p99"],
        "p99_publish_ms": d["publish_latency_ms"]["p99"],
        "consume_msg_s": d["consume_msg_s"],
        "rtt_ms": ps.get("rtt_ms"),
        "rtt_p99_ms": ps.get("rtt_p99_ms"),
    }


def spread(lo_hi: list[float] | None) -> str:
    """A summary row's range in words."""
    return f"{lo_hi[0]:.1f}-{lo_hi[1]:.1f}" if lo_hi else "none measured"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=1000, help="msg/s, well below what the links carry")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--delay-ms", type=float, default=5, help="added to every broker's link")
    ap.add_argument("--warm-up", type=float, default=120)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kt-inflight-"))
    runs: list[dict[str, Any]] = []
    up = {"network": "shaped", "nic_mb_s": 25.0, "subnet": "198.18.6"}
    with testbed(tmp / "tb", warm_up_s=a.warm_up, **up) as tb, broker_delay(tb, a.delay_ms):
        for r in range(a.rounds):
            order = IN_FLIGHT[r % 3 :] + IN_FLIGHT[: r % 3]  # each limit first in turn
            for k in order:
                row = {"round": r, "in_flight": k, **one(tb, tmp, f"r{r}-k{k}", k, a.rate, a.seconds)}
                runs.append(row)
                log(
                    f"round {r}, in flight {k}: p99 publish {row['p99_publish_ms']} ms, e2e {row['p99_e2e_ms']} "
                    f"ms, producer rtt median {row['rtt_ms']} p99 {row['rtt_p99_ms']} ms"
                )
    summary = []
    for k in IN_FLIGHT:
        mine = [x for x in runs if x["in_flight"] == k]
        row: dict[str, Any] = {"in_flight": k, "n": len(mine)}
        for f in ("p99_publish_ms", "p99_e2e_ms", "rtt_ms", "rtt_p99_ms"):
            xs = [float(x[f]) for x in mine if x[f] is not None]
            row[f"median_{f}"] = median(xs) if xs else None
            row[f"range_{f}"] = [min(xs), max(xs)] if xs else None
        summary.append(row)
        print(
            f"in flight {k}: p99 publish median {row['median_p99_publish_ms']} ms "
            f"({spread(row['range_p99_publish_ms'])}), e2e {row['median_p99_e2e_ms']} ms "
            f"({spread(row['range_p99_e2e_ms'])}), producer rtt median {row['median_rtt_ms']} ms (n={len(mine)})"
        )
    base = next(s for s in summary if s["in_flight"] == IN_FLIGHT[0])
    for s in summary[1:]:
        if base["median_p99_publish_ms"] and s["median_p99_publish_ms"]:
            s["p99_publish_vs_default"] = s["median_p99_publish_ms"] / base["median_p99_publish_ms"]
            print(f"in flight {s['in_flight']} / {IN_FLIGHT[0]}: p99 publish {s['p99_publish_vs_default']:.2f}x")
    args = {"rate_msg_s": a.rate, "rounds": a.rounds, "seconds": a.seconds, "delay_ms": a.delay_ms, "nic_mb_s": 25.0}
    result_file("inflight_stretched", {"args": args, "summary": summary, "runs": runs})


if __name__ == "__main__":
    main()
