"""What a coordinator shares with the worker processes it starts: one queue they report on (the tuples of
`loadgen.worker`'s docstring), the run's time line, and the go / stop / pause events.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The run's time line, in a shared int64 array the parent fills before it sets `go` (the workers are
# started, and have connected, before the parent knows when the run begins).
TIMING_FIELDS = ("t0_ns", "measure_start_ns", "measure_end_ns", "produce_end_ns", "drain_timeout_s")


# Imported once by the fork server, so every worker forked from it has them (a module that fails to import is
# skipped there and imported by the worker that needs it).
PRELOAD = ("loadgen.worker", "loadgen.consumer", "drivers.kafka")


def read_timing(shared: Any) -> dict[str, int]:
    return dict(zip(TIMING_FIELDS, list(shared), strict=True))


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

    @classmethod
    def new(cls) -> Channel:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        timing = ctx.Array("q", len(TIMING_FIELDS), lock=False)
        return cls(ctx, ctx.Queue(), timing, ctx.Event(), ctx.Event(), ctx.Event(), ctx.Event())

    def set_timing(self, values: Mapping[str, int]) -> None:
        for i, k in enumerate(TIMING_FIELDS):
            self.timing[i] = int(values[k])

    def stop(self, role: str) -> Any:
        """The event that ends a worker of `role`."""
        return self.stop_producers if role == "producer" else self.stop_consumers
