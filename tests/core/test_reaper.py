"""A killed test run leaves no server behind: the servers a pytest process started die with it (core.reaper)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core import procs, reaper
from tests.helpers import REPO

# a process must stop within seconds: run where the CPU comes when asked (tests/lanes.py)
pytestmark = pytest.mark.timing

CHILD = """
import json, os, time
from pathlib import Path

def test_hold(servers):
    sv, addrs = servers
    pids = {s: sv.state(s).pid for s in addrs}
    out = Path(os.environ["KT_CHILD_OUT"])
    (out.parent / "pids.tmp").write_text(json.dumps(pids))
    (out.parent / "pids.tmp").rename(out)  # whole or absent: the parent reads it the moment it exists
    time.sleep(600)
"""


def test_a_killed_pytest_run_leaves_no_server_behind(tmp_path: Path) -> None:
    # A child pytest with this suite's conftest (its `servers` fixture: Mosquitto and a Zenoh router, each in
    # its own session), killed with SIGKILL once both are up: no teardown runs, only the watcher can stop them.
    (tmp_path / "test_child.py").write_text(CHILD)
    out = tmp_path / "pids.json"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_child.py"),
        ],
        cwd=REPO,
        env={**os.environ, "KT_CHILD_OUT": str(out)},
        stdout=(tmp_path / "child.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        assert procs.wait_until(lambda: out.exists() or child.poll() is not None, 180), "servers did not start"
        assert out.exists(), (tmp_path / "child.log").read_text()[-3000:]
        pids = json.loads(out.read_text())
        assert set(pids) == {"mosquitto", "zenoh"}
        assert all(psutil.pid_exists(p) for p in pids.values())
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        # the watcher polls every 0.5 s and gives SIGTERM 10 s before SIGKILL
        left = lambda: [s for s, p in pids.items() if not procs.gone(p)]  # noqa: E731
        assert procs.wait_until(lambda: not left(), reaper.GRACE_S + 20), f"still running after the kill: {left()}"
    finally:
        if child.poll() is None:
            child.kill()
        for pid in json.loads(out.read_text()).values() if out.exists() else ():
            procs.stop(pid, timeout_s=5)


def test_the_watcher_leaves_unmarked_processes_alone_and_stops_marked_ones() -> None:
    token = f"test-{time.time_ns()}"
    marked = subprocess.Popen(["sleep", "300"], env={**os.environ, reaper.ENV: token}, start_new_session=True)
    other = subprocess.Popen(["sleep", "300"], env={**os.environ, reaper.ENV: token + "x"}, start_new_session=True)
    try:
        assert reaper.marked(token) == [marked.pid]
        assert reaper.reap(token, grace_s=5) == [marked.pid]
        assert marked.wait(5) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        marked.kill()
        other.kill()
        other.wait()
