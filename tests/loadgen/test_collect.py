"""The coordinator's drain (loadgen.collect): once the producers are done, the consumers stop as soon as their counts
of distinct records (sent ten times a second by each consumer) reach what was acknowledged, without waiting for a
per-second tick. Fed here the messages a run's workers send, on the channel's queue."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

from loadgen.channel import Timing
from loadgen.collect import collect
from loadgen.rawrun import ConsumerEnd, Evidence, ProducerEnd, RawRun
from loadgen.recorder import LatencyBuffer
from loadgen.ticker import Ticker
from loadgen.wire import decode, encode
from loadgen.workload import parse_workload


def test_the_drain_ends_on_the_consumers_counts_without_a_tick() -> None:
    w = parse_workload({"name": "drain", "producersPerTopic": 1, "consumerPerSubscription": 1, "producerRate": 100})
    raw = RawRun(w, ["t"], Timing(produce_end_ns=time.time_ns()), time.time_ns())
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


def test_a_ticks_evidence_arrives_typed_through_the_queue_and_the_wire() -> None:
    """A producer's tick (loadgen.ticker) carries its own stalls and its client's tail statistics; whether it came
    on the local queue or from a remote agent as a JSON line (loadgen.wire), the run holds it as an Evidence."""
    w = parse_workload({"name": "ticks", "producersPerTopic": 1, "consumerPerSubscription": 1, "producerRate": 100})
    q: queue.Queue[tuple[object, ...]] = queue.Queue()
    tk = Ticker(q, "producer", 0, time.time_ns(), LatencyBuffer(), 1024)  # type: ignore[arg-type]
    tk.stats_fn = lambda: {"queue_p99_ms": 12.5, "rtt_p99_ms": 4.0, "tx_bytes": 1.0}
    tk.emit()
    tk.close()
    msg = q.get_nowait()
    sent = msg[-1]
    assert isinstance(sent, dict) and sent["queue_p99_ms"] == 12.5 and "tx_bytes" not in sent  # a dict on the queue
    raw = RawRun(w, ["t"], Timing(produce_end_ns=time.time_ns()), time.time_ns())
    ch = SimpleNamespace(q=queue.Queue(), stop_consumers=threading.Event())
    ch.q.put(msg)
    ch.q.put(tuple(decode(encode(msg))))
    ch.q.put(("done", "producer", 0, {"acked": 0}))
    collect(raw, ch, [], (1, 0), None, None)  # type: ignore[arg-type]  # the producer's end: no consumer here
    local, remote = raw.ticks
    assert local == remote and isinstance(local.evidence, Evidence)
    assert (local.evidence.queue_p99_ms, local.evidence.rtt_p99_ms) == (12.5, 4.0)
    assert local.evidence.py_gc_ms is not None and local.evidence.loop_gap_ms is None  # measured; none recorded
