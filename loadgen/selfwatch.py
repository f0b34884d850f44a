"""What a load worker knows of its own stalls, second by second: the evidence the tail budget (loadgen.tail)
needs to tell the harness's own pauses from the cluster's.

- Python's cyclic garbage collector stops the worker's loop while it runs (`gc.callbacks` time each pass);
- the worker's threads (its loop and the client library's) can be ready to run and get no CPU: the time they
  waited (`/proc/self/task/*/schedstat`, cluster.hoststats.thread_times), and the loop's own thread's wait apart
  (`main_wait_ms`): a loop stalled while it waited for a CPU was starved, not slow;
- a consumer's loop can be away from `poll` (handling a batch, or descheduled): the longest such gap.

Each is folded into the worker's tick once a second (`fold`), so every second of a run carries it.
"""

from __future__ import annotations

import gc
import os
import threading
import time

from cluster.hoststats import task_times, thread_times
from loadgen.rawrun import Evidence


class SelfWatch:
    """Collects one worker's stall evidence; `fold()` returns the last second's and starts the next."""

    def __init__(self) -> None:
        self.gc_ns = self.gc_max_ns = 0
        self._gc_start = 0
        self.gap_ns = 0  # the longest time outside the client's poll (consumers; 0: not measured)
        self._pid = os.getpid()
        self._sched = thread_times(self._pid)
        self._tid = threading.get_native_id()  # the worker's loop: it folds the ticks
        self._main = task_times(self._pid, self._tid)
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, _info: dict[str, int]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._gc_start = now
        elif self._gc_start:
            d = now - self._gc_start
            self.gc_ns += d
            self.gc_max_ns = max(self.gc_max_ns, d)
            self._gc_start = 0

    def gap(self, ns: int) -> None:
        """A time the loop spent away from the client's poll."""
        if ns > self.gap_ns:
            self.gap_ns = ns

    def fold(self) -> Evidence:
        """The last second's evidence (the waits None when /proc has no schedstat; the loop's gap when none was
        recorded)."""
        sched, main = thread_times(self._pid), task_times(self._pid, self._tid)
        out = Evidence(
            py_gc_ms=self.gc_ns / 1e6,
            py_gc_max_ms=self.gc_max_ns / 1e6,
            loop_gap_ms=self.gap_ns / 1e6 if self.gap_ns else None,
            wait_ms=(sched[1] - self._sched[1]) / 1e6 if sched is not None and self._sched is not None else None,
            main_wait_ms=(main[1] - self._main[1]) / 1e6 if main is not None and self._main is not None else None,
        )
        self._sched, self._main = sched, main
        self.gc_ns = self.gc_max_ns = self.gap_ns = 0
        return out

    def close(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
