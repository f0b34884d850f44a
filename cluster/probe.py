"""Host probes for the cluster profile: what a broker's log dir can absorb, and how fast the CPU runs today.

Kafka appends to segment files sequentially and leaves flushing to the OS unless
`log.flush.interval.*` says otherwise. So the probe writes segment-sized files in 1 MiB blocks, in every
log dir at once (brokers that share a device share its bandwidth), twice:

- `fsync`: each file is fsynced when complete, as a segment is when it rolls; the time includes the
  fsync, so this is what the device sustains. This is the disk term of the ceiling model.
- `buffered`: no fsync; what the page cache absorbs in a burst (an upper bound, not a ceiling).

and measures the rate of small synchronous appends (1 KiB write + fdatasync), the cost a broker pays per
flush when `log.flush.interval.messages=1`.

`probe_cpu` times one fixed piece of pure Python: the same machine ran the benchmarks several times slower on
some days than on others (docs/measurement.md), so a figure carries the speed of the day it was measured on, and
two figures from days of different speed are not compared as if they were one machine's.

This file depends on the standard library only: for a cluster kafkatune reaches over SSH it is copied
to the host as it is and run there (`python3 probe.py disk DIR…`, and `net-server` / `net-client`, a TCP
rate probe for hosts without iperf3); each prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

try:
    from core.errors import UserError
except ImportError:  # shipped alone to a remote host

    class UserError(Exception):  # type: ignore[no-redef]
        pass


MiB = 1024 * 1024
BLOCK = MiB


@dataclass(frozen=True)
class DiskProbe:
    log_dirs: list[str]
    segment_mb: int
    files_per_dir: int
    write_mb_s_measured: float  # per log dir, all dirs writing at once, fsync per file
    write_mb_s_total: float  # all dirs together
    write_mb_s_buffered: float  # per log dir, no fsync (page cache)
    fsync_per_s: float  # 1 KiB write + fdatasync, one dir alone
    fsync_ms_p50: float
    seconds: float

    def as_profile(self) -> dict[str, Any]:
        d = asdict(self)
        d["method"] = (
            f"{self.files_per_dir} × {self.segment_mb} MiB sequential files per log dir, {len(self.log_dirs)} dirs "
            "at once, 1 MiB writes; measured = fsync per file; buffered = no fsync; fsync_per_s = 1 KiB append + "
            "fdatasync"
        )
        return d


def _write_files(d: Path, tag: str, segment_mb: int, files: int, fsync: bool, out: list[float], i: int) -> None:
    buf = os.urandom(BLOCK)
    t0 = time.perf_counter()
    for n in range(files):
        p = d / f".kafkatune-probe-{tag}-{n}.tmp"
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(segment_mb):
                os.write(fd, buf)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    out[i] = time.perf_counter() - t0


def _cleanup(dirs: Sequence[Path]) -> None:
    for d in dirs:
        for p in d.glob(".kafkatune-probe-*.tmp"):
            p.unlink(missing_ok=True)


def _parallel(dirs: Sequence[Path], tag: str, segment_mb: int, files: int, fsync: bool) -> float:
    """Per-dir MB/s with every dir writing at the same time (the slowest dir's pace)."""
    took = [0.0] * len(dirs)
    threads = [
        threading.Thread(target=_write_files, args=(d, tag, segment_mb, files, fsync, took, i))
        for i, d in enumerate(dirs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _cleanup(dirs)
    return segment_mb * files * MiB / 1e6 / max(took)


def _fsync_rate(d: Path, max_ops: int = 300, max_s: float = 1.5) -> tuple[float, float]:
    p = d / ".kafkatune-probe-fsync.tmp"
    buf = os.urandom(1024)
    lat: list[float] = []
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    try:
        t0 = time.perf_counter()
        while len(lat) < max_ops and time.perf_counter() - t0 < max_s:
            t = time.perf_counter()
            os.write(fd, buf)
            os.fdatasync(fd)
            lat.append(time.perf_counter() - t)
        total = time.perf_counter() - t0
    finally:
        os.close(fd)
        p.unlink(missing_ok=True)
    return len(lat) / total, statistics.median(lat) * 1e3


def probe_disk(log_dirs: Sequence[str | Path], *, segment_mb: int = 64, files: int = 2) -> DiskProbe:
    """Measure write bandwidth on the given log dirs (created if missing). Temporary files are removed."""
    if not log_dirs:
        raise UserError("disk probe: no log dir given")
    if segment_mb < 1 or files < 1:
        raise UserError("disk probe: segment size and file count must be ≥ 1")
    dirs = [Path(d) for d in log_dirs]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        if not os.access(d, os.W_OK):
            raise UserError(f"disk probe: log dir {d} is not writable")
    t0 = time.perf_counter()
    try:
        buffered = _parallel(dirs, "buffered", segment_mb, files, fsync=False)
        os.sync()  # the buffered pass must not be written back during the fsync pass
        synced = _parallel(dirs, "fsync", segment_mb, files, fsync=True)
        fsync_per_s, fsync_ms = _fsync_rate(dirs[0])
    finally:
        _cleanup(dirs)
    return DiskProbe(
        log_dirs=[str(d) for d in dirs],
        segment_mb=segment_mb,
        files_per_dir=files,
        write_mb_s_measured=round(synced, 1),
        write_mb_s_total=round(synced * len(dirs), 1),
        write_mb_s_buffered=round(buffered, 1),
        fsync_per_s=round(fsync_per_s, 1),
        fsync_ms_p50=round(fsync_ms, 3),
        seconds=round(time.perf_counter() - t0, 2),
    )


# ---- network: one TCP stream, receiver-side goodput (for hosts without iperf3) ------------------------
CPU_LOOP = 200_000  # iterations of _cpu_work per repeat: a tenth of a second or more on a slow day


def _cpu_work(n: int) -> int:
    """Integer arithmetic and dict stores: the kind of work the load generator's loops do per message."""
    seen: dict[int, int] = {}
    s = 0
    for i in range(n):
        s += i * i % 7
        seen[i & 1023] = s
    return s


def probe_cpu(reps: int = 5) -> dict[str, Any]:
    """The CPU speed now: `reps` timed runs of the same loop, one after another; the median, fastest and
    slowest in ms (lower is faster)."""
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        _cpu_work(CPU_LOOP)
        ms.append((time.perf_counter() - t0) * 1000)
    return {
        "cpu_probe_ms": round(statistics.median(ms), 2),
        "cpu_probe_ms_range": [round(min(ms), 2), round(max(ms), 2)],
        "cpu_probe_method": f"median of {reps} runs of {CPU_LOOP:,} iterations of pure-Python arithmetic and dict "
        "stores (cluster.probe.probe_cpu), one process",
    }


def net_server(address: str, port: int, timeout_s: float) -> dict[str, float]:
    """Accept one connection, count what arrives until the sender closes; MB/s from first to last byte."""
    with socket.create_server((address, port), reuse_port=False) as srv:
        srv.settimeout(timeout_s)
        print(json.dumps({"listening": True}), flush=True)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(timeout_s)
            n = 0
            first = last = 0.0
            buf = bytearray(MiB)
            while True:
                k = conn.recv_into(buf)
                if not k:
                    break
                last = time.perf_counter()
                if not n:
                    first = last
                n += k
    return {"bytes": n, "seconds": round(last - first, 4), "mb_s": round(n / 1e6 / max(last - first, 1e-9), 2)}


def net_client(address: str, port: int, seconds: float) -> dict[str, int]:
    buf = os.urandom(MiB)
    n = 0
    with socket.create_connection((address, port), timeout=30) as s:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            s.sendall(buf)
            n += len(buf)
    return {"bytes_sent": n}


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="probe.py", description="kafkatune's host probes; one JSON object out.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("disk", help="write bandwidth in log dirs (all at once)")
    d.add_argument("dirs", nargs="+")
    d.add_argument("--segment-mb", type=int, default=64)
    d.add_argument("--files", type=int, default=2)
    sub.add_parser("cpu", help="the CPU's speed now: one fixed loop of pure Python, timed")
    s = sub.add_parser("net-server", help="receive one TCP stream and report its rate")
    s.add_argument("address")
    s.add_argument("port", type=int)
    s.add_argument("--timeout", type=float, default=60)
    c = sub.add_parser("net-client", help="send one TCP stream for some seconds")
    c.add_argument("address")
    c.add_argument("port", type=int)
    c.add_argument("--seconds", type=float, default=3)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "disk":
            out = probe_disk(a.dirs, segment_mb=a.segment_mb, files=a.files).as_profile()
        elif a.cmd == "cpu":
            out = probe_cpu()
        elif a.cmd == "net-server":
            out = net_server(a.address, a.port, a.timeout)
        else:
            out = net_client(a.address, a.port, a.seconds)
    except (OSError, UserError) as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
