"""The sweep's progress when not on a terminal: one plain line per trial started and finished, each figure said
or a dash when not measured, and the best and the trials left after it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kafkatune.sweep_view import SweepView
from loadgen.rawrun import Tick
from sweeps.trial import Outcome


def _tick(mb: float) -> Tick:
    return Tick("consumer", 0, 3, 1000, int(mb * 1e6), 0, None, 0.0, 0.0, 0, 1000)


def test_a_trial_is_one_line_started_and_one_finished_with_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    v = SweepView(tty=False)
    v.objective, v.total = "sustainable_mb_s", 3
    v.trial_started("joint", 0, {"batch.size": 65536})
    v.on_tick(None, _tick(9.5))  # the running row's figure (the terminal's table), no line of its own
    values = {"sustainable_mb_s": 4.2, "throughput_mb_s": 15.0, "p99_publish_ms": 84.3, "p99_e2e_ms": math.inf}
    v.trial_finished("joint", 0, Outcome(True, Path("t"), values, [15.0, 15.0], total_s=120.0), 23.9)
    v.trial_started("joint", 1, {"linger.ms": 0})
    v.trial_finished("joint", 1, Outcome(False, Path("t"), fail_reason="broker 2 down", total_s=60.0), 23.9)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[1/3] joint #0: batch.size=64K"
    assert "-> 4.20 MB/s" in err[1] and "(18% of ceiling)" in err[1]
    assert "p99 publish 84.30 ms, e2e - ms, ok, 120 s" in err[1]  # inf: not measured, said as a dash
    assert err[1].endswith("best 4.20 MB/s (joint #0); 1/3 trials, ETA 4 min")
    assert err[2] == "[2/3] joint #1: linger.ms=0"
    assert "FAILED: broker 2 down" in err[3] and err[3].endswith("best 4.20 MB/s (joint #0); 2/3 trials, ETA 2 min")
    assert [r.mb for r in v.rows] == [4.2, None]
