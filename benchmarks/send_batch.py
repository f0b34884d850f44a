"""The send path's Python work per record at max rate (100 B records by default), before and after one change.

Both build a batch of 64 records as `loadgen.worker._blast` does and hand it to a real librdkafka producer
(`drivers.kafka`, the counting producer) whose broker never answers, so every record is queued locally and
the time is the client call's and ours, not the cluster's:
    concat + new dicts   each record's header packed, then concatenated with its body; a new dict per record
                         (the send path until this change)
    one pack + reused    header and body packed in one allocation (`loadgen.payload.record_packer`); the
                         driver's batch sender gives its reused dicts their next values
Prints the median of `--reps` timings of each (ns per record, alternating) and their ratio. The queue is
purged between runs.

    .venv/bin/python benchmarks/send_batch.py [--size 100] [--batches 20000] [--reps 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from _common import log

from drivers import api
from loadgen import payload

BATCH = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batches", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    # a listener nobody runs: the producer queues and never sends; its queue holds every record of a run
    drv = api.load_driver("kafka")({"bootstrap.servers": "127.0.0.1:9"})
    conf = {"queue.buffering.max.messages": 10_000_000, "queue.buffering.max.kbytes": 2_097_151, "log_level": 0}
    prod: Any = drv.create_counting_producer("kt-send-batch", conf)
    raw = prod._p  # the confluent-kafka producer, for the old path's own produce_batch call
    pool = payload.bodies(a.size - payload.header_bytes(a.size))
    n_pool = len(pool)
    head = payload.packer(a.size)
    pack = payload.record_packer(a.size, len(pool[0]))
    send_batch = prod.batch_sender(lambda err, v: None)

    def old(seq: int, now: int) -> None:
        msgs = [{"value": v} for v in [head(1, s, now) + pool[s % n_pool] for s in range(seq, seq + BATCH)]]
        assert raw.produce_batch("kt-send-batch", msgs) == BATCH

    def new(seq: int, now: int) -> None:
        assert not send_batch([pack(1, s, now, pool[s % n_pool]) for s in range(seq, seq + BATCH)])

    assert head(1, 5, 7) + pool[5] == pack(1, 5, 7, pool[5])  # the same bytes either way
    paths: dict[str, Callable[[int, int], None]] = {"concat + new dicts": old, "one pack + reused": new}
    times: dict[str, list[float]] = {k: [] for k in paths}
    for rep in range(a.reps):
        for name, fn in paths.items() if rep % 2 == 0 else reversed(paths.items()):
            t = time.perf_counter()
            for i in range(a.batches):
                fn(i * BATCH, time.time_ns())
            times[name].append((time.perf_counter() - t) / (a.batches * BATCH) * 1e9)
            prod._p.purge(in_queue=True, in_flight=True, blocking=True)
            prod._p.poll(0)
        log(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:.1f} ns" for k, v in times.items()))
    med = {k: statistics.median(v) for k, v in times.items()}
    o, n = med["concat + new dicts"], med["one pack + reused"]
    print(
        f"{a.size} B records, {BATCH} a batch, median of {a.reps}: concat + new dicts {o:.1f} ns/record, "
        f"one pack + reused {n:.1f} ns/record, ratio {o / n:.2f}x (spread {min(times['one pack + reused']):.1f}-"
        f"{max(times['one pack + reused']):.1f} ns)"
    )


if __name__ == "__main__":
    main()
