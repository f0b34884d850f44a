"""What a coordinator shares with the worker processes it starts: one queue they report on (the tuples of
`loadgen.worker`'s docstring), the run's time line, and the go / stop / pause events.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Timing:
    """The run's time line: wall-clock ns of its start (t0), its measure window and the producers' end, and how
    long consumers may drain after it (s). Shared as an int64 array the coordinator fills before it sets `go` (the
    workers are started, and have connected, before it knows when the run begins); 0: not set yet."""

    t0_ns: int = 0
    measure_start_ns: int = 0
    measure_end_ns: int = 0
    produce_end_ns: int = 0
    drain_timeout_s: int = 0


TIMING_FIELDS = tuple(f.name for f in fields(Timing))


# Imported once by the fork server, so every worker forked from it has them (a module that fails to import is
# skipped there and imported by the worker that needs it).
PRELOAD = ("loadgen.worker", "loadgen.consumer", "drivers.kafka")


def read_timing(shared: Any) -> Timing:
    """The time line in the shared array (Channel.timing)."""
    return Timing(*(int(v) for v in shared))


@dataclass(frozen=True)
class Channel:
    """What a coordinator shares with its workers: the queue they report on, the run's time line (filled
    before `go`), and the go / stop events. Workers are forked from a fork server, never from the
    coordinator: a forked librdkafka or JVM client would inherit the parent's threads in an undefined state,
    while the fork server is a fresh single-threaded interpreter that has only imported the load generator
    and the Kafka client (PRELOAD). A worker starts in milliseconds instead of importing them again."""

    ctx: Any
    q: Any
    timing: Any
    go: Any
    stop_producers: Any
    stop_consumers: Any
    # set: consumers stop receiving and keep their subscription (a backlog builds, OMB's pauseConsumers);
    # cleared: they receive again
    pause_consumers: Any
    # the next rate step a steered run's coordinator decided (loadgen.search): [version, second from t0, msg/s per
    # producer]; producers read it every 20 ms (loadgen.worker.STEP_READ_NS) and append it to their schedule
    next_step: Any

    @classmethod
    def new(cls) -> Channel:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        timing = ctx.Array("q", len(TIMING_FIELDS), lock=False)
        step = ctx.Array("d", 3, lock=True)
        return cls(ctx, ctx.Queue(), timing, ctx.Event(), ctx.Event(), ctx.Event(), ctx.Event(), step)

    def set_timing(self, values: Timing) -> None:
        for i, k in enumerate(TIMING_FIELDS):
            self.timing[i] = int(getattr(values, k))

    def publish_step(self, second: int, per_producer_msg_s: float) -> None:
        """Every producer publishes at this rate from whole second `second` (from t0) on."""
        with self.next_step.get_lock():
            self.next_step[1], self.next_step[2] = float(second), float(per_producer_msg_s)
            self.next_step[0] += 1

    def stop(self, role: str) -> Any:
        """The event that ends a worker of `role`."""
        return self.stop_producers if role == "producer" else self.stop_consumers


def read_step(shared: Any) -> tuple[int, int, float]:
    """(version, second, msg/s per producer) of a Channel's next_step (version 0: none published)."""
    with shared.get_lock():
        v, s, r = shared[0], shared[1], shared[2]
    return int(v), int(s), float(r)
