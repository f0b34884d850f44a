"""A shaped network of hosts on one machine: one network namespace per host on a Linux bridge.

Each host has a veth pair; the host end (inside the namespace, `eth0`) has a `tbf` qdisc that caps what
the host sends, the bridge end one that caps what the host receives, so two senders into one host share
its receive rate, as on a real switch port. Needs root and iproute2. Addresses are from the benchmarking
block (RFC 2544, 198.18.0.0/15) and live only inside the namespaces and on the bridge.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core import procs
from core.errors import EnvironmentProblem
from records.testbed import TestbedState

CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class NetHost:
    name: str  # e.g. "b1", "c1"
    netns: str  # e.g. "kt-b1"
    ip: str


@dataclass(frozen=True)
class ShapedNetwork:
    prefix: str
    subnet: str  # "198.18.0" (a /24)
    bridge: str
    bridge_ip: str
    hosts: tuple[NetHost, ...]
    rate_mb_s: float

    def host(self, name: str) -> NetHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)


# Bits of the effective capability set (linux/capability.h) a shaped network needs: veth pairs, bridges and
# tc qdiscs need CAP_NET_ADMIN; `ip netns add` mounts a namespace file (CAP_SYS_ADMIN).
CAPABILITIES = {"CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21}


def missing_capabilities(status: str | None = None) -> list[str]:
    """The capabilities of CAPABILITIES this process lacks, read from the CapEff line of /proc/self/status."""
    text = status if status is not None else Path("/proc/self/status").read_text()
    m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)$", text, re.M)
    eff = int(m.group(1), 16) if m else 0
    return [name for name, bit in CAPABILITIES.items() if not eff >> bit & 1]


def can_shape() -> tuple[bool, str]:
    """Whether this process can build a shaped network, and if not, why (a preflight: nothing is created)."""
    missing = missing_capabilities()
    if missing:
        who = "not root" if os.geteuid() != 0 else "root, but the effective capability set lacks it"
        return False, f"needs {' and '.join(missing)}: {who}"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return False, "iproute2 (ip, tc) not installed"
    return True, ""


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise EnvironmentProblem(f"`{' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc


def _tbf(dev: str, rate_mb_s: float, netns: str | None = None) -> None:
    rate_bit = int(rate_mb_s * 8e6)
    # tbf needs a bucket at least one GSO super-packet (64 KiB) deep or it drops them whole; 10 ms of
    # traffic keeps short bursts honest at higher rates.
    burst = max(256 * 1024, int(rate_mb_s * 1e6 / 100))
    pre = ["ip", "netns", "exec", netns] if netns else []
    _run(
        *pre,
        "tc",
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "tbf",
        "rate",
        f"{rate_bit}bit",
        "burst",
        str(burst),
        "latency",
        "100ms",
    )


def plan(prefix: str, subnet: str, brokers: int, clients: int, rate_mb_s: float) -> ShapedNetwork:
    hosts = [NetHost(f"b{i}", f"{prefix}-b{i}", f"{subnet}.{10 + i}") for i in range(1, brokers + 1)]
    hosts += [NetHost(f"c{i}", f"{prefix}-c{i}", f"{subnet}.{100 + i}") for i in range(1, clients + 1)]
    return ShapedNetwork(prefix, subnet, f"{prefix}br0", f"{subnet}.254", tuple(hosts), rate_mb_s)


def of_state(st: TestbedState, brokers: int, clients: int) -> ShapedNetwork | None:
    """A testbed's shaped network (hosts, addresses, rate), None when its brokers share this host's loopback."""
    if st.network != "shaped":
        return None
    assert st.subnet and st.nic_mb_s
    return plan(st.prefix, st.subnet, brokers, clients, st.nic_mb_s)


def create(net: ShapedNetwork) -> None:
    """Build the bridge, namespaces, veths and qdiscs. Tears down a half-built one on failure."""
    ok, why = can_shape()
    if not ok:
        raise EnvironmentProblem(f"shaped network needs root with iproute2: {why}")
    destroy(net)
    try:
        _run("ip", "link", "add", net.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{net.bridge_ip}/24", "dev", net.bridge)
        _run("ip", "link", "set", net.bridge, "up")
        for h in net.hosts:
            outer = f"{net.prefix}{h.name}"
            _run("ip", "netns", "add", h.netns)
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", h.netns)
            _run("ip", "link", "set", outer, "master", net.bridge)
            _run("ip", "link", "set", outer, "up")
            _run("ip", "netns", "exec", h.netns, "ip", "addr", "add", f"{h.ip}/24", "dev", "eth0")
            _run("ip", "netns", "exec", h.netns, "ip", "link", "set", "eth0", "up")
            _run("ip", "netns", "exec", h.netns, "ip", "link", "set", "lo", "up")
            _tbf("eth0", net.rate_mb_s, h.netns)  # what the host sends
            _tbf(outer, net.rate_mb_s)  # what the host receives
    except BaseException:
        destroy(net)
        raise


def destroy(net: ShapedNetwork) -> None:
    """Remove everything `create` made; safe to call on a partly built or absent network."""
    for h in net.hosts:
        _run("ip", "link", "del", f"{net.prefix}{h.name}", check=False)
        _run("ip", "netns", "del", h.netns, check=False)
    _run("ip", "link", "del", net.bridge, check=False)


NFT_TABLE = "ktfault"


def drop_random(net: ShapedNetwork, host: str, loss_pct: float, *, undo: bool = False) -> None:
    """Drop `loss_pct` % of the packets `host` sends and of those it receives, at random (an nftables table in its
    namespace: numgen random). `undo` removes the table."""
    h = net.host(host)
    if undo:
        _run("ip", "netns", "exec", h.netns, "nft", "delete", "table", "inet", NFT_TABLE, check=False)
        return
    per_mille = max(1, round(loss_pct * 10))
    rule = f"numgen random mod 1000 < {per_mille} drop"
    chains = "".join(
        f"  chain {hook} {{\n    type filter hook {hook} priority 0;\n    {rule}\n  }}\n"
        for hook in ("output", "input")
    )
    proc = subprocess.run(
        ["ip", "netns", "exec", h.netns, "nft", "-f", "-"],
        input=f"table inet {NFT_TABLE} {{\n{chains}}}\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise EnvironmentProblem(f"nft in {h.netns} failed: {proc.stderr.strip()}")


DELAY_QUEUE = 7  # the NFQUEUE a host's delay line reads (one per namespace: hosts do not share it)
_delay_lines: dict[str, subprocess.Popen[str]] = {}  # netns -> its delay line (testbed.delayline)


def _delay_rules(netns: str, action: str) -> list[subprocess.CompletedProcess[str]]:
    """Insert (-I) or delete (-D) the rule that sends what a host receives, loopback aside, to its delay line.
    Only what it receives: a packet held on its way out still counts against its TCP socket's small-queue budget
    (TSQ), which then caps the stream far below the link (benchmarks/delay_line.py)."""
    rule = ["-j", "NFQUEUE", "--queue-num", str(DELAY_QUEUE), "--queue-bypass"]
    return [
        _run("ip", "netns", "exec", netns, "iptables", action, "INPUT", "!", "-i", "lo", *rule, check=action == "-I")
    ]


def delay_missing() -> str | None:
    """Why a delay cannot be added here, or None: it needs iptables (its NFQUEUE target)."""
    return None if shutil.which("iptables") else "iptables is not installed (apt-get install iptables)"


def degrade(net: ShapedNetwork, host: str, *, delay_ms: float) -> None:
    """`delay_ms` more delay on `host`'s link each way, as round trips see it: every packet it receives (not its
    loopback) waits 2 x `delay_ms` in a delay line (testbed.delayline) run in its namespace, so a round trip through
    the host takes 2 x `delay_ms` longer, and one between two such hosts 4 x, as with `delay_ms` on each way of
    each link; one way is uneven (all of it on the way in). The tbf qdiscs are untouched, so the link keeps its
    rate. A delay line that dies (its parent gone) lets the packets pass at once. `undo_degrade` removes it."""
    h = net.host(host)
    if why := delay_missing():
        raise EnvironmentProblem(f"a delay on {host}'s link: {why}")
    undo_degrade(net, host)
    proc = subprocess.Popen(
        [
            *exec_prefix(h.netns),
            sys.executable,
            "-m",
            "testbed.delayline",
            "--queue",
            str(DELAY_QUEUE),
            "--delay-ms",
            f"{2 * delay_ms:g}",  # all of it on the way in: the round trip through this host is 2 x delay_ms
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()  # the line it prints once the queue is bound
    if not ready.startswith("delay line:"):
        procs.kill(proc.pid)
        err = proc.stderr.read() if proc.stderr else ""
        raise EnvironmentProblem(f"the delay line in {h.netns} did not start: {(ready + err).strip()[-500:]}")
    _delay_lines[h.netns] = proc
    _delay_rules(h.netns, "-I")


def undo_degrade(net: ShapedNetwork, host: str) -> None:
    """The delay on `host`'s link gone: its rules deleted, then its delay line stopped (what waits goes on)."""
    h = net.host(host)
    if shutil.which("iptables"):
        while all(p.returncode == 0 for p in _delay_rules(h.netns, "-D")):
            pass  # every copy of the rules, also one left by a run that died
    proc = _delay_lines.pop(h.netns, None)
    if proc is not None:
        procs.stop(proc.pid, timeout_s=5)
        proc.wait()


