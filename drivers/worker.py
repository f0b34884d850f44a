"""Load worker processes: one producer or one consumer each, timed by the framework.

The parent (`drivers.runner`) starts workers with the `spawn` method and talks to them through one
queue. Every message the workers put on it is a plain tuple:

    ("ready", role, wid)
    ("tick", role, wid, second, msgs, bytes, errors, hist, thread_cpu_s, process_cpu_s,
     buffer_full, sent)
    ("done", role, wid, report_dict)
    ("error", role, wid, text)

`second` counts from the run's start (t0); `msgs`/`bytes` are acknowledged (producers) or received
(consumers) in that second, `sent` what producers handed to the driver; `hist` is the encoded
HdrHistogram of that second (publish latency for producers, end-to-end latency for consumers).
Clocks: `time.time_ns` for timestamps that cross processes (the payload's send time), injected so tests
can replace it.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from drivers import api, payload
from drivers.recorder import new_histogram, record_ns

Clock = Callable[[], int]


@dataclass(frozen=True)
class WorkerTask:
    role: str  # "producer" | "consumer"
    wid: int  # producer id (global) or consumer index
    driver: str
    common: dict[str, str]
    topic: str
    overrides: dict[str, str]
    netns: str | None = None
    # producer
    message_size: int = 1024
    rate: float = 0.0  # msg/s for this producer, 0 = max
    key_mode: str = "NO_KEY"
    partitions: int = 1
    # consumer
    subscription: str = ""


# The run's time line, in a shared int64 array the parent fills before it sets `go` (the workers are
# started, and have connected, before the parent knows when the run begins).
TIMING_FIELDS = ("t0_ns", "measure_start_ns", "measure_end_ns", "produce_end_ns", "drain_timeout_s")


def read_timing(shared: Any) -> dict[str, int]:
    return dict(zip(TIMING_FIELDS, list(shared), strict=True))


def _enter(task: WorkerTask) -> api.Driver:
    if task.netns:
        from brokerconf.netns import enter

        enter(task.netns)
    return api.load_driver(task.driver)(task.common)


class _Ticker:
    """Emits one tick per second of the run; keeps the per-second histogram and counters."""

    def __init__(self, q: Queue[Any], role: str, wid: int, t0: int) -> None:
        self.q, self.role, self.wid, self.t0 = q, role, wid, t0
        self.sec = 0
        self.next_at = t0 + 1_000_000_000
        self.msgs = self.bytes = self.errors = 0
        self.hist = new_histogram()
        self.buffer_full = 0
        self.seq = self._seq_at_last = 0  # producers set seq before a tick: sends counted off the hot path

    def emit(self) -> None:
        enc = self.hist.encode() if self.hist.get_total_count() else None
        self.q.put(
            (
                "tick",
                self.role,
                self.wid,
                self.sec,
                self.msgs,
                self.bytes,
                self.errors,
                enc,
                time.thread_time(),
                time.process_time(),
                self.buffer_full,
                self.seq - self._seq_at_last,
            )
        )
        self._seq_at_last = self.seq
        self.msgs = self.bytes = self.errors = self.buffer_full = 0
        self.hist.reset()
        self.sec += 1
        self.next_at = self.t0 + (self.sec + 1) * 1_000_000_000

    def catch_up(self, now: int) -> None:
        while now >= self.next_at:
            self.emit()


class _ProducerState:
    def __init__(self, timing: dict[str, int], clock: Clock) -> None:
        self.clock = clock
        self.m_start = timing["measure_start_ns"]
        self.m_end = timing["measure_end_ns"]
        self.pub = new_histogram()
        self.delay = new_histogram()
        self.acked = bytearray(1 << 16)
        self.n_acked = 0
        self.n_errors = 0
        self.bytes_acked = 0
        self.error_samples: list[str] = []
        self.ticker: _Ticker | None = None

    def on_done(self, err: str | None, data: bytes) -> None:
        now = self.clock()
        _pid, seq, sent = payload.unpack_from(data)
        t = self.ticker
        assert t is not None
        if err is not None:
            self.n_errors += 1
            t.errors += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(err)
            return
        self.acked[seq] = 1
        self.n_acked += 1
        n = len(data)
        self.bytes_acked += n
        t.msgs += 1
        t.bytes += n
        record_ns(t.hist, now - sent)
        if self.m_start <= sent < self.m_end:
            record_ns(self.pub, now - sent)


def run_producer(
    task: WorkerTask, q: Queue[Any], timing: Any, go: Event, stop: Event, clock: Clock = time.time_ns
) -> None:
    try:
        drv = _enter(task)
        prod = drv.create_producer(task.topic, task.overrides)
        q.put(("ready", "producer", task.wid))
        go.wait()
        _produce(task, read_timing(timing), prod, q, stop, clock)
        drv.close()
    except BaseException:
        q.put(("error", "producer", task.wid, traceback.format_exc(limit=8)))


def _produce(
    task: WorkerTask, timing: dict[str, int], prod: api.Producer, q: Queue[Any], stop: Event, clock: Clock
) -> None:
    t0, end = timing["t0_ns"], timing["produce_end_ns"]
    st = _ProducerState(timing, clock)
    tick = st.ticker = _Ticker(q, "producer", task.wid, t0)
    body = os.urandom(task.message_size - payload.HEADER_BYTES)
    pack, pid, on_done = payload.pack, task.wid, st.on_done
    interval = 1e9 / task.rate if task.rate > 0 else 0.0
    m_start, m_end = st.m_start, st.m_end
    key_mode, parts = task.key_mode, max(1, task.partitions)
    acked = st.acked
    delay = st.delay
    seq = 0
    while clock() < t0:
        time.sleep(0.0005)
    while True:
        now = clock()
        if now >= tick.next_at:
            tick.seq = seq
            tick.catch_up(now)
            if stop.is_set():
                break
        if now >= end:
            break
        if interval:
            intended = t0 + int(seq * interval)
            if now < intended:
                wait_s = (intended - now) / 1e9
                # librdkafka's poll timeout is whole milliseconds: a shorter one returns at once and the
                # loop would spin, stealing the brokers' CPU. Sleep for sub-millisecond gaps instead.
                if wait_s >= 0.001:
                    prod.poll(min(wait_s, 0.005))
                else:
                    time.sleep(wait_s)
                continue
        else:
            intended = now
        if seq >= len(acked):
            acked.extend(bytes(len(acked)))
        key = (
            None
            if key_mode == "NO_KEY"
            else (str(seq % parts).encode() if key_mode == "KEY_ROUND_ROBIN" else str(now).encode())
        )
        try:
            prod.send(key, pack(pid, seq, now) + body, on_done)
        except api.BufferFull:
            tick.buffer_full += 1
            prod.poll(0.005)  # the same sequence number goes again: its delay keeps growing
            continue
        if m_start <= now < m_end:
            record_ns(delay, now - intended)
        seq += 1
        prod.poll(0)
    outstanding = prod.flush(max(1.0, timing["drain_timeout_s"]))
    tick.seq = seq
    tick.catch_up(clock())
    tick.emit()
    prod.close()
    q.put(
        (
            "done",
            "producer",
            task.wid,
            {
                "sent": seq,
                "acked": st.n_acked,
                "errors": st.n_errors,
                "bytes_acked": st.bytes_acked,
                "outstanding": outstanding,
                "error_samples": st.error_samples,
                "acked_map": bytes(acked[:seq]),
                "publish_hist": st.pub.encode() if st.pub.get_total_count() else None,
                "delay_hist": delay.encode() if delay.get_total_count() else None,
            },
        )
    )


class _ConsumerState:
    def __init__(self, q: Queue[Any], wid: int, clock: Clock) -> None:
        self.clock = clock
        self.ticker = _Ticker(q, "consumer", wid, clock())
        self.m_start = self.m_end = 0  # nothing counts as measured until the time line is known
        self.e2e = new_histogram()
        self.seen: dict[int, bytearray] = {}
        self.received = 0
        self.bytes = 0

    def start(self, timing: dict[str, int]) -> None:
        self.ticker = _Ticker(self.ticker.q, "consumer", self.ticker.wid, timing["t0_ns"])
        self.m_start, self.m_end = timing["measure_start_ns"], timing["measure_end_ns"]

    def on_message(self, data: bytes) -> None:
        now = self.clock()
        pid, seq, sent = payload.unpack_from(data)
        m = self.seen.get(pid)
        if m is None:
            m = self.seen[pid] = bytearray(1 << 16)
        if seq >= len(m):
            m.extend(bytes(max(len(m), seq + 1 - len(m))))
        c = m[seq]
        if c < 255:
            m[seq] = c + 1
        self.received += 1
        n = len(data)
        self.bytes += n
        t = self.ticker
        t.msgs += 1
        t.bytes += n
        record_ns(t.hist, now - sent)
        if self.m_start <= sent < self.m_end:
            record_ns(self.e2e, now - sent)


def run_consumer(
    task: WorkerTask, q: Queue[Any], timing: Any, go: Event, stop: Event, clock: Clock = time.time_ns
) -> None:
    try:
        drv = _enter(task)
        st = _ConsumerState(q, task.wid, clock)
        cons = drv.create_consumer(task.topic, task.subscription, st.on_message, task.overrides)
        announced = False
        while not go.is_set():  # poll so that the group forms and partitions get assigned
            cons.poll(0.05)
            if not announced and cons.ready():
                q.put(("ready", "consumer", task.wid))
                announced = True
        st.start(read_timing(timing))
        tick = st.ticker
        while not stop.is_set():
            cons.poll(0.1)
            tick.catch_up(clock())
        tick.emit()
        errors = getattr(cons, "errors", 0)
        cons.close()
        drv.close()
        q.put(
            (
                "done",
                "consumer",
                task.wid,
                {
                    "received": st.received,
                    "bytes": st.bytes,
                    "errors": errors,
                    "seen": {pid: bytes(m) for pid, m in st.seen.items()},
                    "e2e_hist": st.e2e.encode() if st.e2e.get_total_count() else None,
                },
            )
        )
    except BaseException:
        q.put(("error", "consumer", task.wid, traceback.format_exc(limit=8)))
