"""A comparison of messaging systems (`kafkatune compare`): `runs/<name>/`.

    spec.json                       the comparison spec as run
    comparison.json                 every table (throughput, ping-pong, native floors, fixed rate, IoT)
    <system>/<method>/…/            one run record per harness run (records.run)
    <system>/pingpong/rtt_us.npy    the ping-pong round-trip times (µs)
    report/                         report.html and report.md (reports.comparison)

comparison.json is rewritten after every method, so an interrupted comparison keeps what it measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core import files

SCHEMA_VERSION = 1
COMPARISON = "comparison.json"
SPEC = "spec.json"


def write_spec(root: Path, spec_json: str) -> None:
    files.write_bytes(root / SPEC, spec_json.encode(), mode=0o644)


def write_comparison(root: Path, doc: Mapping[str, Any]) -> None:
    body = json.dumps({"schema_version": SCHEMA_VERSION, **doc}, indent=2, default=str)
    files.write_bytes(root / COMPARISON, body.encode(), mode=0o644)


def read_comparison(root: Path) -> dict[str, Any]:
    return files.read_json_object(root / COMPARISON)


def write_round_trips(root: Path, system: str, rtt_us: Sequence[float]) -> None:
    d = root / system / "pingpong"
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "rtt_us.npy", np.asarray(rtt_us))


def run_dir(root: Path, system: str, method: str, *parts: str) -> Path:
    """Where one harness run of a comparison keeps its record."""
    return root.joinpath(system, method, *parts)
