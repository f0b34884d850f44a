"""One benchmark run: topics, worker processes, the time line, the drain, and the raw outcome.

    validate client configs -> create topics (validate-only first) -> start consumers, wait until they
    are assigned -> start producers, wait until connected -> t0 -> warm-up -> measure -> producers stop
    and flush -> consumers drain -> collect -> delete topics

Everything started is stopped on every exit path (Ctrl-C included): workers are terminated and the
run's topics deleted.
"""

from __future__ import annotations

import math
import queue
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from cluster.metrics import BrokerMetricsSampler, BrokerSample
from cluster.target import Placement
from core.errors import RunFailed
from drivers import api
from loadgen.backlog import Backlog
from loadgen.channel import Channel
from loadgen.placement import Host, Workers, hosts
from loadgen.worker import WorkerTask
from loadgen.workload import Workload


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
    delay: bytes | None = None  # the second's publish-delay histogram (a producer with a rate schedule)


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
    # a rate schedule's (second from t0, msg/s for the whole workload) steps, and the second the run's
    # `stop_when` ended it early (None: it ran its course)
    schedule: tuple[tuple[int, float], ...] = ()
    stopped_early_at: int | None = None
    # a backlog run (loadgen.backlog) decides its measured phase's length as it goes; its parts are in `backlog`
    measured_s: float | None = None
    backlog: dict[str, Any] | None = None

    @property
    def test_s(self) -> float:
        """The measured phase's length: the workload's, or what a backlog run took."""
        return self.measured_s if self.measured_s is not None else self.workload.test_seconds


View = Callable[[RawRun, Tick], None]


def chain(*views: View | None) -> View:
    """One on_tick hook that calls each of `views` (None ones skipped) in turn."""
    live = [v for v in views if v is not None]

    def tick(raw: RawRun, t: Tick) -> None:
        for v in live:
            v(raw, t)

    return tick


def _topic_names(w: Workload) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"kt-{w.slug}-{tag}-{i}" for i in range(w.topics)]


def run(
    w: Workload,
    common: Mapping[str, str],
    *,
    placements: Sequence[Placement] = (None,),
    metrics_urls: Mapping[int, str] | None = None,
    on_tick: View | None = None,
    say: Callable[[str], None] = print,
    keep_topics: bool = False,
    schedule: Sequence[tuple[int, float]] = (),
    stop_when: Callable[[RawRun], bool] | None = None,
    drain: bool = True,
) -> RawRun:
    """One run of `w` against the system `common` points at; workers placed round robin over `placements`.

    `schedule`: publish at these rates instead of `w`'s, each (whole second from t0, msg/s for the whole
    workload) from that second on; `stop_when`: asked after every tick, True ends the producers early.
    `drain=False`: the consumers stop when the producers are done, whatever they have not read yet (a warm-up,
    whose load is the point: its loss figures then mean nothing).
    """
    if any(r <= 0 for _, r in schedule) or (schedule and min(s for s, _ in schedule) != 0):
        raise ValueError("schedule: rates above 0, the first step at second 0")
    drv = api.load_driver(w.driver)(common)
    drv.validate(w.str_map("producerConfig"), w.str_map("consumerConfig"))
    topics = _topic_names(w)
    specs = [api.TopicSpec(t, w.partitionsPerTopic, w.replicationFactor, w.str_map("topicConfig")) for t in topics]
    drv.create_topics(specs, validate_only=True)
    r = _Run(w, drv, dict(common), topics, hosts(placements), metrics_urls, say)
    r.raw.schedule = tuple((int(s), float(v)) for s, v in schedule)
    try:
        drv.create_topics(specs)
        r.created = True
        say(f"created {len(topics)} topic(s) × {w.partitionsPerTopic} partitions: {', '.join(topics)}")
        return r.measure(on_tick, stop_when, drain)
    finally:
        r.clean_up(keep_topics)


