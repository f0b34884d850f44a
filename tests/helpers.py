"""Small helpers shared by the tests: CLI invocation, short workloads and sweep specs, waiting on a sweep."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from kafkatune.cli import main as cli_main
from records.trial import TrialRecord
from testbed.lifecycle import Testbed

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def kafkatune(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkatune", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        check=False,
    )


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI run in this process, as `kafkatune()` runs it in a child: its exit status, stdout and stderr. For the
    tests that start no server: a child's Python start and imports cost more than most of them take. What the CLI
    sets for its process (the environment, argv, its SIGINT and SIGTERM handlers) is put back."""
    saved_env, saved_argv = dict(os.environ), sys.argv
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    out, err, rc = io.StringIO(), io.StringIO(), 0
    os.environ.update(env or {})
    sys.argv = ["kafkatune", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli_main()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess(["kafkatune", *args], rc, out.getvalue(), err.getvalue())


def _as_a_background_job() -> None:
    """In the child before exec: SIGINT ignored, as a shell without job control (cron, a CI script's `cmd &`) starts
    a background job; the CLI must still end on SIGINT, through its clean-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def kafkatune_popen(*args: str, log: Path) -> subprocess.Popen[str]:
    """The CLI started in the background (SIGINT ignored, `_as_a_background_job`), its output (progress lines: not a
    terminal) written to `log` as it comes, so a test can wait for a phase (`wait_for_line`) instead of guessing how
    long the start takes."""
    with open(log, "w") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "kafkatune", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
            preexec_fn=_as_a_background_job,
        )


def wait_for_line(proc: subprocess.Popen[str], log: Path, pattern: str, timeout_s: float) -> str:
    """The first line of `log` matching the regex `pattern`, waited for while `proc` runs; fails with the log's end
    when the process exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = next((ln for ln in log.read_text().splitlines() if re.search(pattern, ln)), None)
        if found is not None:
            return found
        assert proc.poll() is None, f"exited {proc.returncode} before /{pattern}/: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no /{pattern}/ in {timeout_s:g} s: {log.read_text()[-3000:]}")


def write_workload(path: Path, **fields: Any) -> Path:
    base: dict[str, Any] = {
        "name": "t",
        "partitionsPerTopic": 3,
        "messageSize": 1024,
        "producersPerTopic": 1,
        "consumerPerSubscription": 1,
        "warmupDurationMinutes": 0,
        "testDurationMinutes": 0.1,
        "producerConfig": {"acks": "all"},
    }
    base.update(fields)
    path.write_text(yaml.safe_dump(base))
    return path


# Sweeps that test applying configs, not rates: a 1-s warm-up and two 1-s windows a trial (each second of a trial
# is paid by every test that runs one)
FAST = {"warmup_s": 1, "window_s": 1, "windows": 2, "restart_warmup_s": 0, "jit_warmup_s": 0}


def write_spec(path: Path, name: str, stages: list[dict[str, Any]], **extra: Any) -> Path:
    spec = {
        "name": name,
        "cluster": {"testbed": True},
        "workload": {"messageSize": 1024, "partitionsPerTopic": 3, "producerConfig": {"acks": "all"}},
        "plan": "staged",
        "stages": stages,
        "baselines": [],
        "objectives": ["throughput_mb_s"],  # these tests are about applying configs: max rate is quicker
        "confirm": {"top": 0},
        "measurement": FAST,
        "seed": 7,
        **extra,
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("trials/*/trial.json"))]


def popen_sweep(
    spec: Path, tb: Testbed, runs: Path, log: Path, *extra: str, out: Path | None = None
) -> subprocess.Popen[bytes]:
    """`kafkatune sweep` started in the background (SIGINT ignored, `_as_a_background_job`), its stderr in `log` and
    its stdout in `out` (thrown away without one)."""
    cmd = [sys.executable, "-m", "kafkatune", "sweep", str(spec), "--state-dir", str(tb.state_dir)]
    cmd += ["--runs-dir", str(runs), *extra]
    with open(log, "wb") as err, open(out or os.devnull, "wb") as std:  # the child keeps its own descriptors
        return subprocess.Popen(cmd, cwd=REPO, stdout=std, stderr=err, preexec_fn=_as_a_background_job)


@contextlib.contextmanager
def ended(*procs: subprocess.Popen[Any]) -> Iterator[None]:
    """On leaving (a failed wait or assert included), each of `procs` still running gets Ctrl-C, its clean-up (a
    sweep restores the broker configs it changed) 60 s, then SIGKILL: none outlives its test to load the next."""
    try:
        yield
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def wait_for(
    pred: Any, timeout_s: float, what: str, proc: subprocess.Popen[bytes] | None = None, every_s: float = 0.3
) -> None:
    """Returns once `pred()` is true, checked every `every_s`; fails when `proc` exits first or at the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"sweep exited ({proc.returncode}) before {what}")
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


def trial_doc(**fields: Any) -> dict[str, Any]:
    """A trial.json document (records.trial) with the fields every record has, for a test that needs only some."""
    every = {"study": "s", "stage": "st", "number": 0, "started_ns": 0, "config": {}, "applied": {}}
    return {**every, "state": "complete", "total_s": 0.0, **fields}


def trial_record(**fields: Any) -> TrialRecord:
    return TrialRecord.from_json(trial_doc(**fields))
