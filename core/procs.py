"""Processes kafkatune starts and stops (brokers, servers, probes), the ports they listen on, and waiting.

One way to stop a process everywhere: SIGTERM (to its process group when it leads one), a wait, then
SIGKILL and another wait. A process that has exited counts as gone even while it is a zombie whose parent
has not reaped it yet (a broker started by another `kafkatune` invocation); our own children are reaped.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil


def running(pid: int | None, marker: str | None = None) -> bool:
    """Whether `pid` runs (a zombie does not) and, given `marker`, is still the process it was: its command
    line contains `marker`, so a pid the kernel reused for something else does not count. For an instant
    while a wrapper (`ip netns exec`) execs the real program, /proc/<pid>/cmdline reads empty: a young
    process with an empty command line counts as starting."""
    if not pid:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        if marker is None:
            return True
        cmdline = p.cmdline()
        starting = not cmdline and time.time() - p.create_time() < 60
        return starting or marker in " ".join(cmdline)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def wait_until(pred: Callable[[], object], timeout_s: float, interval_s: float = 0.1) -> bool:
    """True as soon as `pred()` is true; False when `timeout_s` passed first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie has); reaps it when it is our child."""
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def exited(pid: int, timeout_s: float) -> bool:
    """True once `pid` has exited, False if it still runs after `timeout_s`."""
    return wait_until(lambda: gone(pid), timeout_s)


def _signal(pid: int, sig: signal.Signals, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def stop(pid: int, *, group: bool = False, timeout_s: float = 30, kill_timeout_s: float = 30) -> bool:
    """SIGTERM `pid` (its whole process group with `group`), then SIGKILL if it is still there after
    `timeout_s`. True once it has exited."""
    return stop_all([pid], group=group, timeout_s=timeout_s, kill_timeout_s=kill_timeout_s)


def stop_all(pids: Iterable[int], *, group: bool = False, timeout_s: float = 30, kill_timeout_s: float = 30) -> bool:
    """`stop` for several processes at once: all get SIGTERM before any is waited for; `timeout_s=0`: SIGKILL
    straight away (nothing they would do on the way out is wanted)."""
    pids = list(pids)
    for pid in pids:
        _signal(pid, signal.SIGTERM if timeout_s > 0 else signal.SIGKILL, group)
    ok = True
    for pid in pids:
        if not exited(pid, timeout_s):
            _signal(pid, signal.SIGKILL, group)
            ok = exited(pid, kill_timeout_s) and ok
    return ok


def kill(pid: int, timeout_s: float = 30) -> bool:
    """SIGKILL `pid` (a fault injected on purpose) and wait until it is gone."""
    _signal(pid, signal.SIGKILL, False)
    return exited(pid, timeout_s)


# Ports free_port hands out: below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where an outgoing
# connection picks its local port, and below the testbeds' fixed ports (base ports 24090-29090, +1 to +303).
FREE_PORTS = range(10000, 24000)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing is bound to now, for a server started next. Chosen at random below the ephemeral range, not
    by the kernel: a port from that range can be taken by any outgoing connection between this call and the
    server's bind (it happened once, to iperf3). The kernel's choice only when that range leaves no room."""
    low = min(FREE_PORTS.stop, ephemeral_ports().start)
    if low > FREE_PORTS.start:
        rng = random.SystemRandom()
        for _ in range(100):
            port = rng.randrange(FREE_PORTS.start, low)
            if port_free(port, host, reuse=False):
                return port
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def ephemeral_ports() -> range:
    """The local ports the kernel gives outgoing connections (Linux's default when it cannot be read)."""
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999
    return range(lo, hi + 1)


def port_free(port: int, host: str = "127.0.0.1", reuse: bool = True) -> bool:
    """Whether a server could bind `port` now. With `reuse` (SO_REUSEADDR, as the servers started here set it) a
    connection lingering there in TIME_WAIT does not count as taken; without it, it does."""
    with socket.socket() as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def accepts(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port now."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError:
        return False
    return True