class _Run:
    def __init__(
        self,
        w: Workload,
        drv: api.Driver,
        common: dict[str, str],
        topics: list[str],
        places: list[Host],
        metrics_urls: Mapping[int, str] | None,
        say: Callable[[str], None],
    ) -> None:
        self.w, self.drv, self.common, self.topics, self.hosts, self.say = w, drv, common, topics, places, say
        self.ch = Channel.new()
        self.raw = RawRun(w, topics, {}, time.time_ns())
        self.procs: list[Workers] = []
        self.sampler = BrokerMetricsSampler(metrics_urls) if metrics_urls else None
        self.created = False
        self.t_setup = time.monotonic()
        self._next = 0

    def _place(self, task: WorkerTask) -> None:
        """On the next host, round robin."""
        host = self.hosts[self._next % len(self.hosts)]
        self._next += 1
        host.add(task)
        self.raw.worker_hosts[(task.role, task.wid)] = host.label

    def _tasks(self) -> tuple[int, int]:
        """Every consumer and producer task, placed; returns (producers, consumers)."""
        w, cid, pid = self.w, 0, 0
        pc, cc = w.str_map("producerConfig"), w.str_map("consumerConfig")
        n = w.topics * w.producersPerTopic
        per_rate = w.fixed_rate / n
        steps = tuple((s, v / n) for s, v in self.raw.schedule)
        count_acks = not (per_rate or steps or w.publishLatencyAtMaxRate)
        for t in self.topics:
            for s in range(w.subscriptionsPerTopic):
                for _ in range(w.consumerPerSubscription):
                    sub = f"kt-sub-{t}-{s}"
                    self._place(WorkerTask("consumer", cid, w.driver, self.common, t, cc, message_size=w.messageSize,
                                           subscription=sub, work_ns=int(w.consumerWorkMicros * 1000)))  # fmt: skip
                    cid += 1
        omb: dict[str, Any] = {}
        if w.useRandomizedPayloads:
            omb = {"random_ratio": w.randomBytesRatio, "payload_pool": w.randomizedPayloadPoolSize}
        elif w.payloadFile is not None:
            omb = {"payload_file_hex": Path(w.payloadFile).read_bytes().hex()}
        for t in self.topics:
            for _ in range(w.producersPerTopic):
                self._place(WorkerTask("producer", pid, w.driver, self.common, t, pc, message_size=w.messageSize,
                                       rate=per_rate, steps=steps, payload_content=w.payloadContent,
                                       key_mode=w.keyDistributor, partitions=w.partitionsPerTopic,
                                       count_acks=count_acks, **omb))  # fmt: skip
                pid += 1
        return pid, cid

    def measure(
        self, on_tick: View | None, stop_when: Callable[[RawRun], bool] | None = None, drain: bool = True
    ) -> RawRun:
        n_prod, n_cons = self._tasks()
        self.procs = [p for h in self.hosts for p in h.workers(self.ch)]
        for p in self.procs:
            p.start()
        self.say(f"started {n_prod} producer and {n_cons} consumer processes; waiting for consumer assignment")
        t_wait = time.monotonic()
        self.raw.phases_s["create_topics"] = t_wait - self.t_setup
        _await_ready(self.ch.q, n_prod, n_cons, self.procs, timeout_s=90)
        self.raw.consumer_assignment_wait_s = time.monotonic() - t_wait
        values = self._timeline()
        backlog = Backlog(self.w, self.ch, values["measure_start_ns"], self.say) if self.w.builds_backlog else None
        if self.sampler:  # the samples so far, for a `stop_when` that reads them (loadgen.warmup.JitWatch)
            self.raw.broker_samples = self.sampler.samples
            self.sampler.start()
        psutil.cpu_percent(None)
        self.ch.go.set()
        _collect(self.raw, self.ch, self.procs, (n_prod, n_cons), on_tick, stop_when, backlog, drain)
        produce_end = values["produce_end_ns"]
        if backlog is not None:
            self.raw.measured_s, self.raw.backlog = backlog.measured_s, backlog.record(values["t0_ns"])
            produce_end = backlog.at_ns.get("done", produce_end)
        self.raw.phases_s["after_produce_end"] = time.time_ns() / 1e9 - produce_end / 1e9
        self.raw.machine_cpu_percent = psutil.cpu_percent(None)
        return self.raw

    def _timeline(self) -> dict[str, int]:
        """The run's time line, shared with every worker before `go`: all producers start on the same tick."""
        w = self.w
        # between `go` and t0, so every producer starts on the same tick wherever it runs
        t0 = time.time_ns() + int(max(h.go_delay_s for h in self.hosts) * 1e9)
        ms = t0 + int(w.warmup_seconds * 1e9)
        # a backlog run's producers stop when build, drain and test are done (loadgen.backlog): this is its cap
        span = w.test_seconds + (2 * w.drainTimeoutSeconds + 10 if w.builds_backlog else 0)
        me = ms + int(span * 1e9)
        values = {
            "t0_ns": t0,
            "measure_start_ns": ms,
            "measure_end_ns": me,
            "produce_end_ns": me,
            "drain_timeout_s": int(w.drainTimeoutSeconds),
        }
        self.ch.set_timing(values)
        self.raw.timing = values
        return values

    def clean_up(self, keep_topics: bool) -> None:
        """Every worker stopped and the run's topics deleted, on every exit path (Ctrl-C included)."""
        # Remote workers' messages are put on the queue by this process's threads; what nobody reads after an
        # interruption must not keep this process from exiting (the queue's feeder thread would block on a
        # full pipe at exit).
        self.ch.q.cancel_join_thread()
        t_clean = time.monotonic()
        self.ch.stop_producers.set()
        self.ch.stop_consumers.set()
        self.ch.go.set()
        deadline = time.monotonic() + 15
        for p in self.procs:
            if p.pid is None:  # never started (start() of an earlier one failed)
                continue
            p.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
        self.raw.phases_s["stop_workers"] = time.monotonic() - t_clean
        if self.sampler:
            self.raw.broker_samples = self.sampler.stop()
        t_del = time.monotonic()
        if self.created and not keep_topics:
            self.drv.delete_topics(self.topics)
        self.drv.close()
        self.raw.phases_s["delete_topics"] = time.monotonic() - t_del


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


