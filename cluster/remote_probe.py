"""Ceiling probes on a cluster kafkatune reaches over SSH (an inventory), into a cluster profile.

- Disk: cluster/probe.py (standard library only) is copied to each broker over SFTP and run there on
  that broker's log dirs: segment-sized sequential files with and without fsync, and small fsyncs.
- Network: one TCP stream between host pairs (each broker to the next, each client host to the first
  broker) with iperf3 when both hosts have it, otherwise with the same shipped probe (`net-server` on the
  receiver, `net-client` on the sender). The profile's NIC rate is the slowest broker-to-broker pair.

The profile has the testbed's shape, so `ceiling.from_profile` and the advisor read either.
"""

from __future__ import annotations

import json
import platform
import shlex
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from cluster.inventory import Inventory, load_inventory
from cluster.ssh import SshPool, Target
from core.errors import EnvironmentProblem
from records.profile import ClusterProfile, ProfileBroker, inventory_profile_path, write_profile

PROBE_SRC = Path(__file__).with_name("probe.py")
NetTool = Literal["auto", "iperf3", "python"]


def _last_json(text: str, what: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            if "error" in v:
                raise EnvironmentProblem(f"{what}: {v['error']}")
            return v
    raise EnvironmentProblem(f"{what}: no result in its output: {text.strip()[-300:] or 'nothing'}")


class RemoteProber:
    def __init__(
        self, inv: Inventory, pool: SshPool, progress: Callable[[str], None] = print, *, python: str = "python3"
    ) -> None:
        self.inv, self.pool, self.progress, self.python = inv, pool, progress, python
        self._shipped: dict[str, tuple[Target, str]] = {}  # host -> (where, the probe script's path there)

    # ---- targets -----------------------------------------------------------------------------------
    def brokers(self) -> list[tuple[Target, Any]]:
        return [(Target.of(self.inv, b), b) for b in self.inv.brokers]

    def clients(self) -> list[Target]:
        return [Target.of(self.inv, c) for c in self.inv.clients]

    def _probe(self, t: Target) -> str:
        """The probe script on `t` (copied once per host)."""
        if t.host not in self._shipped:
            path = f"/tmp/kafkatune-probe-{uuid.uuid4().hex[:12]}.py"
            self.pool.write_file(t, path, PROBE_SRC.read_text())
            self._shipped[t.host] = (t, path)
        return self._shipped[t.host][1]

    def cleanup(self) -> None:
        for host, (t, path) in list(self._shipped.items()):
            self.pool.run(t, f"rm -f {shlex.quote(path)}", check=False)
            del self._shipped[host]

    # ---- disk ----------------------------------------------------------------------------------------
    def disk(self, t: Target, log_dirs: list[str], segment_mb: int, files: int) -> dict[str, Any]:
        cmd = (
            f"{self.python} {self._probe(t)} disk {' '.join(shlex.quote(d) for d in log_dirs)} "
            f"--segment-mb {segment_mb} --files {files}"
        )
        r = self.pool.run(t, cmd, check=False, timeout_s=1800)
        return _last_json(r.out + r.err, f"{t.label}: disk probe")

    # ---- network -------------------------------------------------------------------------------------
    def _has_iperf3(self, t: Target) -> bool:
        return self.pool.run(t, "command -v iperf3", check=False).rc == 0

    def net(self, src: Target, dst: Target, seconds: float, tool: NetTool, port: int = 5299) -> dict[str, Any]:
        use = tool
        if tool == "auto":
            use = "iperf3" if self._has_iperf3(src) and self._has_iperf3(dst) else "python"
        elif tool == "iperf3" and not (self._has_iperf3(src) and self._has_iperf3(dst)):
            raise EnvironmentProblem(f"iperf3 is not installed on {src.label} and {dst.label} (use --net-tool auto)")
        why = ""
        for attempt in range(3):
            port_ = port + attempt  # a server left over by a failed attempt may still hold the last port
            chan = None
            try:
                if use == "iperf3":
                    server = f"timeout {seconds + 60:g} iperf3 -s -1 -B {shlex.quote(dst.host)} -p {port_}"
                    chan = self.pool.start(dst, server)
                    time.sleep(0.5 + attempt)
                    cmd = f"iperf3 -c {shlex.quote(dst.host)} -p {port_} -t {seconds:g} -O 1 -J"
                    r = self.pool.run(src, cmd, check=False, timeout_s=seconds + 60)
                    try:
                        bps = float(json.loads(r.out)["end"]["sum_received"]["bits_per_second"])
                        return {"from": src.host, "to": dst.host, "tool": "iperf3", "mb_s": round(bps / 8e6, 2)}
                    except (ValueError, KeyError, TypeError):
                        why = (r.out or r.err).strip()[-300:]
                        continue
                probe_dst, probe_src = self._probe(dst), self._probe(src)
                server = f"{self.python} {probe_dst} net-server {shlex.quote(dst.host)} {port_}"
                chan = self.pool.start(dst, f"{server} --timeout {seconds + 60:g}")
                f = chan.makefile("r")
                first = f.readline()
                if b"listening" not in (first if isinstance(first, bytes) else first.encode()):
                    why = f"{dst.label}: probe server did not start: {first!r}"
                    continue
                cmd = f"{self.python} {probe_src} net-client {shlex.quote(dst.host)} {port_} --seconds {seconds:g}"
                self.pool.run(src, cmd, timeout_s=seconds + 60)
                out = f.read()
                res = _last_json(out.decode() if isinstance(out, bytes) else out, f"{dst.label}: network probe")
                return {"from": src.host, "to": dst.host, "tool": "python", "mb_s": res["mb_s"]}
            finally:
                if chan is not None:
                    chan.close()
        raise EnvironmentProblem(f"network probe {src.label} -> {dst.label} failed 3 times: {why}")

    # ---- the profile ----------------------------------------------------------------------------------
    def profile(self, *, seconds: float, tool: NetTool, segment_mb: int, files: int) -> ClusterProfile:
        brokers = self.brokers()
        pairs = []
        for i, (src, _) in enumerate(brokers):
            dst = brokers[(i + 1) % len(brokers)][0]
            if dst.host == src.host:
                continue
            self.progress(f"network: {src.label} -> {dst.label} ({seconds:g} s)")
            pairs.append(self.net(src, dst, seconds, tool))
            self.progress(f"  {pairs[-1]['mb_s']:g} MB/s ({pairs[-1]['tool']})")
        client_pairs = []
        for c in self.clients():
            dst = brokers[0][0]
            if dst.host == c.host:
                continue
            self.progress(f"network: {c.label} -> {dst.label} ({seconds:g} s)")
            client_pairs.append(self.net(c, dst, seconds, tool))
            self.progress(f"  {client_pairs[-1]['mb_s']:g} MB/s ({client_pairs[-1]['tool']})")
        disks = {}
        for t, b in brokers:  # one broker at a time: brokers that share storage do not disturb each other
            self.progress(f"disk: {t.label}, log dirs {', '.join(b.log_dirs)} ({files} × {segment_mb} MiB each)")
            disks[str(b.id)] = self.disk(t, list(b.log_dirs), segment_mb, files)
            d = disks[str(b.id)]
            self.progress(f"  {d['write_mb_s_measured']:g} MB/s per log dir with fsync, {d['fsync_per_s']:g} fsyncs/s")
        slowest = min(disks.values(), key=lambda d: d["write_mb_s_measured"])
        nic = min((p["mb_s"] for p in pairs), default=None)
        return ClusterProfile(
            source=f"inventory {self.inv.name}",
            brokers=tuple(ProfileBroker(b.id, b.host) for _, b in brokers),
            bootstrap_servers=self.inv.bootstrap,
            network={
                "mode": "remote",
                "shaped": False,
                "nic_mb_s_configured": None,
                "nic_mb_s_measured": nic,
                "pairs": pairs,
                "client_pairs": client_pairs,
                "method": f"one TCP stream for {seconds:g} s per pair, each broker to the next; the slowest pair",
            },
            # the ceiling model's disk term is the slowest broker's; every broker's probe is kept
            disk={**slowest, "per_broker": disks},
            machine={"probed_from": platform.node()},
        )


def probe_inventory(
    inventory: Path,
    *,
    tool: NetTool,
    seconds: float,
    segment_mb: int,
    files: int,
    out: Path | None,
    accept_new_host_keys: bool,
    progress: Callable[[str], None],
) -> tuple[ClusterProfile, Path]:
    """Probe the cluster of `inventory` over SSH and write its profile (default: where sweeps of that
    inventory read it); returns the profile and where it was written."""
    inv = load_inventory(inventory)
    with SshPool(accept_new_host_keys=accept_new_host_keys, progress=progress) as pool:
        prober = RemoteProber(inv, pool, progress)
        try:
            measured = prober.profile(seconds=seconds, tool=tool, segment_mb=segment_mb, files=files)
        finally:
            prober.cleanup()
    dest = out or inventory_profile_path(inv.name)
    return write_profile(dest, measured), dest
