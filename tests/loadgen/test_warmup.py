"""loadgen.warmup: where a JIT watch cut a run's measure window."""

from __future__ import annotations

import time

import pytest

from loadgen.channel import Timing
from loadgen.rawrun import RawRun
from loadgen.warmup import JitBusyWatch
from loadgen.workload import parse_workload


def _run(stopped_early_at: int | None) -> RawRun:
    """A run of 1 s of warm-up (second 0) and a 4-s window (seconds 1-4), stopped at that second."""
    w = parse_workload({"name": "w", "warmupDurationMinutes": 1 / 60, "testDurationMinutes": 4 / 60})
    raw = RawRun(w, ["t"], Timing(), time.time_ns())
    raw.stopped_early_at = stopped_early_at
    return raw


@pytest.mark.parametrize(("second", "cut"), [(None, None), (0, 0), (1, 0), (2, 1), (4, 3), (5, None), (6, None)])
def test_a_stop_cuts_the_window_at_its_second_and_a_stop_in_the_drain_cut_nothing(
    second: int | None, cut: int | None
) -> None:
    """A stop decided on the window's last tick or later (the drain's seconds) left the window whole: the trial must
    not say its figures cover only part of it (a clean-clone run recorded a stop 4 s into a 4-s window)."""
    assert JitBusyWatch.cut_at(_run(second)) == cut
