"""The harness's Kafka consumer with librdkafka's fetch.queue.backoff.ms (1,000 ms) against its own (10 ms).

librdkafka stops fetching a partition for fetch.queue.backoff.ms whenever its local queue is over
queued.min.messages / queued.max.messages.kbytes. On one warmed loopback testbed, alternating:

    drain    a topic of N 1-KB records (6 partitions, RF 3) read from the start by the product's consumer
             (drivers.kafka, ConsumerState.on_batch): records per second, CPU per record
    max rate `kafkatune bench`'s runner, 2 producers and 1 consumer (acks=all, linger.ms 5, batch.size 128 KiB),
             3-s warm-up, one 10-s window: what the producers published and the consumer confirmed (MB/s), the
             end-to-end p99 and the time from the producers' end until every acknowledged record arrived

Medians with the range, then one JSON line.

    .venv/bin/python benchmarks/consumer_fetch_backoff.py [--records 1000000] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import log, median, testbed

from core.typed import to_json
from drivers import api
from drivers.kafka import HARNESS_CONSUMER
from loadgen import payload, result, runner
from loadgen.accounts import ConsumerState
from loadgen.workload import parse_workload

SIZE = 1024
PARTITIONS = 6
PRODUCER = {"acks": "all", "linger.ms": "5", "batch.size": str(128 * 1024), "compression.type": "none"}
VARIANTS = {"librdkafka": {"fetch.queue.backoff.ms": "1000"}, "harness": dict(HARNESS_CONSUMER)}


def fill(boot: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": boot, "linger.ms": 20, "batch.size": 1 << 20, "acks": "all"})
    body = bytearray(os.urandom(SIZE))
    pack = payload.packer(SIZE)
    for i in range(n):
        body[: payload.HEADER_BYTES] = pack(1, i, time.time_ns())
        while True:
            try:
                p.produce(topic, bytes(body))
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(120):
        raise SystemExit("the fill did not flush in 120 s")


def drain(boot: str, topic: str, n: int, conf: dict[str, str]) -> dict[str, float]:
    """Read the whole topic with a new group: records/s and the process's CPU per record."""
    drv = api.load_driver("kafka")({"bootstrap.servers": boot})
    st = ConsumerState(time.time_ns, SIZE)
    c = drv.create_consumer(topic, f"drain-{uuid.uuid4().hex[:8]}", st.on_message, conf)
    c.receive_batches(st.on_batch)
    deadline = time.monotonic() + 180
    while not c.ready() and time.monotonic() < deadline:
        c.poll(0.05)
    got, cpu0, w0 = 0, time.process_time(), time.monotonic()
    while got < n and time.monotonic() < deadline:
        got += c.poll(0.1)
        if len(st.buf.lat) > 100_000:  # the latencies of a backlog mean nothing here; keep memory flat
            del st.buf.lat[:]
            del st.buf.sent[:]
    wall, cpu = time.monotonic() - w0, time.process_time() - cpu0
    c.close()
    drv.close()
    if got < n:
        raise SystemExit(f"drain read {got} of {n} records in 180 s")
    return {"krec_s": got / wall / 1e3, "cpu_us_per_rec": cpu / got * 1e6}


def max_rate(boot: str, conf: dict[str, str]) -> dict[str, Any]:
    w = parse_workload(
        {
            "name": "fetchbackoff",
            "partitionsPerTopic": PARTITIONS,
            "messageSize": SIZE,
            "producersPerTopic": 2,
            "testDurationMinutes": 10 / 60,
            "warmupDurationMinutes": 3 / 60,
            "producerConfig": PRODUCER,
            "consumerConfig": conf,
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": boot}).quiet())
    s = to_json(result.build(raw).result.summary)
    return {
        "publish_mb_s": s["publish_mb_s"],
        "consume_mb_s": s["consume_mb_s"],
        "e2e_p99_ms": s["end_to_end_latency_ms"]["p99"],
        "after_produce_end_s": raw.phases_s["after_produce_end"],
    }


def spread(xs: list[float]) -> str:
    return f"{median(xs):9.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000, help="records in the drained topic")
    ap.add_argument("--pairs", type=int, default=3, help="alternating runs of each variant")
    ap.add_argument("--warm-up", type=float, default=60, help="seconds of load on the fresh testbed first")
    a = ap.parse_args()
    out: dict[str, dict[str, list[float]]] = {k: {} for k in VARIANTS}
    with testbed(Path(tempfile.mkdtemp(prefix="kt-fetchbackoff-")), warm_up_s=a.warm_up) as tb:
        boot = tb.state().bootstrap_servers
        drv = api.load_driver("kafka")({"bootstrap.servers": boot})
        topic = f"kt-drain-{uuid.uuid4().hex[:8]}"
        drv.create_topics([api.TopicSpec(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})])
        fill(boot, topic, a.records)
        for i in range(a.pairs):
            for name, conf in VARIANTS.items():
                fig = {**drain(boot, topic, a.records, conf), **max_rate(boot, conf)}
                log(f"pair {i + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in fig.items() if v is not None))
                for k, v in fig.items():
                    if v is not None:
                        out[name].setdefault(k, []).append(float(v))
        drv.delete_topics([topic])
        drv.close()
    print(
        f"{'figure':<22} "
        + " ".join(
            f"{k + ' (fetch.queue.backoff.ms ' + VARIANTS[k]['fetch.queue.backoff.ms'] + ')':>34}" for k in VARIANTS
        )
    )
    for fig in out["harness"]:
        print(f"{fig:<22} " + " ".join(f"{spread(out[k].get(fig, [0.0])):>34}" for k in VARIANTS))
    print(
        json.dumps(
            {
                "bench": "consumer_fetch_backoff",
                "records": a.records,
                "pairs": a.pairs,
                "median": {k: {f: round(median(v), 3) for f, v in d.items()} for k, d in out.items()},
                "runs": out,
            }
        )
    )


if __name__ == "__main__":
    main()
