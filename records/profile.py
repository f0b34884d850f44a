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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import files, paths, typed

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
    """profile.json, typed: the readers get attributes; dicts stay at its JSON edge (from_json, to_json)."""

    source: str = "unknown"  # "testbed" | "inventory <name>" | "synthetic"
    brokers: tuple[ProfileBroker, ...] = ()
    bootstrap_servers: str | None = None
    network: Mapping[str, Any] = field(default_factory=dict)  # mode, shaped, nic_mb_s_configured, _measured, how
    disk: Mapping[str, Any] = field(default_factory=dict)  # write_mb_s_measured, fsync_per_s, …, per broker if remote
    machine: Mapping[str, Any] = field(default_factory=dict)
    kafka_version: str | None = None
    probed_ns: int = field(default_factory=time.time_ns)
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], where: str = PROFILE) -> ClusterProfile:
        """A profile as written by any schema version up to SCHEMA_VERSION (keys it does not know are left out)."""
        return typed.from_json(cls, doc, where)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = typed.to_json(self)
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
    def of(cls, profile: ClusterProfile | None) -> Limits:
        """The limits of `profile`; None: nothing measured."""
        if profile is None:
            return cls()
        nic, disk = profile.network.get("nic_mb_s_measured"), profile.disk.get("write_mb_s_measured")
        return cls(float(nic) if nic else None, float(disk) if disk else None, len(profile.brokers) or 3)


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
    def of(cls, profile: ClusterProfile | None) -> Machine:
        return typed.from_json(cls, profile.machine, "profile.machine") if profile else cls()


def write_profile(path: Path, profile: ClusterProfile) -> ClusterProfile:
    """Write the profile (a study's copy too, so the study says what it ran against); returns it."""
    files.write_json(path, profile.to_json())
    return profile


def read_profile(path: Path) -> ClusterProfile | None:
    """A profile as written (every schema version up to SCHEMA_VERSION; a newer one is refused), or None when
    there is none."""
    return ClusterProfile.from_json(files.read_record(path, SCHEMA_VERSION), str(path)) if path.exists() else None


def inventory_profile_path(inventory_name: str) -> Path:
    """Where `kafkatune probe --inventory` keeps a cluster's profile, and where sweeps look for it."""
    return paths.home() / "profiles" / f"{inventory_name}.json"
