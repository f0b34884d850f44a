"""A sweep's summary, `runs/<study>/summary.json`: baselines, the best of each stage, the confirmed best,
its share of the ceiling and ratio to Kafka's defaults, and the time spent. Written by sweeps.engine at the
end of a sweep (and again by every resumed one)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core import files

SCHEMA_VERSION = 1
SUMMARY = "summary.json"


def write_summary(root: Path, summary: Mapping[str, Any]) -> None:
    files.write_json(root / SUMMARY, {"schema_version": SCHEMA_VERSION, **summary})


def read_summary(root: Path) -> dict[str, Any] | None:
    """The summary (every schema version up to SCHEMA_VERSION; a newer one is refused), or None when the sweep has
    not finished yet."""
    p = root / SUMMARY
    return files.read_record(p, SCHEMA_VERSION) if p.exists() else None
