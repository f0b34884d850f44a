"""Where the shaped testbed's delay line holds packets: what a TCP stream between two delayed hosts carries.

testbed.netns.degrade adds a delay to a host's link with a delay line (testbed.delayline) fed by iptables. It can
hold what the host sends and what it receives (`delay_ms` each way), or only what it receives (2 x `delay_ms`):
the same round trips. This measures one iperf3 stream from b1 to b2, both delayed, on a fresh shaped network
(25 MB/s links), for each placement and without a delay, interleaved, `--reps` times each: the goodput, the
stream's mean round trip and retransmits, and the CPU the two delay lines used per MB carried. A packet held on
its way out still counts against its TCP socket's small-queue budget (TSQ), which is why the testbed holds only
what a host receives.

    .venv/bin/python benchmarks/delay_line.py [--delay-ms 5] [--reps 3] [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import REPO, log, median, result_file

from core import interrupts
from testbed import netns

VARIANTS = ("none", "sent and received", "received")  # the last is testbed.netns.degrade's
TICK_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pids: list[int]) -> float:
    """User and system CPU seconds the processes `pids` used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK_S


def _both_ways(net: netns.ShapedNetwork, hosts: list[str], delay_ms: float) -> list[subprocess.Popen[str]]:
    """The other placement, for comparison only: a delay line per host holding what it sends and what it
    receives, `delay_ms` each."""
    lines = []
    for h in hosts:
        ns = net.host(h).netns
        cmd = [*netns.exec_prefix(ns), sys.executable, "-m", "testbed.delayline", "--queue", "7"]
        p = subprocess.Popen([*cmd, "--delay-ms", f"{delay_ms:g}"], stdout=subprocess.PIPE, text=True, cwd=REPO)
        assert p.stdout is not None and p.stdout.readline().startswith("delay line:")
        for chain, flag in (("OUTPUT", "-o"), ("INPUT", "-i")):
            rule = [chain, "!", flag, "lo", "-j", "NFQUEUE", "--queue-num", "7", "--queue-bypass"]
            subprocess.run([*netns.exec_prefix(ns), "iptables", "-I", *rule], check=True)
        lines.append(p)
    return lines


def _undo_both_ways(net: netns.ShapedNetwork, hosts: list[str], lines: list[subprocess.Popen[str]]) -> None:
    for h in hosts:
        for chain, flag in (("OUTPUT", "-o"), ("INPUT", "-i")):
            rule = [chain, "!", flag, "lo", "-j", "NFQUEUE", "--queue-num", "7", "--queue-bypass"]
            subprocess.run([*netns.exec_prefix(net.host(h).netns), "iptables", "-D", *rule], check=False)
    for p in lines:
        p.terminate()
        p.wait(10)


def _stream(net: netns.ShapedNetwork, seconds: float) -> dict[str, Any]:
    """One iperf3 stream b1 -> b2: MB/s received, the sender's mean round trip (ms) and retransmits."""
    a, b = net.host("b1"), net.host("b2")
    srv = subprocess.Popen(
        [*netns.exec_prefix(b.netns), "iperf3", "-s", "-1", "-B", b.ip, "-p", "5299"], stdout=subprocess.DEVNULL
    )
    try:
        time.sleep(0.5)
        cmd = ["iperf3", "-c", b.ip, "-p", "5299", "-t", f"{seconds:g}", "-J"]
        out = subprocess.run([*netns.exec_prefix(a.netns), *cmd], capture_output=True, text=True, check=True).stdout
    finally:
        srv.wait(10)
    d = json.loads(out)
    sender = d["end"]["streams"][0]["sender"]
    return {
        "mb_s": d["end"]["sum_received"]["bits_per_second"] / 8e6,
        "rtt_ms": sender["mean_rtt"] / 1000,
        "retransmits": sender["retransmits"],
    }


def one(net: netns.ShapedNetwork, variant: str, delay_ms: float, seconds: float) -> dict[str, Any]:
    hosts = ["b1", "b2"]
    lines: list[subprocess.Popen[str]] = []
    try:
        if variant == "sent and received":
            lines = _both_ways(net, hosts, delay_ms)
        elif variant == "received":
            for h in hosts:
                netns.degrade(net, h, delay_ms=delay_ms)
        pids = [p.pid for p in lines] + [p.pid for p in netns._delay_lines.values()]
        cpu0 = _cpu_s(pids)
        row = {"variant": variant, **_stream(net, seconds)}
        row["delay_line_cpu_s_per_mb"] = (_cpu_s(pids) - cpu0) / (row["mb_s"] * seconds) if pids else None
    finally:
        _undo_both_ways(net, hosts, lines) if lines else None
        for h in hosts:
            netns.undo_degrade(net, h)
    log(
        f"{variant:<18} {row['mb_s']:6.2f} MB/s  round trip {row['rtt_ms']:6.2f} ms  "
        f"retransmits {row['retransmits']}  delay-line CPU {row['delay_line_cpu_s_per_mb'] or 0:.4f} s/MB"
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--delay-ms", type=float, default=5.0, help="each host's delay, each way (the stretched scenario's)"
    )
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rate", type=float, default=25.0, help="link rate, MB/s")
    a = ap.parse_args()
    interrupts.interrupt_on_signals()
    net = netns.plan("ktd", "198.18.8", 2, 1, a.rate)
    netns.create(net)
    runs = []
    try:
        for _ in range(a.reps):
            runs += [one(net, v, a.delay_ms, a.seconds) for v in VARIANTS]
    finally:
        netns.destroy(net)
    summary = {}
    for v in VARIANTS:
        mine = [r for r in runs if r["variant"] == v]
        mb = [r["mb_s"] for r in mine]
        summary[v] = {
            "n": len(mine),
            "median_mb_s": median(mb),
            "min_mb_s": min(mb),
            "max_mb_s": max(mb),
            "median_rtt_ms": median([r["rtt_ms"] for r in mine]),
            "median_delay_line_cpu_s_per_mb": median([r["delay_line_cpu_s_per_mb"] for r in mine])
            if v != "none"
            else None,
        }
        log(f"{v:<18} median {summary[v]['median_mb_s']:.2f} MB/s (n={len(mine)}, {min(mb):.2f}-{max(mb):.2f})")
    args = {"delay_ms": a.delay_ms, "reps": a.reps, "seconds": a.seconds, "rate_mb_s": a.rate}
    result_file("delay_line", {"args": args, "variants": summary, "runs": runs})


if __name__ == "__main__":
    main()
