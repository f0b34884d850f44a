"""Stopping a run's workers (loadgen.runner.stop_workers): on every exit path, an interruption included."""

from __future__ import annotations

import multiprocessing as mp
import signal
from typing import Any

from loadgen.runner import stop_workers


def _report_and_exit(q: Any) -> None:
    q.put(("done", "producer", 0, b"\x01" * 4_000_000))  # an acknowledgement map of four million records


def test_a_worker_whose_last_report_outgrew_the_pipe_ends_on_its_own() -> None:
    """Nobody reads the queue after an interruption: the worker's process cannot exit until its report is read.
    stop_workers reads it, so the worker ends by itself (exit 0), none is terminated, and the report is not left
    in the pipe."""
    ctx = mp.get_context("fork")  # the load generator's fork server needs a socket, which fast tests refuse
    q = ctx.Queue()
    worker = ctx.Process(target=_report_and_exit, args=(q,))
    worker.start()
    assert stop_workers([worker], q, 30) == 0
    worker.join(5)
    assert worker.exitcode == 0
    assert q.empty()


def _stuck(never_set: Any) -> None:
    """A worker that waits forever, with SIGTERM's default action (a handler forked from this process would turn
    it into an exception and an exit status of 1)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    never_set.wait()


def test_a_worker_that_never_started_is_skipped_and_a_stuck_one_terminated() -> None:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    never = ctx.Process(target=print)
    stuck = ctx.Process(target=_stuck, args=(ctx.Event(),))
    stuck.start()
    assert stop_workers([never, stuck], q, 0.3) == 1
    stuck.join(5)
    assert stuck.exitcode == -15
