"""The per-second report of one load worker: every second of the run, one `tick` on the coordinator's queue
(its tuple is described in loadgen.worker), folded from what the worker buffered in that second."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from multiprocessing.queues import Queue
from typing import Any

from hdrh.histogram import HdrHistogram

from loadgen.rawrun import Evidence
from loadgen.recorder import LatencyBuffer
from loadgen.selfwatch import SelfWatch

# The client statistics a tick carries as evidence for the tail budget (loadgen.tail), besides the worker's own.
TAIL_STATS = ("queue_p99_ms", "rtt_p99_ms")


class Ticker:
    """Emits one tick per second of the run from a `LatencyBuffer` (messages = latencies recorded), or for a
    counting producer from its running count (`acked_fn`)."""

    def __init__(self, q: Queue[Any], role: str, wid: int, t0: int, buf: LatencyBuffer, size: int) -> None:
        self.q, self.role, self.wid, self.t0, self.buf, self.size = q, role, wid, t0, buf, size
        self.sec = 0
        self.next_at = t0 + 1_000_000_000
        self.errors = 0
        self.buffer_full = 0
        self.seq = self._seq_at_last = 0  # producers set seq before a tick: sends counted off the hot path
        # a producer's client statistics (api.Producer.stats), kept for the seconds of the measure window
        self.stats_fn: Callable[[], Mapping[str, float] | None] | None = None
        self.window = (0, 0)
        self.stats: list[dict[str, float]] = []
        # a counting producer's running count of acknowledged messages (its `buf` then holds no latencies)
        self.acked_fn: Callable[[], int] | None = None
        self._acked_at_last = 0
        # a scheduled producer's publish delay (how late each send was), folded every second like `buf`
        self.delay: HdrHistogram | None = None
        # the worker's own stalls (Python's GC, waiting for a CPU, time away from poll), folded every second
        self.watch = SelfWatch()

    def close(self) -> None:
        self.watch.close()

    def _client_stats(self, evidence: Evidence) -> Evidence:
        """`evidence` with the client's tail statistics for the second; those of the measure window kept."""
        assert self.stats_fn is not None
        s = self.stats_fn()
        if not s:
            return evidence
        if self.window[0] <= self.t0 + self.sec * 1_000_000_000 < self.window[1]:
            self.stats.append(dict(s))
        return replace(evidence, **{k: s[k] for k in TAIL_STATS if k in s})

    def emit(self) -> None:
        evidence = self.watch.fold()
        if self.stats_fn is not None:
            evidence = self._client_stats(evidence)
        msgs, hist = self.buf.fold()
        enc = hist.encode() if msgs else None
        if self.acked_fn is not None:
            acked = self.acked_fn()
            msgs, self._acked_at_last = acked - self._acked_at_last, acked
        sent = self.seq - self._seq_at_last
        d, delay = self.delay, None
        if d is not None and d.get_total_count():
            delay = d.encode()
            d.reset()  # the send loop records into this same object
        self.q.put(
            (
                "tick",
                self.role,
                self.wid,
                self.sec,
                msgs,
                msgs * self.size,
                self.errors,
                enc,
                time.thread_time(),
                time.process_time(),
                self.buffer_full,
                sent,
                delay,
                evidence.to_json(),
            )
        )
        self._seq_at_last = self.seq
        self.errors = self.buffer_full = 0
        self.sec += 1
        self.next_at = self.t0 + (self.sec + 1) * 1_000_000_000

    def catch_up(self, now: int) -> None:
        while now >= self.next_at:
            self.emit()