def cut(net: ShapedNetwork, a: str, b: str, *, undo: bool = False) -> None:
    """A network partition between hosts `a` and `b`: each drops what it sends to the other (a blackhole route);
    everyone else still reaches both. `undo` heals it."""
    ha, hb = net.host(a), net.host(b)
    for src, dst in ((ha, hb), (hb, ha)):
        _run(
            "ip",
            "netns",
            "exec",
            src.netns,
            "ip",
            "route",
            "del" if undo else "replace",
            "blackhole",
            f"{dst.ip}/32",
            check=not undo,
        )


def exists(net: ShapedNetwork) -> bool:
    return all(os.path.exists(f"/var/run/netns/{h.netns}") for h in net.hosts)


def enter(netns: str) -> None:
    """Move the calling (single-threaded) process into a network namespace, before it opens sockets."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({netns}): {os.strerror(err)}")
    finally:
        os.close(fd)


def exec_prefix(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def measure_rate(server: NetHost, client: NetHost, seconds: float = 3.0, attempts: int = 5) -> float:
    """Host-to-host TCP goodput in MB/s with iperf3 (one stream, client sends).

    Each attempt starts a fresh one-off server: a client that connected too early (server not yet
    listening) or got a partial result (iperf3 exits 0 with an `error` and no totals) tries again.
    """
    if shutil.which("iperf3") is None:
        raise EnvironmentProblem("iperf3 is needed to measure the shaped link: apt-get install iperf3")
    port = "5299"
    why = ""
    for attempt in range(attempts):
        srv = subprocess.Popen(
            [*exec_prefix(server.netns), "iperf3", "-s", "-1", "-B", server.ip, "-p", port],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.3 + attempt * 0.5)  # let it listen
            proc = _run(
                *exec_prefix(client.netns),
                *("iperf3", "-c", server.ip, "-p", port, "-t", str(seconds), "-O", "1", "-J"),
                check=False,
            )
            data: object = None
            try:
                data = json.loads(proc.stdout)
                return float(data["end"]["sum_received"]["bits_per_second"]) / 8e6  # type: ignore[index]
            except (ValueError, KeyError, TypeError):
                why = (
                    (data.get("error") if isinstance(data, dict) else None) or proc.stdout[-300:] or proc.stderr[-300:]
                )
        finally:
            procs.kill(srv.pid)
    raise EnvironmentProblem(f"iperf3 {client.name} -> {server.ip} failed {attempts} times: {why}")


def host_names(net: ShapedNetwork, kind: str) -> Sequence[NetHost]:
    return [h for h in net.hosts if h.name.startswith(kind)]
