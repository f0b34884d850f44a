"""Warming a freshly started cluster before anything is measured.

A cold Kafka JVM spends minutes of CPU in the JIT compiler: on this 2-core machine a fresh testbed
answered a 2,000 msg/s acks=all load with seconds of publish latency, a warm one with ~7 ms, and it
took 3–4 minutes of load to get there. Numbers from a cold cluster are the compiler's, not Kafka's.

The load is the point: when the producers end, the consumers stop with them (runner.run's drain=False) instead
of reading the backlog a cold cluster left them (seconds after a rolling restart, measured: end-to-end p99 5.7 s
at the end of a 30-s warm-up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cluster.target import Placement
from loadgen import result, runner
from loadgen.workload import parse_workload


def warm_up(
    bootstrap: str,
    seconds: float,
    *,
    placements: Sequence[Placement] = (None,),
    say: Callable[[str], None] = print,
    common: Mapping[str, str] | None = None,
) -> None:
    """Run acks=all load through every broker (6 partitions) and read it back, for `seconds`.

    `common`: client security settings (an inventory's), `placements`: where the workers run."""
    w = parse_workload(
        {
            "name": "warmup",
            "partitionsPerTopic": 6,
            "messageSize": 1024,
            "producersPerTopic": 1,
            "consumerPerSubscription": 1,
            "testDurationMinutes": seconds / 60,
            "producerConfig": {"acks": "all", "linger.ms": 5},
        }
    )
    say(f"warming up the brokers' JIT for {seconds:g} s with acks=all load")
    raw = runner.run(
        w, {**(common or {}), "bootstrap.servers": bootstrap}, placements=placements, say=lambda m: None, drain=False
    )
    summary: dict[str, Any] = result.build(raw)[0]["summary"]
    e2e = summary["end_to_end_latency_ms"]
    p99 = f"end-to-end p99 {e2e['p99']:.2f} ms" if e2e.get("p99") is not None else "end-to-end latency not measured"
    say(f"warm-up done: {summary['publish_mb_s']:.1f} MB/s, {p99}")
