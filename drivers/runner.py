"""One benchmark run: topics, worker processes, the time line, the drain, and the raw outcome.

    validate client configs -> create topics (validate-only first) -> start consumers, wait until they
    are assigned -> start producers, wait until connected -> t0 -> warm-up -> measure -> producers stop
    and flush -> consumers drain -> collect -> delete topics

Everything started is stopped on every exit path (Ctrl-C included): workers are terminated and the
run's topics deleted.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.metrics import BrokerMetricsSampler, BrokerSample
from core.errors import RunFailed
from drivers import api
from drivers.remote_workers import RemoteClient, RemoteWorkers
from drivers.worker import TIMING_FIELDS, WorkerTask, run_consumer, run_producer
from kafkatune.workload import Workload

START_DELAY_S = 1.0  # between `go` and t0, so every producer starts on the same tick


def phase_of(second: int, warmup_s: float, test_s: float) -> str:
    """The phase of whole second `second` of a run: only seconds wholly inside the window are measured."""
    if second < math.ceil(warmup_s):
        return "warmup"
    if second + 1 <= warmup_s + test_s + 1e-9:
        return "measure"
    return "drain"


def measured_seconds(warmup_s: float, test_s: float) -> int:
    return sum(1 for s in range(math.ceil(warmup_s + test_s) + 1) if phase_of(s, warmup_s, test_s) == "measure")


@dataclass
class Tick:
    role: str
    wid: int
    second: int
    msgs: int
    nbytes: int
    errors: int
    hist: bytes | None
    thread_cpu_s: float
    process_cpu_s: float
    buffer_full: int
    sent: int


@dataclass
class RawRun:
    """What the workers and the broker sampler reported, before any aggregation."""

    workload: Workload
    topics: list[str]
    timing: dict[str, int]
    started_wall_ns: int
    ticks: list[Tick] = field(default_factory=list)
    producers: dict[int, dict[str, Any]] = field(default_factory=dict)
    consumers: dict[int, dict[str, Any]] = field(default_factory=dict)
    broker_samples: list[BrokerSample] = field(default_factory=list)
    drain_s: float = 0.0
    machine_cpu_percent: float | None = None
    consumer_assignment_wait_s: float = 0.0
    # (role, id) -> where the worker ran: its network namespace, a remote client host, or None (here)
    worker_hosts: dict[tuple[str, int], str | None] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)  # wall time of set-up and clean-up steps


View = Callable[[RawRun, Tick], None]
# Where a worker runs: this host (None), a network namespace on it (its name), or a client host over SSH.
Placement = str | RemoteClient | None


def _topic_names(w: Workload) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"kt-{w.name}-{tag}-{i}" for i in range(w.topics)]


def run(
    w: Workload,
    common: Mapping[str, str],
    *,
    client_netns: Sequence[Placement] = (None,),
    metrics_urls: Mapping[int, str] | None = None,
    on_tick: View | None = None,
    say: Callable[[str], None] = print,
    keep_topics: bool = False,
) -> RawRun:
    import psutil

    drv = api.load_driver(w.driver)(common)
    pc, cc = w.str_map("producerConfig"), w.str_map("consumerConfig")
    drv.validate(pc, cc)
    topics = _topic_names(w)
    specs = [api.TopicSpec(t, w.partitionsPerTopic, w.replicationFactor, w.str_map("topicConfig")) for t in topics]
    drv.create_topics(specs, validate_only=True)

    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    timing = ctx.Array("q", len(TIMING_FIELDS), lock=False)
    go, stop_producers, stop_consumers = ctx.Event(), ctx.Event(), ctx.Event()
    procs: list[Any] = []
    sampler = BrokerMetricsSampler(metrics_urls) if metrics_urls else None
    raw = RawRun(w, topics, {}, time.time_ns())
    created = False
    n_prod = w.topics * w.producersPerTopic
    per_rate = w.producerRate / n_prod if w.producerRate else 0.0
    t_setup = time.monotonic()
    try:
        drv.create_topics(specs)
        created = True
        say(f"created {len(topics)} topic(s) × {w.partitionsPerTopic} partitions: {', '.join(topics)}")
        host = 0

        remote: dict[str, tuple[RemoteClient, list[WorkerTask]]] = {}

        def place() -> Placement:
            """The next host, round robin."""
            nonlocal host
            where = client_netns[host % len(client_netns)]
            host += 1
            return where

        def netns_of(where: Placement) -> str | None:
            return None if isinstance(where, RemoteClient) else where

        def spawn(target: Callable[..., None], task: WorkerTask, stop: Any, where: Placement) -> None:
            raw.worker_hosts[(task.role, task.wid)] = where.label if isinstance(where, RemoteClient) else where
            if isinstance(where, RemoteClient):
                remote.setdefault(where.label, (where, []))[1].append(task)
                return
            name = f"{task.role}-{task.wid}"
            procs.append(ctx.Process(target=target, args=(task, q, timing, go, stop), name=name, daemon=True))

        cid = 0
        for t in topics:
            for s in range(w.subscriptionsPerTopic):
                for _ in range(w.consumerPerSubscription):
                    where = place()
                    task = WorkerTask(
                        "consumer",
                        cid,
                        w.driver,
                        dict(common),
                        t,
                        cc,
                        netns_of(where),
                        message_size=w.messageSize,
                        subscription=f"kt-sub-{t}-{s}",
                    )
                    spawn(run_consumer, task, stop_consumers, where)
                    cid += 1
        pid = 0
        for t in topics:
            for _ in range(w.producersPerTopic):
                where = place()
                task = WorkerTask(
                    "producer",
                    pid,
                    w.driver,
                    dict(common),
                    t,
                    pc,
                    netns_of(where),
                    message_size=w.messageSize,
                    rate=per_rate,
                    payload_content=w.payloadContent,
                    key_mode=w.keyDistributor,
                    partitions=w.partitionsPerTopic,
                )
                spawn(run_producer, task, stop_producers, where)
                pid += 1
        for rc, tasks in remote.values():
            procs.append(RemoteWorkers(rc, tasks, q, timing, go, stop_producers, stop_consumers))
        for p in procs:
            p.start()
        say(f"started {pid} producer and {cid} consumer processes; waiting for consumer assignment")
        t_wait = time.monotonic()
        raw.phases_s["create_topics"] = t_wait - t_setup
        _await_ready(q, pid, cid, procs, timeout_s=90)
        raw.consumer_assignment_wait_s = time.monotonic() - t_wait

        now = time.time_ns()
        t0 = now + int(START_DELAY_S * 1e9)
        ms = t0 + int(w.warmup_seconds * 1e9)
        me = ms + int(w.test_seconds * 1e9)
        values = {
            "t0_ns": t0,
            "measure_start_ns": ms,
            "measure_end_ns": me,
            "produce_end_ns": me,
            "drain_timeout_s": int(w.drainTimeoutSeconds),
        }
        for i, k in enumerate(TIMING_FIELDS):
            timing[i] = values[k]
        raw.timing = values
        if sampler:
            sampler.start()
        psutil.cpu_percent(None)
        go.set()
        _collect(raw, q, procs, pid, cid, stop_consumers, on_tick)
        raw.phases_s["after_produce_end"] = time.time_ns() / 1e9 - values["produce_end_ns"] / 1e9
        raw.machine_cpu_percent = psutil.cpu_percent(None)
        return raw
    finally:
        # Remote workers' messages are put on `q` by this process's threads; what nobody reads after an
        # interruption must not keep this process from exiting (the queue's feeder thread would block on
        # a full pipe at exit).
        q.cancel_join_thread()
        t_clean = time.monotonic()
        stop_producers.set()
        stop_consumers.set()
        go.set()
        deadline = time.monotonic() + 15
        for p in procs:
            if p.pid is None:  # never started (start() of an earlier one failed)
                continue
            p.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
        raw.phases_s["stop_workers"] = time.monotonic() - t_clean
        if sampler:
            raw.broker_samples = sampler.stop()
        t_del = time.monotonic()
        if created and not keep_topics:
            drv.delete_topics(topics)
        drv.close()
        raw.phases_s["delete_topics"] = time.monotonic() - t_del


def _await_ready(q: Any, n_prod: int, n_cons: int, procs: list[Any], timeout_s: float) -> None:
    ready: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout_s
    while len(ready) < n_prod + n_cons:
        if time.monotonic() > deadline:
            missing = n_prod + n_cons - len(ready)
            raise RunFailed(
                f"{missing} worker(s) not ready after {timeout_s:.0f} s "
                "(consumer group not assigned, or client cannot connect)"
            )
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            dead = [p.name for p in procs if not p.is_alive()]
            if dead:
                raise RunFailed(f"worker(s) exited while starting: {', '.join(dead)}") from None
            continue
        if msg[0] == "error":
            raise RunFailed(f"{msg[1]} {msg[2]} failed while starting:\n{msg[3]}")
        if msg[0] == "ready":
            ready.add((msg[1], msg[2]))


def _collect(
    raw: RawRun, q: Any, procs: list[Any], n_prod: int, n_cons: int, stop_consumers: Any, on_tick: View | None
) -> None:
    w = raw.workload
    produce_end = raw.timing["produce_end_ns"]
    drain_deadline: float | None = None
    last_change = time.monotonic()
    received = 0
    while True:
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            msg = None
        if msg is not None:
            kind = msg[0]
            if kind == "error":
                raise RunFailed(f"{msg[1]} {msg[2]} failed:\n{msg[3]}")
            if kind == "tick":
                tk = Tick(*msg[1:])
                raw.ticks.append(tk)
                if tk.role == "consumer" and tk.msgs:
                    received += tk.msgs
                    last_change = time.monotonic()
                if on_tick:
                    on_tick(raw, tk)
            elif kind == "done":
                (raw.producers if msg[1] == "producer" else raw.consumers)[msg[2]] = msg[3]
        if len(raw.consumers) == n_cons and len(raw.producers) == n_prod:
            return
        if time.time_ns() > produce_end + 120e9 + w.drainTimeoutSeconds * 1e9 and len(raw.producers) < n_prod:
            raise RunFailed("producers did not finish flushing in time")
        if len(raw.producers) == n_prod and not stop_consumers.is_set():
            now = time.monotonic()
            if drain_deadline is None:
                drain_deadline = now + w.drainTimeoutSeconds
                t_drain = now
            acked = sum(p["acked"] for p in raw.producers.values())
            idle = now - last_change
            subs = max(1, w.subscriptionsPerTopic)
            if (
                w.subscriptionsPerTopic == 0
                or (received >= acked * subs and idle > 0.5)
                or idle > 10
                or now > drain_deadline
            ):
                raw.drain_s = now - t_drain
                stop_consumers.set()
        dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
        if dead:
            raise RunFailed(f"worker {dead[0].name} died with exit code {dead[0].exitcode}")
