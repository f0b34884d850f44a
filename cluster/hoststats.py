"""What the machine the brokers run on did each second, when they run on this one (the testbed): CPU, each
broker process's time on a CPU and waiting for one, the CPU other processes took, and the shaped links' queues.

The brokers' JMX says what Kafka did; it cannot say that a broker was ready to run and got no CPU, which on a
machine shared by three brokers and the load generator is a cause of latency of its own (a thread that waits
for a CPU delays every request it holds). Linux keeps that per thread (`/proc/<pid>/task/<tid>/schedstat`: time
on a CPU, time runnable but waiting, in ns); a process's figures are its threads' sums.

A local broker is found by its metrics address: the testbed starts each with the JMX exporter agent at
`<host>:<port>` of its metrics URL (testbed.nodes), so no process id has to travel with the run. Brokers not
on this machine are not sampled (their rows are absent, and the tail budget says what was not observed).

Other processes (`other_cpu`): the CPU time taken by user processes that are neither the brokers nor this run
(the sampling process and its descendants: the load workers) nor the testbed's delay lines (its links' delay),
from each one's /proc/<pid>/stat. A neighbour at a high priority starves the brokers and stretches every elapsed
time they report (JIT compile time, GC pauses, flushes), so it is named as itself; kernel threads are left out
(their work, disk writeback and softirqs, is done for the processes that caused it).

The shaped testbed's links (testbed.netns) are veth pairs with a `tbf` qdisc at each end; the end on the bridge
(in this namespace) shapes what its host receives. Per second: bytes each way from the bridge end's counters
(`rx_bytes` is what the host sent), read every LINK_EVERY_S so that a burst that fills a link for a tenth of a
second shows (a second's average hides it: links at 70 % on average carried bursts at their full rate), and the
receive side's queue (`tc -s qdisc`: backlog now, drops and throttled packets since the last second).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cluster.clients import WORKER_AGENT
from records.seconds import Row

PROC = Path("/proc")
SYS_NET = Path("/sys/class/net")
LINK_EVERY_S = 0.1  # how often the links' byte counters are read within each second
PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: a kernel thread (include/linux/sched.h)
AGENT_ARGV = b"\0-m\0" + WORKER_AGENT.encode() + b"\0"  # cluster.clients: `python -m loadgen.agent`
DELAY_LINE_ARGV = b"\0-m\0testbed.delayline\0"  # the shaped testbed's delay on a link (testbed.netns.degrade)
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_times(pid: int | str, proc: Path = PROC) -> tuple[int, int] | None:
    """(on-CPU ns, runnable-but-waiting ns) summed over the process's threads; None when it is gone."""
    run = wait = 0
    try:
        tasks = os.listdir(proc / str(pid) / "task")
    except OSError:
        return None
    for tid in tasks:
        try:
            fields = (proc / str(pid) / "task" / tid / "schedstat").read_text().split()
        except OSError:  # a thread that ended between the listing and the read
            continue
        run += int(fields[0])
        wait += int(fields[1])
    return run, wait


def task_times(pid: int | str, tid: int | str, proc: Path = PROC) -> tuple[int, int] | None:
    """(on-CPU ns, runnable-but-waiting ns) of one thread of a process; None when it is gone."""
    try:
        fields = (proc / str(pid) / "task" / str(tid) / "schedstat").read_text().split()
    except OSError:
        return None
    return int(fields[0]), int(fields[1])


