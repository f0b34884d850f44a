"""Load worker processes: one producer or one consumer each (the consumer side in loadgen.consumer), timed by the
framework.

The parent (`loadgen.runner`) starts workers from a fork server (`loadgen.channel`) and talks to them through one
queue. Every message the workers put on it is a plain tuple:

    ("ready", role, wid)
    ("tick", role, wid, second, msgs, bytes, errors, hist, thread_cpu_s, process_cpu_s,
     buffer_full, sent, delay, evidence)
    ("count", "consumer", wid, received)   # after the producers' end, COUNT_EVERY_S: what arrived so far
    ("done", role, wid, report_dict)
    ("error", role, wid, text)

A consumer's `count` lets the drain end as soon as everything acknowledged arrived, instead of at the next whole
second's tick. `second` counts from the run's start (t0); `msgs`/`bytes` are acknowledged (producers) or received
(consumers) in that second, `sent` what producers handed to the driver; `hist` is the encoded
HdrHistogram of that second (publish latency for producers, end-to-end latency for consumers), `delay`
the encoded publish-delay histogram of that second's sends (a producer with a rate schedule; else None),
`evidence` the worker's own stalls in that second and its client's tail figures (loadgen.selfwatch).
Clocks: `time.time_ns` for timestamps that cross processes (the payload's send time), injected so tests
can replace it.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from drivers import api
from loadgen import payload
from loadgen.accounts import Clock, ProducerState
from loadgen.channel import Timing, read_step, read_timing
from loadgen.recorder import new_histogram, record_ns
from loadgen.ticker import Ticker
from testbed import netns

# Serve delivery callbacks at most every 100 µs of sending rather than after every message: at 100 B
# records the per-message poll was a large share of the send loop. Ack times run late by at most this.
POLL_EVERY_NS = 100_000
# How long a producer waits (at most) for the cluster after its buffer was full, before it tries again: so a
# run's buffer-full count bounds the time the cluster's back-pressure held it (advisor.diagnose reads that).
FULL_WAIT_S = 0.005
# A steered run's producers look for the coordinator's next rate step this often: a step decided just after a
# second ends can then start on the next one (loadgen.search.LOCAL_LEAD_S) with at most this late to catch up.
STEP_READ_NS = 20_000_000
# At max rate without keys the records go to the driver this many at a time (fewer when large: at most
# BATCH_BYTES of them), where its client takes a batch in one call (api.Producer.batch_sender).
BATCH_RECORDS = 64
BATCH_BYTES = 256 * 1024
# How long past the drain timeout a finished producer waits for the end of the run before closing.
LINGER_SLACK_S = 30


@dataclass(frozen=True)
class WorkerTask:
    role: str  # "producer" | "consumer"
    wid: int  # producer id (global) or consumer index
    driver: str
    common: dict[str, str]
    topic: str
    overrides: dict[str, str]
    netns: str | None = None
    message_size: int = 1024  # every payload of a run has this size
    payload_content: str = "random"  # see loadgen.payload.bodies
    # OMB's payloads (loadgen.payload.omb_bodies): a payload file's bytes (hex), or randomized bodies in a pool
    payload_file_hex: str | None = None
    random_ratio: float | None = None
    payload_pool: int = 0
    # producer
    rate: float = 0.0  # msg/s for this producer, 0 = max
    # A rate schedule instead of one rate: (whole second from t0, msg/s for this producer) from that second
    # on, first step at 0 (loadgen.sustainable's ramp). Each step's intended send times start afresh.
    steps: tuple[tuple[int, float], ...] = ()
    key_mode: str = "NO_KEY"
    partitions: int = 1
    # Count acknowledgements instead of timing each (api.Driver.create_counting_producer), where the driver
    # can: the runner asks for it at max rate, unless the workload wants publish latency there.
    count_acks: bool = False
    # consumer
    subscription: str = ""
    work_ns: int = 0  # the application's processing time per message (workload consumerWorkMicros)
    # the process that runs the workers (the bench or sweep, or the remote agent): made where the task is made
    owner_pid: int = field(default_factory=os.getpid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exit_with_parent(owner_pid: int) -> None:
    """A worker whose owner (`owner_pid`: the bench or sweep, not the fork server that forked the worker and may
    outlive it) or parent is gone exits instead of loading a cluster forever: a killed bench once left a producer
    spinning on a core for minutes (benchmarks/broker_jvm.py's first runs)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent and _alive(owner_pid):
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def enter(task: WorkerTask) -> api.Driver:
    """In a worker process: exit with the parent, enter the task's network namespace, open its driver."""
    _exit_with_parent(task.owner_pid)
    if task.netns:
        netns.enter(task.netns)
    return api.load_driver(task.driver)(task.common)


def run_producer(
    task: WorkerTask,
    q: Queue[Any],
    timing: Any,
    go: Event,
    stop: Event,
    next_step: Any = None,
    clock: Clock = time.time_ns,
) -> None:
    """`next_step`: a steered run's shared next rate step (loadgen.channel.Channel.next_step), read every 20 ms."""
    try:
        drv = enter(task)
        prod = drv.create_counting_producer(task.topic, task.overrides) if task.count_acks else None
        counting = prod is not None
        prod = prod or drv.create_producer(task.topic, task.overrides)
        q.put(("ready", "producer", task.wid))
        go.wait()
        _produce(task, read_timing(timing), prod, q, stop, clock, counting, next_step)
        drv.close()
    except BaseException:
        q.put(("error", "producer", task.wid, traceback.format_exc(limit=8)))


def _bodies(task: WorkerTask) -> list[bytes]:
    """The bodies a producer sends in turn (each after its header)."""
    size, header = task.message_size, payload.header_bytes(task.message_size)
    if task.payload_file_hex is not None or task.random_ratio is not None:
        file_bytes = bytes.fromhex(task.payload_file_hex) if task.payload_file_hex is not None else None
        return payload.omb_bodies(size, header, file_bytes, task.random_ratio or 0.0, task.payload_pool)
    return payload.bodies(size - header, task.payload_content, seed=task.wid)


# The send loop is one function on purpose (93 lines, over the 80 every other function keeps to): every
# name it uses in the loop is a local bound once before it (send, poll, pack, the ticker), because a method
# or module lookup per message is a measurable share of the loop at 100 B records; split into helpers, each
# call would add one back.
def _produce(
    task: WorkerTask,
    timing: Timing,
    prod: api.Producer,
    q: Queue[Any],
    stop: Event,
    clock: Clock,
    counting: bool = False,
    next_step: Any = None,
) -> None:
    t0, end = timing.t0_ns, timing.produce_end_ns
    st = ProducerState(timing, clock)
    tick = st.ticker = Ticker(q, "producer", task.wid, t0, st.buf, task.message_size)
    tick.stats_fn, tick.window = prod.stats, (timing.measure_start_ns, timing.measure_end_ns)
    pool = _bodies(task)
    n_pool = len(pool)
    st.unpack = payload.unpacker(task.message_size)
    pid, poll = task.wid, prod.poll
    # header and body in one allocation; every body of a pool has the same length (payload.bodies, omb_bodies)
    (body_len,) = {len(b) for b in pool}
    pack = payload.record_packer(task.message_size, body_len)
    on_done = st.on_failure() if counting else st.on_done()
    send, full = prod.sender(on_done)
    if counting:

        def acked_so_far() -> int:
            unresolved = prod.unresolved()  # serves the failure reports first: they are counted below, not twice
            return tick.seq - unresolved - len(st.failed_seqs)

        tick.acked_fn = acked_so_far
    # a counting producer's callbacks are its failures only: nothing to time, so serve them less often
    poll_every, full_wait = (POLL_EVERY_NS * 10 if counting else POLL_EVERY_NS), FULL_WAIT_S
    steps = sorted((int(s), float(r)) for s, r in task.steps)
    step_version = 0  # the last next_step taken from a steered run's coordinator
    interval = 1e9 / (steps[0][1] if steps else task.rate) if (steps or task.rate > 0) else 0.0
    base_t, base_seq, step_i = t0, 0, 0  # the current step's start and first sequence number
    key_mode, parts = task.key_mode, max(1, task.partitions)
    no_key, round_robin = key_mode == "NO_KEY", key_mode == "KEY_ROUND_ROBIN"
    acked = st.acked
    capacity = len(acked)
    delay = new_histogram()
    tick.delay = delay if interval else None  # publish delay exists only against a schedule
    seq = 0
    last_poll = 0
    next_tick = next_read = tick.next_at
    while clock() < t0:
        time.sleep(0.0005)
    blast = prod.batch_sender(on_done) if not interval and no_key else None
    if blast is not None:
        seq = _blast(task, blast, poll, st, stop, clock, end, pool, pack, counting)
    while blast is None:
        now = clock()
        if now >= next_tick:
            tick.seq = seq
            tick.catch_up(now)
            next_tick = tick.next_at
            if stop.is_set():
                break
        if now >= next_read and steps:  # a steered run's next step, read within STEP_READ_NS of its publication
            if next_step is not None:
                version, at, rate = read_step(next_step)
                if version != step_version:
                    step_version = version
                    del steps[max(step_i + 1, bisect.bisect_left(steps, (at, 0.0))) :]  # a later decision wins
                    steps.append((at, rate))
            while step_i + 1 < len(steps) and now >= t0 + steps[step_i + 1][0] * 1_000_000_000:
                step_i += 1
                base_t, base_seq = t0 + steps[step_i][0] * 1_000_000_000, seq
                interval = 1e9 / steps[step_i][1]
            next_read = now + STEP_READ_NS
            if step_i + 1 < len(steps):  # a planned step starts on time
                next_read = min(next_read, t0 + steps[step_i + 1][0] * 1_000_000_000)
        if now >= end:
            break
        stamp = now
        if interval:
            # The send time written is the intended one: latency counts the wait for a late send too
            # (no coordinated omission).
            intended = stamp = base_t + int((seq - base_seq) * interval)
            if now < intended:
                wait_s = (intended - now) / 1e9
                # librdkafka's poll timeout is whole milliseconds: a shorter one returns at once and the
                # loop would spin, stealing the brokers' CPU. Sleep for sub-millisecond gaps instead.
                if wait_s >= 0.001:
                    poll(min(wait_s, 0.005))
                else:
                    time.sleep(wait_s)
                continue
            record_ns(delay, now - intended)
        if seq >= capacity:
            acked.extend(bytes(capacity))
            capacity = len(acked)
        key = None if no_key else (str(seq % parts).encode() if round_robin else str(now).encode())
        try:
            send(pack(pid, seq, stamp, pool[seq % n_pool]), key)
        except full:
            tick.buffer_full += 1
            poll(full_wait)  # the same sequence number goes again: its delay keeps growing
            continue
        seq += 1
        if now - last_poll >= poll_every:
            poll(0)
            last_poll = now
    batch = _batch_records(task.message_size) if blast is not None else 1
    _finish(task, timing, prod, q, stop, clock, st, seq, scheduled=bool(interval), counting=counting, batch=batch)


def _blast(
    task: WorkerTask,
    send_batch: api.BatchSender,
    poll: Callable[[float], int],
    st: ProducerState,
    stop: Event,
    clock: Clock,
    end: int,
    pool: list[bytes],
    pack: Callable[[int, int, int, bytes], bytes],
    counting: bool,
) -> int:
    """Max rate, no keys: the records go to the driver a batch at a time, one clock read and one call per batch (at
    100 B records the per-record loop's own work cost more CPU than the client's). Each record's send time is its
    batch's clock read, taken before the batch is built: end-to-end latency reads long by at most the time to queue
    one batch (tens of µs). Records the client's full queue refused go again first, with their sequence numbers and
    a fresh send time; those never queued when the run ends are counted dropped unsent (neither acknowledged nor
    lost), like those drop_unsent takes out of the queue. Returns how many sequence numbers were used."""
    tick = st.ticker
    assert tick is not None
    pid, n_pool, acked = task.wid, len(pool), st.acked
    n = _batch_records(task.message_size)
    poll_every, capacity = (POLL_EVERY_NS * 10 if counting else POLL_EVERY_NS), len(acked)
    seq, last_poll, next_tick = 0, 0, tick.next_at
    pending: list[int] = []  # refused by the full queue: they go again first
    while True:
        now = clock()
        if now >= next_tick:
            tick.seq = seq - len(pending)  # handed to the client so far
            tick.catch_up(now)
            next_tick = tick.next_at
            if stop.is_set():
                break
        if now >= end:
            break
        if pending:
            seqs: list[int] | range = pending
        else:
            seqs = range(seq, seq + n)
            seq += n
            if seq > capacity:
                acked.extend(bytes(capacity))
                capacity = len(acked)
        refused = send_batch([pack(pid, s, now, pool[s % n_pool]) for s in seqs])
        if refused:
            pending = [seqs[i] for i in refused]
            tick.buffer_full += 1
            poll(FULL_WAIT_S)
            continue
        pending = []
        if now - last_poll >= poll_every:
            poll(0)
            last_poll = now
    for s in pending:  # numbered, never handed to the client
        st.failed(api.DROPPED)
        if counting:
            st.failed_seqs.append(s)
    return seq


def _batch_records(size: int) -> int:
    return max(1, min(BATCH_RECORDS, BATCH_BYTES // max(1, size)))


def _finish(
    task: WorkerTask,
    timing: Timing,
    prod: api.Producer,
    q: Queue[Any],
    stop: Event,
    clock: Clock,
    st: ProducerState,
    seq: int,
    *,
    scheduled: bool,
    counting: bool,
    batch: int,
) -> None:
    """After the send loop: the backlog dropped (max rate), the flush, the report, then open until the run ends."""
    tick = st.ticker
    assert tick is not None
    acked = st.acked
    if not scheduled or (stop.is_set() and task.steps):
        # Max rate (or a ramp stopped at a step the system did not hold): what is still queued in the client
        # is seconds of backlog that says nothing about the measured window; sending it would only lengthen
        # every run.
        prod.drop_unsent()
    outstanding = prod.flush(max(1.0, timing.drain_timeout_s))
    if counting:
        if outstanding:
            prod.give_up()  # each abandoned message is reported: the acknowledged set is then exact
        acked = st.acked_map(seq)
    tick.seq = seq
    tick.catch_up(clock())
    tick.emit()
    n_acked = acked[:seq].count(1)
    q.put(
        (
            "done",
            "producer",
            task.wid,
            {
                "sent": seq,
                "acked": n_acked,
                "errors": st.n_errors,
                "dropped_unsent": st.n_dropped,
                "outstanding": outstanding,
                "error_samples": st.error_samples,
                "acked_map": bytes(acked[:seq]),
                "publish_hist": st.buf.window.encode() if st.buf.window.get_total_count() else None,
                "acks_counted": counting,  # True: acknowledgements counted, not timed (no publish latency)
                "client_stats": tick.stats,
                "records_per_send_call": batch,  # > 1: handed to the client in batches (_blast)
            },
        )
    )
    # Zenoh, DDS and raw TCP count a send as acknowledged when it returns: it may still sit in the
    # client's send queue, and closing now would discard it (a Zenoh session's Close goes out on the
    # control priority, ahead of queued data). The producer stays open until the coordinator ends the
    # run, after the consumers drained; `stop` is that signal (and the interruption signal).
    stop.wait(timing.drain_timeout_s + LINGER_SLACK_S)
    prod.close()
