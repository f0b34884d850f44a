"""One producer at max rate, librdkafka's default requests in flight per connection (1,000,000) vs the Java
producer's 5 (kafkatune's Kafka driver's default, drivers.kafka.HARNESS_PRODUCER), alternating, same testbed.

100-B records by default, acks=all, linger.ms 5, batch.size 128 KiB, no compression, 6 partitions, no consumers
(the configs of benchmarks/producer_vs_java.py). Each pair runs both, each first in turn; prints each run's MB/s
and the producer process's CPU per record, then the medians, their ratio and the pairs that favoured 5, and one
JSON line.

    .venv/bin/python benchmarks/producer_inflight.py [--pairs 6] [--seconds 20] [--size 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import log, median, testbed
from producer_vs_java import kafkatune_run

SIDES = {"librdkafka 1000000": "1000000", "java 5": "5"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--warm-up", type=float, default=90)
    a = ap.parse_args()
    mbs: dict[str, list[float]] = {k: [] for k in SIDES}
    cpu: dict[str, list[float]] = {k: [] for k in SIDES}
    with testbed(Path(tempfile.mkdtemp(prefix="kt-bench-")), warm_up_s=a.warm_up) as tb:
        boot = tb.state().bootstrap_servers
        for pair in range(a.pairs):
            names = list(SIDES) if pair % 2 == 0 else list(reversed(SIDES))
            for name in names:
                extra = {"max.in.flight.requests.per.connection": SIDES[name]}
                mb, us = kafkatune_run(boot, a.size, a.seconds, 1, extra)
                mbs[name].append(mb)
                if us is not None:
                    cpu[name].append(us)
                log(f"pair {pair + 1}: in flight {name}: {mb:.2f} MB/s, {us if us else float('nan'):.3f} µs/record")
    lib, java = (median(mbs[k]) for k in SIDES)
    wins = sum(j > x for x, j in zip(*mbs.values(), strict=True))
    print(
        f"{a.size} B, median of {a.pairs} pairs: in flight 1,000,000 {lib:.2f} MB/s "
        f"({median(cpu['librdkafka 1000000']):.3f} µs/record), 5 {java:.2f} MB/s ({median(cpu['java 5']):.3f} "
        f"µs/record), ratio {java / lib:.3f}; {wins} of {a.pairs} pairs favoured 5"
    )
    print(
        json.dumps(
            {
                "bench": "producer_inflight",
                "size": a.size,
                "seconds": a.seconds,
                "runs": mbs,
                "cpu_us_per_record": cpu,
                "ratio": round(java / lib, 3),
                "pairs_favouring_5": wins,
            }
        )
    )


if __name__ == "__main__":
    main()
