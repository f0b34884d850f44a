"""A cluster's profile: what its hardware allows, measured (`profile.json`).

One writer for both kinds of cluster: the testbed (`<state>/profile.json`, measured by `testbed up` and
`kafkatune probe`) and a cluster of an inventory (`<home>/profiles/<inventory name>.json`, measured over
SSH by `kafkatune probe --inventory`). A study keeps a copy of the profile it ran against, and every run
record embeds it. advisor.ceiling turns it into the ceiling model's limits.

    schema_version, source, kafka_version, brokers [{id, host, listener, netns}], bootstrap_servers,
    network {mode, shaped, nic_mb_s_configured, nic_mb_s_measured, …}, disk {write_mb_s_measured, …},
    machine {…}, probed_ns
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core import files, paths

SCHEMA_VERSION = 1
PROFILE = "profile.json"


@dataclass(frozen=True)
class ProfileBroker:
    id: int
    host: str | None = None
    listener: str | None = None
    netns: str | None = None


@dataclass(frozen=True)
class ClusterProfile:
    source: str  # "testbed" | "inventory <name>" | "synthetic"
    brokers: Sequence[ProfileBroker]
    bootstrap_servers: str | None
    network: Mapping[str, Any]  # mode, shaped, nic_mb_s_configured, nic_mb_s_measured, and how it was measured
    disk: Mapping[str, Any]  # the disk probe (write_mb_s_measured, fsync_per_s, …), per broker when remote
    machine: Mapping[str, Any] = field(default_factory=dict)
    kafka_version: str | None = None
    probed_ns: int = field(default_factory=time.time_ns)
    schema_version: int = SCHEMA_VERSION

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        order = [
            "schema_version",
            "source",
            "kafka_version",
            "brokers",
            "bootstrap_servers",
            "network",
            "disk",
            "machine",
            "probed_ns",
        ]
        return {k: d[k] for k in order}


@dataclass(frozen=True)
class Limits:
    """The measured figures a judgement reads from a profile (the ceiling model, the diagnosis, the capacity plan):
    the link rate per host and the disk write rate per log dir (MB/s, None when not measured: an unshaped loopback
    testbed has no link rate), and the broker count (3 when the profile names none)."""

    nic_mb_s: float | None = None
    disk_mb_s: float | None = None
    brokers: int = 3

    @classmethod
    def of(cls, profile: Mapping[str, Any] | None) -> Limits:
        """A profile as read (read_profile, a run record's copy), any schema version; None: nothing measured."""
        if not profile:
            return cls()
        nic = (profile.get("network") or {}).get("nic_mb_s_measured")
        disk = (profile.get("disk") or {}).get("write_mb_s_measured")
        return cls(float(nic) if nic else None, float(disk) if disk else None, len(profile.get("brokers") or ()) or 3)


@dataclass(frozen=True)
class Machine:
    """What a profile says of the machine its figures were measured on (None or empty where an older profile does
    not say): CPUs, the CPU probe of that day (cluster.probe.probe_cpu, ms: lower is faster), the host's page-cache
    writeback the brokers ran with (testbed.writeback; a sentence when it was left alone) and their JVM options."""

    cpus: int | None = None
    cpu_probe_ms: float | None = None
    cpu_probe_ms_range: tuple[float, float] | None = None
    writeback: Mapping[str, int] | str | None = None
    broker_jvm_options: tuple[str, ...] = ()

    @classmethod
    def of(cls, profile: Mapping[str, Any] | None) -> Machine:
        m = (profile or {}).get("machine") or {}
        rng = m.get("cpu_probe_ms_range")
        return cls(
            cpus=m.get("cpus"),
            cpu_probe_ms=m.get("cpu_probe_ms"),
            cpu_probe_ms_range=(float(rng[0]), float(rng[1])) if rng else None,
            writeback=m.get("writeback"),
            broker_jvm_options=tuple(m.get("broker_jvm_options") or ()),
        )


def write_profile(path: Path, profile: ClusterProfile) -> dict[str, Any]:
    """Write the profile; returns it as the JSON the readers get."""
    doc = profile.as_json()
    files.write_json(path, doc)
    return doc


def copy_profile(path: Path, profile: Mapping[str, Any]) -> None:
    """A profile as read (any schema version) into a study folder, so the study says what it ran against."""
    files.write_json(path, dict(profile))


def read_profile(path: Path) -> dict[str, Any] | None:
    """A profile as written (every schema version up to SCHEMA_VERSION; a newer one is refused), or None when
    there is none."""
    return files.read_record(path, SCHEMA_VERSION) if path.exists() else None


def inventory_profile_path(inventory_name: str) -> Path:
    """Where `kafkatune probe --inventory` keeps a cluster's profile, and where sweeps look for it."""
    return paths.home() / "profiles" / f"{inventory_name}.json"