# the drain ends once every acknowledged record arrived and nothing more did for this long (a late duplicate)
DRAIN_QUIET_S = 0.3


def _collect(
    raw: RawRun,
    ch: Channel,
    procs: list[Any],
    counts: tuple[int, int],
    on_tick: View | None,
    stop_when: Callable[[RawRun], bool] | None,
    backlog: Backlog | None = None,
    drain: bool = True,
) -> None:
    w, q, stop_consumers = raw.workload, ch.q, ch.stop_consumers
    n_prod, n_cons = counts
    produce_end = raw.timing["produce_end_ns"]
    drain_deadline: float | None = None
    last_change = time.monotonic()
    counted: dict[int, int] = {}  # each consumer's distinct records after the producers' end
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
                    last_change = time.monotonic()
                if backlog is not None:
                    backlog.count(tk.role, tk.msgs)
                if on_tick:
                    on_tick(raw, tk)
                if stop_when and raw.stopped_early_at is None and stop_when(raw):
                    raw.stopped_early_at = tk.second
                    ch.stop_producers.set()
            elif kind == "count":
                if counted.get(msg[2]) != msg[3]:
                    counted[msg[2]] = msg[3]
                    last_change = time.monotonic()
            elif kind == "done":
                (raw.producers if msg[1] == "producer" else raw.consumers)[msg[2]] = msg[3]
        if backlog is not None:
            backlog.step()
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
            # distinct records (ConsumerState.distinct): a consumer that re-read after its group rebalanced (a
            # broker bounced) counts its duplicates in its ticks, and their sum could reach the acknowledged count
            # while records behind a moved partition leader were still to come
            arrived = sum(counted.values()) if len(counted) == n_cons else 0
            if (
                w.subscriptionsPerTopic == 0
                or not drain
                or (arrived >= acked * subs and idle > DRAIN_QUIET_S)
                or idle > w.drainIdleSeconds
                or now > drain_deadline
            ):
                raw.drain_s = now - t_drain
                stop_consumers.set()
        dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
        if dead:
            raise RunFailed(f"worker {dead[0].name} died with exit code {dead[0].exitcode}")
