"""A tail that is not load: a process that takes both CPUs for 150 ms every 2 s (at the highest priority) breaks a
100-ms p99 at any rate. The study must not lower the rate until its tries run out: it says no rate holds, and the
tail budgets of its searches name the cause from evidence: another process on this machine, by name and pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml

from loadgen.tail import CAUSES
from records.testbed import TestbedState
from sweeps.attrs import TrialAttrs
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune

# nice -20 and its session's autogroup at -20: with autogroup scheduling (kernel.sched_autogroup_enabled) a nice
# value orders only the processes of one session, and the hog's own session would get a fair share, not the CPUs
HOG = """
import os, sys, time
os.nice(-20)
if os.path.exists("/proc/self/autogroup"):
    open("/proc/self/autogroup", "w").write("-20")
period, burst = 2.0, 0.15
if os.fork() == 0:
    pass  # two spinning processes: both CPUs
while True:
    time.sleep(period - time.time() % period)  # every process on the same wall-clock tick
    end = time.monotonic() + burst
    while time.monotonic() < end:
        pass
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hog's priority (nice -20) needs root")


def test_a_tail_that_is_not_load_is_named_and_no_rate_is_offered(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path
) -> None:
    spec = tmp_path / "hog.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "hog",
                "cluster": {"testbed": True},
                "workload": {"messageSize": 1024, "partitionsPerTopic": 3, "producerConfig": {"acks": "all"}},
                "plan": "staged",
                "stages": [{"name": "producer", "params": {"batch.size": {"choices": [65536]}}, "trials": 1}],
                "baselines": [],
                "slo": {"p99_e2e_ms": 100},
                "confirm": {"top": 1, "repeats": 2},
                "ablate": {"repeats": 0},
                "measurement": {"warmup_s": 1, "window_s": 2, "windows": 1, "restart_warmup_s": 0, "jit_warmup_s": 0},
                # 2-3 s steps: any 2 s of the hog's period hold 150 ms of its bursts, far above 1 % of the samples
                "search": {"warmup_s": 1, "min_step_s": 2, "max_step_s": 3, "max_steps": 2},
                "hold": {"tries": 1},
                "seed": 1,
            }
        )
    )
    hog = subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)
    time.sleep(0.5)
    hogs = {hog.pid, *map(int, Path(f"/proc/{hog.pid}/task/{hog.pid}/children").read_text().split())}
    try:
        proc = kafkatune(
            "sweep", str(spec), "--state-dir", str(testbed.state_dir), "--runs-dir", str(tmp_path), timeout=900
        )
    finally:
        os.killpg(hog.pid, 9)
        hog.wait()
    # no trial measured a rate that held: exit 4 (the study did not produce a figure), saying why
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "no trial produced a valid measurement: no configuration held a rate" in proc.stderr, proc.stderr[-3000:]
    s = json.loads((tmp_path / "hog" / "summary.json").read_text())
    op = s["operating_point"]
    print(json.dumps(op, indent=1))
    assert not op["held"] and op["rate_msg_s"] is None and not op["tries"], op  # no rate was tried down to
    assert "no configuration held a rate within the SLO" in op["not_load_driven"], op
    causes = op["causes"]
    # the hog is another process: in every above-SLO second or the one before it, by name (loadgen.tail FIRST)
    assert causes["above_slo_s"] > 0 and causes["cause"].startswith(CAUSES["neighbour"]), causes
    assert causes["cause_share"] > 0.5 and any(f"[{p}]" in causes["cause"] for p in hogs), (hogs, causes)
    assert "no rate holds the SLO reliably" in proc.stderr
    # each confirmation search that held no rate left its bound where an ablation reads it (sweeps.confirm.measured)
    st = optuna.load_study(study_name="hog.confirm", storage=f"sqlite:///{tmp_path / 'hog' / 'optuna.db'}")
    done = [TrialAttrs.of(t) for t in st.get_trials() if t.state.name == "COMPLETE"]
    assert done and all(a.no_rate_held and (a.below_mb_s or 0) > 0 for a in done), done
