"""Load worker processes, the consumer side: one consumer each, timed by the framework (the messages it puts on the
coordinator's queue are described in loadgen.worker)."""

from __future__ import annotations

import time
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from drivers import api
from loadgen.accounts import Clock, ConsumerState
from loadgen.channel import read_timing
from loadgen.ticker import Ticker
from loadgen.worker import WorkerTask, enter

# after the producers' end, a consumer says how many distinct records it received this often (loadgen.runner ends
# the drain once every acknowledged record arrived and nothing more did for a moment)
COUNT_EVERY_NS = 100_000_000


class _Working:
    """A consumer application's processing time per message, spent after the framework counted it: sleeps
    taken in slices of at least 1 ms (a sleep's own overhead would inflate shorter ones), so n messages
    cost n × `work_ns` however they arrive."""

    def __init__(self, handler: api.MessageCallback, work_ns: int) -> None:
        self.handler, self.work_ns, self.debt = handler, work_ns, 0

    def __call__(self, data: bytes) -> None:
        self.handler(data)
        self.debt += self.work_ns
        if self.debt >= 1_000_000:
            t = time.perf_counter_ns()
            time.sleep(self.debt / 1e9)
            self.debt -= time.perf_counter_ns() - t


def run_consumer(
    task: WorkerTask,
    q: Queue[Any],
    timing: Any,
    go: Event,
    stop: Event,
    pause: Event | None = None,
    producers_stopped: Event | None = None,
    clock: Clock = time.time_ns,
) -> None:
    """`producers_stopped`: set when the coordinator ends the producers before the run's planned end (a search
    that found its answer, a warm-up whose JIT is quiet); the consumer then reports its distinct records from that
    moment, as it does after the planned end, so the drain ends when they have arrived (loadgen.collect) rather
    than after the workload's drainIdleSeconds of quiet."""
    try:
        drv = enter(task)
        st = ConsumerState(clock, task.message_size)
        handler = _Working(st.on_message, task.work_ns) if task.work_ns else st.on_message
        cons = drv.create_consumer(task.topic, task.subscription, handler, task.overrides)
        if not task.work_ns:  # an application's time per message is spent per message
            cons.receive_batches(st.on_batch)
        _join(cons, go, q, task.wid)
        tl = read_timing(timing)
        st.buf.m_start, st.buf.m_end = tl.measure_start_ns, tl.measure_end_ns
        tick = Ticker(q, "consumer", task.wid, tl.t0_ns, st.buf, task.message_size)
        received = 0
        paused = False
        count_at = tl.produce_end_ns
        gap, out_of_poll = tick.watch.gap, time.perf_counter_ns()
        while not stop.is_set():
            if pause is not None and pause.is_set() != paused:  # a backlog run (loadgen.runner)
                paused = not paused
                cons.pause() if paused else cons.resume()
            in_poll = time.perf_counter_ns()
            gap(in_poll - out_of_poll)
            received += cons.poll(0.1)
            out_of_poll = time.perf_counter_ns()
            now = clock()
            tick.catch_up(now)
            if producers_stopped is not None and producers_stopped.is_set():
                count_at, producers_stopped = min(count_at, now), None  # ended early: count from now on
            if now >= count_at:
                q.put(("count", "consumer", task.wid, st.distinct()))
                count_at = now + COUNT_EVERY_NS
        tick.emit()
        q.put(("done", "consumer", task.wid, _close(cons, drv, st, received)))
    except BaseException:
        q.put(("error", "consumer", task.wid, traceback.format_exc(limit=8)))


def _join(cons: Any, go: Event, q: Queue[Any], wid: int) -> None:
    """Poll until the run starts, so that the group forms and partitions get assigned; say "ready" once they are."""
    announced = False
    while not go.is_set():
        cons.poll(0.05)
        if not announced and cons.ready():
            q.put(("ready", "consumer", wid))
            announced = True


def _close(cons: Any, drv: Any, st: ConsumerState, received: int) -> dict[str, Any]:
    """Close the consumer and its driver; what the consumer reports at its end (loadgen.collect reads it)."""
    errors = getattr(cons, "errors", 0)
    state = cons.client_state() if not received else None  # where it waited (clientside.summary)
    cons.close()
    drv.close()
    return {
        "received": received,
        "records_per_receive_call": round(received / st.batches, 1) if st.batches else 1,
        "errors": errors,
        "client_state": state,
        "seen": {pid: bytes(m) for pid, m in st.seen.items()},
        "e2e_hist": st.buf.window.encode() if st.buf.window.get_total_count() else None,
    }
