"""A backlog run (OMB's `consumerBacklogSizeGB`, its WorkloadGenerator.buildAndDrainBacklog): after the warm-up
the consumers pause while the producers go on, until the subscriptions owe `consumerBacklogSizeGB` (GiB, as
OMB: × 1024³ bytes); then they resume and drain it down to (1 − `backlogDrainRatio`) of that, but at least
1,000 messages; then the run goes on for `testDurationMinutes` and the producers stop.

    warm-up ─► build (consumers paused) ─► drain (consumers resumed) ─► test ─► producers stop

The measured phase is all of build, drain and test, as OMB's result windows are. The backlog is OMB's:
subscriptions × acknowledged − received, counted from the start of the run, from the workers' per-second
ticks. The record says how long each part took and how fast the consumers drained; a build or a drain that
does not finish within `drainTimeoutSeconds` fails the run with the backlog it reached.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from core.errors import RunFailed
from core.units import MB
from loadgen.channel import Channel
from loadgen.workload import Workload
from records.result import BacklogParts

GIB = 1024**3


class Backlog:
    """The build-and-drain state of one run, stepped by the runner after every message it collects."""

    def __init__(self, w: Workload, ch: Channel, measure_start_ns: int, say: Callable[[str], None]) -> None:
        self.w, self.ch, self.say = w, ch, say
        self.subs = max(1, w.subscriptionsPerTopic)
        self.target_msgs = math.ceil(w.consumerBacklogSizeGB * GIB / w.messageSize)
        self.empty_msgs = max(1000, int((1 - w.backlogDrainRatio) * self.target_msgs))
        self.measure_start_ns = measure_start_ns
        self.state = "warmup"
        self.acked = self.received = 0
        self.peak = 0
        self.at_ns: dict[str, int] = {}
        self.received_at: dict[str, int] = {}
        self.stop_at_ns: int | None = None

    @property
    def backlog(self) -> int:
        return self.subs * self.acked - self.received

    def count(self, role: str, msgs: int) -> None:
        if role == "producer":
            self.acked += msgs
        else:
            self.received += msgs
        self.peak = max(self.peak, self.backlog)

    def _enter(self, state: str, now: int) -> None:
        self.state = state
        self.at_ns[state] = now
        self.received_at[state] = self.received

    def step(self, now: int | None = None) -> None:
        """Move on when the time or the backlog says so; fail a build or drain that takes too long."""
        now = now or time.time_ns()
        limit = self.w.drainTimeoutSeconds * 1e9
        if self.state == "warmup" and now >= self.measure_start_ns:
            self.ch.pause_consumers.set()
            self._enter("build", now)
            self.say(f"backlog: consumers paused until the subscriptions owe {self.target_msgs:,} messages")
        elif self.state == "build" and self.backlog >= self.target_msgs:
            self.ch.pause_consumers.clear()
            self._enter("drain", now)
            self.say(f"backlog: {self.backlog:,} messages built; consumers resumed, draining to {self.empty_msgs:,}")
        elif self.state == "drain" and self.backlog <= self.empty_msgs:
            self._enter("test", now)
            self.stop_at_ns = now + int(self.w.test_seconds * 1e9)
            self.say(f"backlog: drained to {max(0, self.backlog):,} messages; {self.w.test_seconds:g} s more")
        elif self.state == "test" and self.stop_at_ns is not None and now >= self.stop_at_ns:
            self.ch.stop_producers.set()
            self._enter("done", now)
        elif self.state in ("build", "drain") and now - self.at_ns[self.state] > limit:
            raise RunFailed(
                f"backlog: the {self.state} did not finish in drainTimeoutSeconds ({self.w.drainTimeoutSeconds:g} s):"
                f" {self.backlog:,} messages owed, {'target' if self.state == 'build' else 'drain to'} "
                f"{self.target_msgs if self.state == 'build' else self.empty_msgs:,}"
            )

    @property
    def measured_s(self) -> float | None:
        """The measured phase's length (build + drain + test), once the producers were stopped."""
        end = self.at_ns.get("done")
        return (end - self.measure_start_ns) / 1e9 if end else None

    def record(self, t0_ns: int) -> BacklogParts:
        """What the run record keeps: the target, each part's start (s from t0) and length, the drain rate."""
        s = {k: (v - t0_ns) / 1e9 for k, v in self.at_ns.items()}

        def span(a: str, b: str) -> float | None:
            return s[b] - s[a] if a in s and b in s else None

        drain_s = span("drain", "test")
        drained = self.received_at.get("test", 0) - self.received_at.get("drain", 0)
        return BacklogParts(
            target_gib=self.w.consumerBacklogSizeGB,
            target_msgs=self.target_msgs,
            drained_to_msgs=self.empty_msgs,
            peak_msgs=self.peak,
            started_s=s,
            build_s=span("build", "drain"),
            drain_s=drain_s,
            test_s=span("test", "done"),
            drain_msg_s=drained / drain_s if drain_s else None,
            drain_mb_s=drained * self.w.messageSize / drain_s / MB if drain_s else None,
        )
