"""The floors under the harness: iperf3 (a TCP stream, bit/s) and sockperf (TCP ping-pong, RTT/2) on
127.0.0.1. Beside the raw-TCP driver's run through the harness, they make the harness's own overhead a
printed number."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

from compare.harness import Say
from compare.pingpong import PCTS
from compare.spec import CompareSpec
from core import procs
from core.errors import EnvironmentProblem
from records.comparison import Iperf, LatencyRow, Native

SERVER_TRIES = 3  # free ports a floor's server is started on before its failure is the comparison's


def _started(cmd: list[str], port: int) -> subprocess.Popen[bytes] | None:
    """The server accepting on `port` within 20 s; None (and stopped) when it exited or never accepted."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    procs.wait_until(lambda: procs.accepts("127.0.0.1", port) or proc.poll() is not None, 20)
    if proc.poll() is None and procs.accepts("127.0.0.1", port):
        return proc
    procs.stop(proc.pid, group=True, timeout_s=5)
    return None


@contextlib.contextmanager
def _server(cmd: Callable[[int], list[str]]) -> Iterator[int]:
    """`cmd(port)` started on a free port; yields the port. A port another process takes between the check and the
    server's bind (a busy machine's tests open many) is tried again on a new one, SERVER_TRIES times."""
    for _ in range(SERVER_TRIES):
        port = procs.free_port()
        proc = _started(cmd(port), port)
        if proc is not None:
            break
    else:
        raise EnvironmentProblem(f"{cmd(0)[0]} server did not start on any of {SERVER_TRIES} free ports")
    try:
        yield port
    finally:
        procs.stop(proc.pid, group=True, timeout_s=5)


def native(spec: CompareSpec, say: Say) -> Native:
    """iperf3 TCP stream bit/s and sockperf TCP ping-pong RTT/2 on 127.0.0.1: the floor under everything."""
    cfg = spec.native
    assert cfg is not None
    return Native(_iperf3(cfg.seconds, say) if cfg.iperf3 else None, _sockperf(spec, say) if cfg.sockperf else None)


def _iperf3(seconds: float, say: Say) -> Iperf:
    """iperf3's TCP stream on 127.0.0.1 for `seconds`, or why there is no figure."""
    exe = shutil.which("iperf3")
    if exe is None:
        return Iperf(error="iperf3 is not installed (`make deps` installs Debian's iperf3)")
    with _server(lambda port: [exe, "-s", "-B", "127.0.0.1", "-p", str(port)]) as port:
        time.sleep(0.2)
        r = subprocess.run(
            [exe, "-c", "127.0.0.1", "-p", str(port), "-t", f"{seconds:g}", "-J"],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
        )
    try:
        bps = float(json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"])
    except (KeyError, ValueError):
        return Iperf(error=(r.stderr or r.stdout).strip()[-300:] or f"exit {r.returncode}")
    say(f"  native iperf3 TCP stream: {bps / 1e9:.2f} Gbit/s")
    return Iperf(bit_s=bps, seconds=seconds)


def _sockperf(spec: CompareSpec, say: Say) -> LatencyRow:
    """sockperf's TCP ping-pong on 127.0.0.1 at the ping-pong's size (RTT/2, µs), or why there is no figure."""
    assert spec.native is not None
    exe = shutil.which("sockperf")
    if exe is None:
        return LatencyRow(error="sockperf is not installed (`make deps` installs Debian's sockperf)")
    size = spec.pingpong.size if spec.pingpong else 64
    secs = spec.native.seconds
    with _server(lambda port: [exe, "sr", "--tcp", "-i", "127.0.0.1", "-p", str(port)]) as port:
        r = subprocess.run(
            [exe, "pp", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", f"{secs:g}"],
            capture_output=True,
            text=True,
            timeout=secs + 30,
        )
    row = _parse_sockperf(r.stdout + r.stderr, size)
    if row.p50_us is not None:
        say(f"  native sockperf TCP ping-pong {size} B: RTT/2 median {row.p50_us:.1f} µs")
    return row


def _parse_sockperf(text: str, size: int) -> LatencyRow:
    """sockperf's percentiles (PCTS) and mean as a latency row; its output's end as the error when it has none."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    found = [re.search(rf"percentile {p:.3f} =\s*([0-9.]+)", text) for p in PCTS]
    p50, p90, p99, p999 = (float(m.group(1)) if m else None for m in found)
    if p50 is None:
        return LatencyRow(error=text.strip()[-300:] or "no output")
    mean = re.search(r"avg-latency=([0-9.]+)", text)
    return LatencyRow(
        size=size, p50_us=p50, p90_us=p90, p99_us=p99, p999_us=p999, mean_us=float(mean.group(1)) if mean else None
    )
