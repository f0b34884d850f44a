"""The coordinator's drain (loadgen.collect): once the producers are done, the consumers stop as soon as their counts
of distinct records (sent ten times a second by each consumer) reach what was acknowledged, without waiting for a
per-second tick. Fed here the messages a run's workers send, on the channel's queue."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

from loadgen.collect import collect
from loadgen.rawrun import ConsumerEnd, ProducerEnd, RawRun
from loadgen.workload import parse_workload


def test_the_drain_ends_on_the_consumers_counts_without_a_tick() -> None:
    w = parse_workload({"name": "drain", "producersPerTopic": 1, "consumerPerSubscription": 1, "producerRate": 100})
    raw = RawRun(w, ["t"], {"produce_end_ns": time.time_ns()}, time.time_ns())
    ch = SimpleNamespace(q=queue.Queue(), stop_consumers=threading.Event())
    ch.q.put(("done", "producer", 0, {"acked": 500}))
    ch.q.put(("count", "consumer", 0, 499))
    ch.q.put(("count", "consumer", 0, 500))

    def consumer() -> None:  # a consumer ends when told to stop, and says so
        assert ch.stop_consumers.wait(30)
        ch.q.put(("done", "consumer", 0, {"received": 500}))

    t = threading.Thread(target=consumer)
    t.start()
    collect(raw, ch, [], (1, 1), None, None)  # type: ignore[arg-type]
    t.join(5)
    assert raw.drain_ended == "arrived" and not raw.ticks
    assert raw.consumers == {0: ConsumerEnd(received=500)} and raw.producers == {0: ProducerEnd(acked=500)}