def cpu_pressure_us(proc: Path = PROC) -> int | None:
    """Microseconds since boot in which some runnable task waited for a CPU (/proc/pressure/cpu, Linux PSI); None
    without PSI."""
    try:
        first = (proc / "pressure" / "cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return int(first.rsplit("total=", 1)[1]) if first.startswith("some") and "total=" in first else None


def cpu_busy_jiffies(proc: Path = PROC) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot (/proc/stat's first line; idle and iowait are not busy)."""
    parts = (proc / "stat").read_text().splitlines()[0].split()[1:]
    vals = [int(x) for x in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    total = sum(vals[:8])  # guest time is already counted in user
    return total - idle, total


def _stat(pid: str, proc: Path) -> tuple[int, int, int] | None:
    """(parent pid, kernel-thread flag, user+system clock ticks) of a process; None when it is gone."""
    try:
        text = (proc / pid / "stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces and parentheses
    if len(rest) < 13:
        return None
    return int(rest[1]), int(rest[6]) & PF_KTHREAD, int(rest[11]) + int(rest[12])


def other_ticks(ours: Iterable[int], proc: Path = PROC) -> dict[int, tuple[str, int]]:
    """pid -> (name, user+system clock ticks) of every user process that is not one of `ours`, a client host's
    worker agent (a run's load generator reached over SSH, here when the client host is this machine), a delay line
    of the testbed's links (the links' own delay, not a neighbour of theirs) nor descended from one: the processes a
    run shares this machine with."""
    stats = {int(d): st for d in os.listdir(proc) if d.isdigit() and (st := _stat(d, proc)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    agents = [pid for pid in stats if any(argv in _cmdline(pid, proc) for argv in (AGENT_ARGV, DELAY_LINE_ARGV))]
    mine, todo = set(), [p for p in ours if p in stats] + agents
    while todo:
        p = todo.pop()
        if p not in mine:
            mine.add(p)
            todo.extend(children.get(p, ()))
    out = {}
    for pid, (_, kthread, ticks) in stats.items():
        if pid not in mine and not kthread and pid != 2:  # pid 2: kthreadd
            out[pid] = (_comm(pid, proc), ticks)
    return out


def _cmdline(pid: int, proc: Path) -> bytes:
    try:
        return (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _comm(pid: int, proc: Path) -> str:
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"


def local_brokers(metrics_urls: Mapping[int, str], proc: Path = PROC) -> dict[int, int]:
    """broker id -> pid of the brokers whose JMX exporter agent listens at their metrics URL's host:port here."""
    wanted = {}
    for bid, url in metrics_urls.items():
        u = urlsplit(url)
        wanted[f"={u.hostname}:{u.port}:"] = bid
    found: dict[int, int] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if b"kafka.Kafka" not in cmd:
            continue
        text = cmd.replace(b"\0", b" ").decode(errors="replace")
        for needle, bid in wanted.items():
            if needle in text:
                found[bid] = int(d.name)
    return found


_QDISC = re.compile(
    r"qdisc tbf \S+ dev (\S+) root.*?rate (\S+).*?\n\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+), "
    r"overlimits (\d+).*?\n\s*backlog (\d+)b",
    re.S,
)


_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9}


def _rate_bytes(text: str) -> float:
    """tc's printed rate ("200Mbit", "1500Kbit", "12Mbps") in bytes per second."""
    m = re.fullmatch(r"([\d.]+)([A-Za-z]+)", text)
    if not m or m.group(2).lower() not in _UNITS:
        return 0.0
    return float(m.group(1)) * _UNITS[m.group(2).lower()] / 8


def tbf_queues(run: Callable[[list[str]], str] | None = None) -> dict[str, dict[str, float]]:
    """Every `tbf` root qdisc of this namespace: dev -> its rate (bytes/s) and counters (backlog bytes now,
    drops and throttled packets since it was made). Empty when tc is missing or nothing is shaped."""
    text = (run or _tc)(["tc", "-s", "qdisc", "show"])
    return {
        m.group(1): {
            "rate": _rate_bytes(m.group(2)),
            "backlog": int(m.group(7)),
            "dropped": int(m.group(5)),
            "overlimits": int(m.group(6)),
        }
        for m in _QDISC.finditer(text)
    }


def _tc(args: list[str]) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=2, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def link_bytes(dev: str) -> tuple[int, int] | None:
    """(received, transmitted) bytes of `dev` in this namespace."""
    try:
        rx = int((SYS_NET / dev / "statistics" / "rx_bytes").read_text())
        tx = int((SYS_NET / dev / "statistics" / "tx_bytes").read_text())
    except (OSError, ValueError):
        return None
    return rx, tx


@dataclass
class HostSample:
    """One second's cumulative readings (differences of two make a row)."""

    t_ns: int
    cpu: tuple[int, int]  # busy, total jiffies
    pressure_us: int | None  # PSI: time some task waited for a CPU, since boot
    brokers: dict[int, tuple[int, int]]  # broker id -> (on-CPU ns, waiting ns)
    links: dict[str, tuple[int, int]]  # bridge-end dev -> (bytes its host sent, bytes its host received)
    queues: dict[str, dict[str, float]]  # bridge-end dev -> tbf rate and counters (the host's receive side)
    # bridge-end dev -> the fullest LINK_EVERY_S of the second each way (sent, received), as a share of its rate
    peaks: dict[str, tuple[float, float]] = field(default_factory=dict)
    others: dict[int, tuple[str, int]] = field(default_factory=dict)  # other_ticks: pid -> (name, CPU ticks)


@dataclass
class HostSampler:
    """Samples this machine once a second in a background thread while a run goes on. `brokers`: id -> pid of
    the local brokers (local_brokers); `links`: whether to read the shaped links (tc runs once a second); `own`:
    the run's process (it and its descendants are not other processes); `urls`: the brokers' metrics URLs, to
    find a broker again when one restarted during the run (its new JVM is not another process)."""

    brokers: Mapping[int, int]
    links: bool = True
    own: int = field(default_factory=os.getpid)
    urls: Mapping[int, str] = field(default_factory=dict)
    interval_s: float = 1.0
    clock: Callable[[], int] = time.time_ns
    samples: list[HostSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _devs: dict[str, float] = field(default_factory=dict)  # shaped links: bridge-end dev -> its rate, bytes/s

    def read(self, peaks: dict[str, tuple[float, float]] | None = None) -> HostSample:
        brokers = {b: t for b, pid in self.brokers.items() if (t := thread_times(pid)) is not None}
        if len(brokers) < len(self.brokers) and self.urls:  # a broker restarted: its new process
            self.brokers = local_brokers(self.urls)
        queues = tbf_queues() if self.links else {}
        self._devs = {d: q["rate"] for d, q in queues.items() if q["rate"] > 0}
        links = {d: b for d in queues if (b := link_bytes(d)) is not None}
        others = other_ticks([self.own, *self.brokers.values()])
        return HostSample(
            self.clock(), cpu_busy_jiffies(), cpu_pressure_us(), brokers, links, queues, dict(peaks or {}), others
        )

    def start(self) -> HostSampler:
        self._thread = threading.Thread(target=self._loop, name="host-stats", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[HostSample]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        return list(self.samples)

    def _loop(self) -> None:
        next_t = time.monotonic()
        peaks: dict[str, tuple[float, float]] = {}
        while not self._stop.is_set():
            try:
                self.samples.append(self.read(peaks))
            except OSError:  # /proc unreadable (not Linux): nothing to say about this host
                return
            next_t += self.interval_s
            peaks = self._peaks(next_t)

    def _peaks(self, until: float) -> dict[str, tuple[float, float]]:
        """Until monotonic time `until` (or stop): each link's fullest LINK_EVERY_S each way, share of its rate."""
        peaks: dict[str, tuple[float, float]] = {}
        last = {d: (time.monotonic(), b) for d in self._devs if (b := link_bytes(d)) is not None}
        while not self._stop.wait(max(0.0, min(LINK_EVERY_S, until - time.monotonic()))):
            now = time.monotonic()
            for d, (t0, (rx0, tx0)) in list(last.items()):
                b = link_bytes(d)
                if b is None or now - t0 <= 0:
                    continue
                dt, rate = now - t0, self._devs[d]
                out_, in_ = (b[0] - rx0) / dt / rate, (b[1] - tx0) / dt / rate
                p = peaks.get(d, (0.0, 0.0))
                peaks[d] = (max(p[0], out_), max(p[1], in_))
                last[d] = (now, b)
            if now >= until:
                break
        return peaks


def others_cpu(a: Mapping[int, tuple[str, int]], b: Mapping[int, tuple[str, int]], dt: float) -> tuple[float, str]:
    """The cores other processes took between two other_ticks readings `dt` s apart, and the largest one's
    "name[pid]" ("" when none took any). A process that started in between counts from zero."""
    used = {pid: ticks - (a[pid][1] if pid in a and a[pid][1] <= ticks else 0) for pid, (_, ticks) in b.items()}
    top = max(used, key=used.__getitem__, default=None)
    name = f"{b[top][0]}[{top}]" if top is not None and used[top] > 0 else ""
    return sum(used.values()) / CLK_TCK / dt, name


def rows(samples: list[HostSample]) -> list[Row]:
    """One row per interval: the machine's busy CPU share and CPU pressure (the share of the interval some task
    waited for a CPU), the cores other processes took and the largest of them (`other_cpu`, `other_top`), each
    broker's cores on a CPU and waiting for one,
    and per shaped link its utilisation each way (of its tbf rate) over the interval and in its fullest
    LINK_EVERY_S (`peak`), receive backlog (bytes) and the drops and throttled packets in the interval."""
    out: list[Row] = []
    for a, b in itertools.pairwise(samples):
        dt = (b.t_ns - a.t_ns) / 1e9
        if dt <= 0:
            continue
        busy, total = b.cpu[0] - a.cpu[0], b.cpu[1] - a.cpu[1]
        row: Row = {"t_ns": b.t_ns, "interval_s": dt, "cpu_busy": busy / total if total > 0 else None}
        if a.pressure_us is not None and b.pressure_us is not None:  # the share of the interval some task waited
            row["cpu_pressure"] = min(1.0, (b.pressure_us - a.pressure_us) / 1e6 / dt)
        if a.others or b.others:
            row["other_cpu"], row["other_top"] = others_cpu(a.others, b.others, dt)
        for bid, (run, wait) in b.brokers.items():
            if bid in a.brokers and run >= a.brokers[bid][0]:  # a restarted broker's threads start again
                row[f"broker{bid}_cpu"] = (run - a.brokers[bid][0]) / 1e9 / dt
                row[f"broker{bid}_wait"] = (wait - a.brokers[bid][1]) / 1e9 / dt
        for dev, (rx, tx) in b.links.items():
            rate = b.queues.get(dev, {}).get("rate") or 0.0
            if dev in a.links and rate > 0:
                row[f"link_{dev}_out"] = (rx - a.links[dev][0]) / dt / rate
                row[f"link_{dev}_in"] = (tx - a.links[dev][1]) / dt / rate
        for dev, (out_, in_) in b.peaks.items():
            row[f"link_{dev}_peak_out"], row[f"link_{dev}_peak_in"] = out_, in_
        for dev, q in b.queues.items():
            prev = a.queues.get(dev)
            row[f"link_{dev}_backlog"] = q["backlog"]
            if prev is not None:
                row[f"link_{dev}_dropped"] = max(0, q["dropped"] - prev["dropped"])
                row[f"link_{dev}_throttled"] = max(0, q["overlimits"] - prev["overlimits"])
        out.append(row)
    return out
