"""One benchmark run: topics, worker processes, the time line, the drain, and the raw outcome.

    validate client configs -> create topics (validate-only first) -> start consumers, wait until they
    are assigned -> start producers, wait until connected -> t0 -> warm-up -> measure -> producers stop
    and flush -> consumers drain -> collect -> delete topics

Everything started is stopped on every exit path (Ctrl-C included): workers are terminated and the
run's topics deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from cluster.hoststats import HostSampler, local_brokers
from cluster.metrics import BrokerMetricsSampler
from cluster.target import Placement
from drivers import api
from loadgen.backlog import Backlog
from loadgen.channel import Channel, Timing
from loadgen.collect import await_ready, collect, steered
from loadgen.placement import Host, Workers, hosts
from loadgen.rawrun import Publish, RawRun, Steer, Tick, View, chain, measured_seconds, phase_of
from loadgen.verify import verify
from loadgen.worker import WorkerTask
from loadgen.workload import Workload

# The run's data types are loadgen.rawrun's; they are named here too, where every caller of `run` finds them.
__all__ = ["Publish", "RawRun", "Steer", "Tick", "View", "chain", "measured_seconds", "phase_of", "run"]


def _topic_names(w: Workload) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"kt-{w.slug}-{tag}-{i}" for i in range(w.topics)]


@dataclass(frozen=True)
class RunSettings:
    """Where a run's load goes and who hears of it, the same for every run of one measurement (a probe and its
    search, the runs of a scale-out, a warm-up): the system `common` points at (bootstrap.servers and the clients'
    shared settings), the hosts its workers are placed on (round robin; None: this process's host), the brokers'
    exporters sampled every second (None: none sampled), what sees each tick, and where progress lines go."""

    common: Mapping[str, str]
    placements: Sequence[Placement] = (None,)
    metrics_urls: Mapping[int, str] | None = None
    on_tick: View | None = None
    say: Callable[[str], None] = print

    def quiet(self) -> RunSettings:
        """The same settings without progress lines (a sweep's trial says its own)."""
        return dataclasses.replace(self, say=lambda m: None)


def run(
    w: Workload,
    at: RunSettings,
    *,
    keep_topics: bool = False,
    schedule: Sequence[tuple[int, float]] = (),
    stop_when: Callable[[RawRun], bool] | None = None,
    drain: bool = True,
    steer: Steer | None = None,
) -> RawRun:
    """One run of `w` against the system and on the hosts `at` names.

    `schedule`: publish at these rates instead of `w`'s, each (whole second from t0, msg/s for the whole
    workload) from that second on; `stop_when`: asked after every tick, True ends the producers early; `steer`:
    the same, and it may set the rate from a later second on as it goes (needs a `schedule`).
    `drain=False`: the consumers stop when the producers are done, whatever they have not read yet (a warm-up,
    whose load is the point: its loss figures then mean nothing).
    """
    if any(r <= 0 for _, r in schedule) or (schedule and min(s for s, _ in schedule) != 0):
        raise ValueError("schedule: rates above 0, the first step at second 0")
    if steer is not None and not schedule:
        raise ValueError("a steered run starts from a schedule")
    drv = api.load_driver(w.driver)(at.common)
    drv.validate(w.str_map("producerConfig"), w.str_map("consumerConfig"))
    topics = _topic_names(w)
    specs = [api.TopicSpec(t, w.partitionsPerTopic, w.replicationFactor, w.str_map("topicConfig")) for t in topics]
    drv.create_topics(specs, validate_only=True)
    r = _Run(w, drv, dict(at.common), topics, hosts(at.placements), at.metrics_urls, at.say)
    r.raw.schedule = tuple((int(s), float(v)) for s, v in schedule)
    try:
        drv.create_topics(specs)
        r.created = True
        at.say(f"created {len(topics)} topic(s) × {w.partitionsPerTopic} partitions: {', '.join(topics)}")
        return r.measure(at.on_tick, stop_when, drain, steer)
    finally:
        r.clean_up(keep_topics)


def stop_workers(procs: Sequence[Any], q: Any, wait_s: float) -> int:
    """Every started worker process ended within `wait_s` in all, or terminated; how many were terminated. Their
    reports on `q` are read and dropped meanwhile: a worker's last report (a producer's acknowledgement map) can be
    larger than the pipe holds, and its process cannot exit until it is read, which after an interruption nobody
    else does."""
    started = [p for p in procs if p.pid is not None]  # None: never started (an earlier start failed)
    deadline = time.monotonic() + wait_s
    while any(p.is_alive() for p in started) and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            q.get(timeout=0.1)
    late = [p for p in started if p.is_alive()]
    for p in late:
        p.terminate()
    return len(late)


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
        self.raw = RawRun(w, topics, Timing(), time.time_ns())
        self.procs: list[Workers] = []
        self.sampler = BrokerMetricsSampler(metrics_urls) if metrics_urls else None
        local = local_brokers(metrics_urls) if metrics_urls else {}
        self.host = HostSampler(local, urls=metrics_urls or {}) if local else None
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
                    self._place(
                        WorkerTask(
                            "consumer",
                            cid,
                            w.driver,
                            self.common,
                            t,
                            cc,
                            message_size=w.messageSize,
                            subscription=sub,
                            work_ns=int(w.consumerWorkMicros * 1000),
                        )
                    )
                    cid += 1
        rnd = w.useRandomizedPayloads  # OMB's payloads: random bodies from a pool, or a file's bytes
        file_hex = Path(w.payloadFile).read_bytes().hex() if not rnd and w.payloadFile is not None else None
        for t in self.topics:
            for _ in range(w.producersPerTopic):
                self._place(
                    WorkerTask(
                        "producer",
                        pid,
                        w.driver,
                        self.common,
                        t,
                        pc,
                        message_size=w.messageSize,
                        rate=per_rate,
                        steps=steps,
                        payload_content=w.payloadContent,
                        key_mode=w.keyDistributor,
                        partitions=w.partitionsPerTopic,
                        count_acks=count_acks,
                        payload_file_hex=file_hex,
                        random_ratio=w.randomBytesRatio if rnd else None,
                        payload_pool=w.randomizedPayloadPoolSize if rnd else 0,
                    )
                )
                pid += 1
        return pid, cid

    def measure(
        self,
        on_tick: View | None,
        stop_when: Callable[[RawRun], bool] | None = None,
        drain: bool = True,
        steer: Steer | None = None,
    ) -> RawRun:
        n_prod, n_cons = self._tasks()
        self.procs = [p for h in self.hosts for p in h.workers(self.ch)]
        for p in self.procs:
            p.start()
        self.say(f"started {n_prod} producer and {n_cons} consumer processes; waiting for consumer assignment")
        t_wait = time.monotonic()
        self.raw.phases_s["create_topics"] = t_wait - self.t_setup
        await_ready(self.ch.q, n_prod, n_cons, self.procs, timeout_s=90)
        self.raw.consumer_assignment_wait_s = time.monotonic() - t_wait
        values = self._timeline()
        backlog = Backlog(self.w, self.ch, values.measure_start_ns, self.say) if self.w.builds_backlog else None
        if self.sampler:  # the samples so far, for a `stop_when` that reads them (loadgen.warmup.JitWatch)
            self.raw.broker_samples = self.sampler.samples
            self.sampler.start()
        if self.host:
            self.raw.host_samples = self.host.samples
            self.host.start()
        psutil.cpu_percent(None)
        self.ch.go.set()
        if steer is not None:
            stop_when = steered(steer, self._publish, stop_when)
        collect(self.raw, self.ch, self.procs, (n_prod, n_cons), on_tick, stop_when, backlog, drain)
        if drain:  # before the topics go: a missing message is lost only if it is not in the log
            self.raw.verified = verify(self.raw, self.drv)
        produce_end = values.produce_end_ns
        if backlog is not None:
            self.raw.measured_s, self.raw.backlog = backlog.measured_s, backlog.record(values.t0_ns)
            produce_end = backlog.at_ns.get("done", produce_end)
        self.raw.phases_s["after_produce_end"] = time.time_ns() / 1e9 - produce_end / 1e9
        self.raw.machine_cpu_percent = psutil.cpu_percent(None)
        return self.raw

    def _publish(self, second: int, msg_s: float) -> None:
        """A steered run's next rate (msg/s for the whole workload) from `second` on, kept in its schedule too."""
        self.raw.schedule = (*self.raw.schedule, (second, msg_s))
        self.ch.publish_step(second, msg_s / (self.w.topics * self.w.producersPerTopic))

    def _timeline(self) -> Timing:
        """The run's time line, shared with every worker before `go`: all producers start on the same tick."""
        w = self.w
        # between `go` and t0, so every producer starts on the same tick wherever it runs
        t0 = time.time_ns() + int(max(h.go_delay_s for h in self.hosts) * 1e9)
        ms = t0 + int(w.warmup_seconds * 1e9)
        # a backlog run's producers stop when build, drain and test are done (loadgen.backlog): this is its cap
        span = w.test_seconds + (2 * w.drainTimeoutSeconds + 10 if w.builds_backlog else 0)
        me = ms + int(span * 1e9)
        values = Timing(t0, ms, me, produce_end_ns=me, drain_timeout_s=int(w.drainTimeoutSeconds))
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
        stop_workers(self.procs, self.ch.q, 15)
        self.raw.phases_s["stop_workers"] = time.monotonic() - t_clean
        if self.sampler:
            self.raw.broker_samples = self.sampler.stop()
        if self.host:
            self.raw.host_samples = self.host.stop()
        t_del = time.monotonic()
        if self.created and not keep_topics:
            self.drv.delete_topics(self.topics)
        self.drv.close()
        self.raw.phases_s["delete_topics"] = time.monotonic() - t_del
