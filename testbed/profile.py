"""The testbed's cluster profile (records.profile): what its links and disk allow, measured.

When shaped, the link rate between two broker namespaces with iperf3; the disk with the probe every
cluster gets (cluster.probe): segment-sized files in all three log dirs at once, with and without fsync,
and small fsyncs. `testbed up` measures quickly (2 × 64 MiB per log dir); `kafkatune probe` with larger
files.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

from cluster import probe
from records.profile import PROFILE, ClusterProfile, ProfileBroker, read_profile, write_profile
from records.testbed import TestbedState, node_dir
from testbed import netns


def measure(
    state_dir: Path,
    st: TestbedState,
    net: netns.ShapedNetwork | None,
    progress: Callable[[str], None],
    *,
    disk_segment_mb: int = 64,
    disk_files: int = 2,
    measure_network: bool = True,
    jvm: list[str] | None = None,
    writeback: Mapping[str, int] | str | None = None,
) -> ClusterProfile:
    """Measure and write `<state>/profile.json` (`jvm`: the brokers' JVM options, and `writeback`: the host's
    page-cache writeback settings or why they were left alone, recorded beside the machine);
    with measure_network=False the network figures already in the profile are kept. Returns the profile as
    written."""
    network = _network(st, net, read_profile(state_dir / PROFILE), measure_network, progress)
    cpu = probe.probe_cpu()
    progress(f"CPU probe: {cpu['cpu_probe_ms']:g} ms (median of 5; lower is faster, cluster.probe.probe_cpu)")
    log_dirs = [node_dir(state_dir, n.id) / "data" for n in st.nodes]
    du = shutil.disk_usage(log_dirs[0]) if log_dirs[0].exists() else None
    progress(
        f"measuring disk writes in the {len(log_dirs)} log dirs at once ({disk_files} × {disk_segment_mb} MiB each)"
    )
    d = probe.probe_disk(log_dirs, segment_mb=disk_segment_mb, files=disk_files)
    progress(
        f"disk: {d.write_mb_s_measured:g} MB/s per log dir with fsync ({d.write_mb_s_total:g} MB/s together), "
        f"{d.fsync_per_s:g} small fsyncs/s"
    )
    return write_profile(
        state_dir / PROFILE,
        ClusterProfile(
            source="testbed",
            kafka_version=st.kafka_version,
            brokers=tuple(ProfileBroker(n.id, n.host, n.listener, n.netns) for n in st.nodes),
            bootstrap_servers=st.bootstrap_servers,
            network=network,
            disk={**d.as_profile(), "free_bytes": du.free if du else None},
            machine={
                "cpus": os.cpu_count(),
                "memory_bytes": psutil.virtual_memory().total,
                "kernel": platform.release(),
                **cpu,
                "broker_jvm_options": jvm,  # testbed.nodes.jvm_options: heap and GC, as every broker ran
                "writeback": dict(writeback) if isinstance(writeback, Mapping) else writeback,  # testbed.writeback
            },
        ),
    )


def _network(
    st: TestbedState,
    net: netns.ShapedNetwork | None,
    old: ClusterProfile | None,
    measure_network: bool,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """The profile's network: the link rate measured between two broker hosts when shaped (the old profile's
    when `measure_network` is False), none known on loopback."""
    network: dict[str, Any] = {"mode": st.network, "shaped": net is not None}
    if not measure_network and old is not None:
        network = dict(old.network)
    elif net is not None:
        progress("measuring the host-to-host rate (iperf3, b1 -> b2)")
        measured = netns.measure_rate(net.host("b1"), net.host("b2"))
        network.update(
            nic_mb_s_configured=st.nic_mb_s,
            nic_mb_s_measured=round(measured, 2),
            client_hosts=[asdict(h) for h in netns.host_names(net, "c")],
        )
        progress(f"measured {measured:.1f} MB/s per link (configured {st.nic_mb_s:g} MB/s)")
    else:
        network.update(
            nic_mb_s_configured=None, nic_mb_s_measured=None, note="unshaped loopback: no network ceiling is known"
        )
    return network
