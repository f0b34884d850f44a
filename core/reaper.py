"""Processes that die with their owner, however the owner ends (a test run killed with SIGKILL included).

Brokers and servers start in their own session (`start_new_session=True`), so a signal to the owner's process
group does not reach them, and a killed owner runs no teardown: they would keep running, holding ports and
gigabytes of heap. `watch()` starts one small watcher process per owner and marks the owner's environment
with a token (`KAFKATUNE_REAP=<token>`); every process started from then on, however indirectly (a CLI
subprocess, `ip netns exec`, a JVM), inherits the mark. When the owner exits, the watcher finds the marked
processes in /proc/<pid>/environ and stops them: SIGTERM, a grace period, then SIGKILL.

    python -m core.reaper OWNER_PID OWNER_START_TIME TOKEN   # what watch() starts
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import psutil

ENV = "KAFKATUNE_REAP"
GRACE_S = 10.0
POLL_S = 0.5


def watch() -> str:
    """Start the watcher for this process and mark its environment; returns the token. Idempotent per process:
    a second call returns the same token. A child that calls it gets its own token (its own watcher)."""
    me = psutil.Process()
    current = os.environ.get(ENV, "")
    if current.startswith(f"{me.pid}-"):
        return current
    token = f"{me.pid}-{uuid.uuid4().hex[:12]}"
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the watcher must not find itself
    subprocess.Popen(
        [sys.executable, "-m", "core.reaper", str(me.pid), repr(me.create_time()), token],
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives a kill of the owner's process group
    )
    os.environ[ENV] = token
    return token


def marked(token: str) -> list[int]:
    """Pids whose environment carries this token (read from /proc/<pid>/environ)."""
    needle = f"{ENV}={token}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    found.append(int(entry))
        except OSError:  # exited meanwhile, or a kernel thread
            continue
    return found


def reap(token: str, grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM every marked process, SIGKILL those still there after `grace_s`; returns the pids signalled."""
    signalled: list[int] = []
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        pids = [p for p in marked(token) if _alive(p)]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
            signalled.append(pid)
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.2)
    return sorted(set(signalled))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _owner_alive(pid: int, started: float) -> bool:
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE and abs(p.create_time() - started) < 1
    except psutil.NoSuchProcess:
        return False


def main(argv: list[str]) -> None:
    owner, started, token = int(argv[0]), float(argv[1]), argv[2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the owner's terminal is not for us
    while _owner_alive(owner, started):
        time.sleep(POLL_S)
    reap(token)


if __name__ == "__main__":
    main(sys.argv[1:])
