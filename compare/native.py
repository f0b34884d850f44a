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
from collections.abc import Iterator
from typing import Any

from compare.harness import Say
from compare.pingpong import PCTS
from compare.spec import CompareSpec
from core import procs
from core.errors import EnvironmentProblem


@contextlib.contextmanager
def _server(cmd: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        procs.wait_until(lambda: procs.accepts("127.0.0.1", port) or proc.poll() is not None, 10)
        if proc.poll() is not None or not procs.accepts("127.0.0.1", port):
            raise EnvironmentProblem(f"{cmd[0]} server did not start on port {port}")
        yield proc
    finally:
        procs.stop(proc.pid, group=True, timeout_s=5)


def native(spec: CompareSpec, say: Say) -> dict[str, Any]:
    """iperf3 TCP stream bit/s and sockperf TCP ping-pong RTT/2 on 127.0.0.1: the floor under everything."""
    cfg = spec.native
    assert cfg is not None
    out: dict[str, Any] = {}
    if cfg.iperf3:
        exe = shutil.which("iperf3")
        if exe is None:
            out["iperf3"] = {"error": "iperf3 is not installed (`make deps` installs Debian's iperf3)"}
        else:
            port = procs.free_port()
            with _server([exe, "-s", "-B", "127.0.0.1", "-p", str(port)], port):
                time.sleep(0.2)
                r = subprocess.run(
                    [exe, "-c", "127.0.0.1", "-p", str(port), "-t", f"{cfg.seconds:g}", "-J"],
                    capture_output=True,
                    text=True,
                    timeout=cfg.seconds + 30,
                )
            try:
                bps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]
                out["iperf3"] = {"bit_s": float(bps), "seconds": cfg.seconds}
                say(f"  native iperf3 TCP stream: {bps / 1e9:.2f} Gbit/s")
            except (KeyError, ValueError):
                out["iperf3"] = {"error": (r.stderr or r.stdout).strip()[-300:] or f"exit {r.returncode}"}
    if cfg.sockperf:
        exe = shutil.which("sockperf")
        if exe is None:
            out["sockperf"] = {"error": "sockperf is not installed (`make deps` installs Debian's sockperf)"}
        else:
            port = procs.free_port()
            size = spec.pingpong.size if spec.pingpong else 64
            with _server([exe, "sr", "--tcp", "-i", "127.0.0.1", "-p", str(port)], port):
                r = subprocess.run(
                    [exe, "pp", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", f"{cfg.seconds:g}"],
                    capture_output=True,
                    text=True,
                    timeout=cfg.seconds + 30,
                )
            out["sockperf"] = _parse_sockperf(r.stdout + r.stderr, size)
            if "p50_us" in out["sockperf"]:
                say(f"  native sockperf TCP ping-pong {size} B: RTT/2 median {out['sockperf']['p50_us']:.1f} µs")
    return out


def _parse_sockperf(text: str, size: int) -> dict[str, Any]:

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    row: dict[str, Any] = {"size": size}
    for p in PCTS:
        m = re.search(rf"percentile {p:.3f} =\s*([0-9.]+)", text)
        if m:
            row[f"p{p:g}_us"] = float(m.group(1))
    m = re.search(r"avg-latency=([0-9.]+)", text)
    if m:
        row["mean_us"] = float(m.group(1))
    if "p50_us" not in row:
        return {"error": text.strip()[-300:] or "no output"}
    return row
