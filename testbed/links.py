"""What each link of the shaped testbed met during a run: TCP's own counters, per connection, per host namespace.

A link that drops packets makes TCP send them again; a link that delays them makes every round trip through it
longer. Every connection keeps, for its whole life, the data segments it sent and how many it retransmitted, and
its smoothed round-trip time (`ss -ti`: data_segs_out, retrans:<now>/<total>, rtt:<srtt>/<var>). `Sampler`
reads them in every host's namespace before the run and every EVERY_S during it (a connection that closes keeps
its last reading), and sums them per pair of hosts:

    data_segs, retrans   what the pair's connections sent and resent during the run (both ends): retrans /
                         data_segs is the loss as TCP met it (a dropped acknowledgement also costs a
                         retransmission when the timer fires first, so it reads somewhat above the drop rate)
    rtt_ms               the median, over the readings, of the median smoothed RTT of the pair's connections
                         that were sending: what a round trip through that pair took for most of the run

Connections from the machine itself (the bridge address: metrics scrapes, admin calls) are the pair's "machine"
end. Java's sockets show IPv4 addresses IPv4-mapped ([::ffff:198.18.0.11]).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import threading
from collections.abc import Mapping

from records.result import Link
from testbed.netns import ShapedNetwork, exec_prefix

Conn = tuple[str, str, str]  # (namespace, local address:port, peer address:port)
Counts = tuple[int, int, float]  # (data segments sent, segments retransmitted: in its life; smoothed RTT, ms)

EVERY_S = 2.0
MACHINE = "machine"  # the bridge's address: this machine's own connections into the shaped hosts
_ADDR = re.compile(r"^\s*\d+\s+\d+\s+(\S+)\s+(\S+)")
_SENT = re.compile(r"\bdata_segs_out:(\d+)")
_RETRANS = re.compile(r"\bretrans:\d+/(\d+)")
_RTT = re.compile(r"\brtt:([0-9.]+)/")


def parse_ss(text: str) -> dict[tuple[str, str], Counts]:
    """`ss -tinH state established` output -> (local, peer) -> counts. A connection that never sent data has no
    data_segs_out field: 0."""
    out: dict[tuple[str, str], Counts] = {}
    key: tuple[str, str] | None = None
    for line in text.splitlines():
        m = _ADDR.match(line)
        if m and not line.startswith(("\t", " \t")):
            key = (m.group(1), m.group(2))
            continue
        if key is not None and line.strip():
            sent, ret, rtt = _SENT.search(line), _RETRANS.search(line), _RTT.search(line)
            out[key] = (
                int(sent.group(1)) if sent else 0,
                int(ret.group(1)) if ret else 0,
                float(rtt.group(1)) if rtt else 0.0,
            )
            key = None
    return out


def snapshot(net: ShapedNetwork) -> dict[Conn, Counts]:
    """Every established TCP connection in every host's namespace, with its counts now."""
    out: dict[Conn, Counts] = {}
    for h in net.hosts:
        proc = subprocess.run(
            [*exec_prefix(h.netns), "ss", "-tinH", "state", "established"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        for (local, peer), counts in parse_ss(proc.stdout).items():
            out[(h.netns, local, peer)] = counts
    return out


def host_of(addr: str, names: Mapping[str, str]) -> str | None:
    ip = addr.rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")
    return names.get(ip)


class Sampler:
    """The links' counters over a run: `start()` before it, `stop()` after it returns `rows()`."""

    def __init__(self, net: ShapedNetwork, every_s: float = EVERY_S) -> None:
        self.net, self.every_s = net, every_s
        self.names = {h.ip: h.name for h in net.hosts} | {net.bridge_ip: MACHINE}
        self.before: dict[Conn, Counts] = {}
        self.last: dict[Conn, Counts] = {}  # each connection's latest reading, kept once it closes
        self.rtts: dict[tuple[str, str], list[float]] = {}  # per pair: the median RTT of each reading
        self._prev: dict[Conn, Counts] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="links", daemon=True)

    def pair(self, conn: Conn) -> tuple[str, str] | None:
        a, b = host_of(conn[1], self.names), host_of(conn[2], self.names)
        return None if a is None or b is None or a == b else (min(a, b), max(a, b))

    def start(self) -> Sampler:
        self.before = self._prev = snapshot(self.net)
        self._thread.start()
        return self

    def _read(self) -> None:
        now = snapshot(self.net)
        sending: dict[tuple[str, str], list[float]] = {}
        for conn, counts in now.items():
            pair = self.pair(conn)
            if pair is not None and counts[2] > 0 and counts[0] > self._prev.get(conn, (0, 0, 0.0))[0]:
                sending.setdefault(pair, []).append(counts[2])
        for pair, rs in sending.items():
            self.rtts.setdefault(pair, []).append(statistics.median(rs))
        self.last.update(now)
        self._prev = now

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._read()

    def stop(self) -> list[Link]:
        self._stop.set()
        self._thread.join(timeout=60)
        self._read()
        return self.rows()

    def rows(self) -> list[Link]:
        """Per pair of hosts that exchanged data during the run: segments sent, resent, the share resent (%) and
        the round trip (ms), busiest pair first. A connection opened during the run counts from 0."""
        sums: dict[tuple[str, str], list[int]] = {}
        for conn, (sent, ret, _) in self.last.items():
            pair = self.pair(conn)
            if pair is None:
                continue
            s0, r0, _ = self.before.get(conn, (0, 0, 0.0))
            if sent < s0 or ret < r0:  # the same address pair on a new connection
                s0 = r0 = 0
            acc = sums.setdefault(pair, [0, 0])
            acc[0] += sent - s0
            acc[1] += ret - r0
        rows = [
            Link(
                hosts=k,
                data_segs=s,
                retrans=r,
                retrans_pct=round(100 * r / s, 3),
                rtt_ms=round(statistics.median(self.rtts[k]), 3) if self.rtts.get(k) else None,
                rtt_readings=len(self.rtts.get(k) or []),
            )
            for k, (s, r) in sums.items()
            if s > 0
        ]
        return sorted(rows, key=lambda x: -x.data_segs)
