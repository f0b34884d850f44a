"""The brokers' configs before a sweep changed them: `runs/<study>/broker-snapshot-<cluster>.json`.

Per broker, each catalogue key's value and whether it was a per-broker dynamic override, and the
restart-only configs; `dirty` is true from the first change until the configs are restored, so a sweep
killed with -9 leaves a file the next sweep on that cluster restores first (brokerconf.guard).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core import files

SCHEMA_VERSION = 1


def write_snapshot(path: Path, snapshot: Mapping[str, Any], *, dirty: bool) -> None:
    version = snapshot.get("schema_version", SCHEMA_VERSION)
    files.write_json(path, {**snapshot, "schema_version": version, "dirty": dirty})


def read_snapshot(path: Path) -> dict[str, Any] | None:
    return files.read_json_object(path) if path.exists() else None
