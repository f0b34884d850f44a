"""The brokers' configs before a sweep changed them: `runs/<study>/broker-snapshot-<cluster>.json`.

Per broker, each catalogue key's value and whether it was a per-broker dynamic override, and the
restart-only configs; `dirty` is true from the first change until the configs are restored, so a sweep
killed with -9 leaves a file the next sweep on that cluster restores first (brokerconf.guard).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core import files
from core.typed import from_json, to_json

SCHEMA_VERSION = 1
OVERRIDE = "DYNAMIC_BROKER_CONFIG"  # Kafka's ConfigSource of a value set for this one broker
DEFAULT = "DEFAULT_CONFIG"  # Kafka's own default: nothing set anywhere


@dataclass(frozen=True)
class Setting:
    """One key on one broker as Kafka describes it: its value and where it came from (a ConfigSource name)."""

    value: str | None
    source: str

    @property
    def override(self) -> bool:
        return self.source == OVERRIDE


@dataclass(frozen=True)
class BrokerSnapshot:
    """Broker id -> key -> its setting, for the dynamic catalogue keys; `restart_overrides` as the cluster's restart
    mechanism keeps them (brokerconf.restarts: the testbed's one set of key -> value, or a remote cluster's per
    broker id), None where restart-only keys cannot be changed."""

    brokers: Mapping[str, Mapping[str, Setting]]
    restart_overrides: Any = None
    taken_ns: int = 0
    dirty: bool = False
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], where: str = "broker snapshot") -> BrokerSnapshot:
        return from_json(cls, doc, where)


def write_snapshot(path: Path, snapshot: BrokerSnapshot, *, dirty: bool) -> None:
    files.write_json(path, to_json(replace(snapshot, dirty=dirty)))


def read_snapshot(path: Path) -> BrokerSnapshot | None:
    """The snapshot in `path`, None when there is none (a newer schema version is refused by name)."""
    return BrokerSnapshot.from_json(files.read_record(path, SCHEMA_VERSION), str(path)) if path.exists() else None
