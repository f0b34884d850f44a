"""A comparison of messaging systems (`kafkatune compare`): `runs/<name>/`.

    spec.json                       the comparison spec as run
    comparison.json                 every table (throughput, ping-pong, native floors, fixed rate, IoT)
    <system>/<method>/…/            one run record per harness run (records.run)
    <system>/pingpong/rtt_us.npy    the ping-pong round-trip times (µs)
    report/                         report.html and report.md (reports.comparison)

comparison.json is rewritten after every method, so an interrupted comparison keeps what it measured. It is read
as the typed `Comparison` (one record per table row); an error row carries its `error` and None for each figure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core import files
from core.typed import from_json, to_json

SCHEMA_VERSION = 1
COMPARISON = "comparison.json"
SPEC = "spec.json"


def write_spec(root: Path, spec_json: str) -> None:
    files.write_bytes(root / SPEC, spec_json.encode(), mode=0o644)


def write_comparison(root: Path, doc: Comparison) -> None:
    """comparison.json, rewritten whole (kafkatune compare writes it after every method)."""
    body = json.dumps(to_json(doc), indent=2, default=str)
    files.write_bytes(root / COMPARISON, body.encode(), mode=0o644)


@dataclass(frozen=True)
class System:
    name: str
    driver: str = ""
    server: str | None = None
    partitioned: bool | None = None


@dataclass(frozen=True)
class ThroughputRow:
    """One system at one payload size, back to back: the median delivered msg/s over every measured second."""

    system: str
    size: int
    driver: str = ""
    repeats: int | None = None
    samples: int | None = None
    samples_kept: int | None = None
    msg_s: float | None = None
    msg_s_p25: float | None = None
    msg_s_p75: float | None = None
    bit_s: float | None = None
    publish_msg_s: float | None = None
    lost: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class LatencyRow:
    """Ping-pong round trips halved (µs): one system through the harness, or sockperf's native floor."""

    system: str = ""
    driver: str = ""
    size: int | None = None
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = field(default=None, metadata={"json": "p99.9_us"})
    mean_us: float | None = None
    max_us: float | None = None
    round_trips: int | None = None
    missing_replies: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Iperf:
    bit_s: float | None = None
    seconds: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Native:
    """The floors measured without any messaging system: iperf3's TCP stream and sockperf's ping-pong."""

    iperf3: Iperf | None = None
    sockperf: LatencyRow | None = None


@dataclass(frozen=True)
class FixedRateRow:
    """One system at the spec's fixed rate (OMB's method), per partition count; latencies in ms."""

    system: str
    size: int
    target_msg_s: float
    partitions: int | None = None
    publish_msg_s: float | None = None
    consume_msg_s: float | None = None
    sustained: bool | None = None
    lost: int | None = None
    error: str | None = None
    publish_p50_ms: float | None = None
    publish_p75_ms: float | None = None
    publish_p95_ms: float | None = None
    publish_p99_ms: float | None = None
    publish_p999_ms: float | None = field(default=None, metadata={"json": "publish_p99.9_ms"})
    publish_max_ms: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p75_ms: float | None = None
    e2e_p95_ms: float | None = None
    e2e_p99_ms: float | None = None
    e2e_p999_ms: float | None = field(default=None, metadata={"json": "e2e_p99.9_ms"})
    e2e_max_ms: float | None = None


@dataclass(frozen=True)
class PeriodicRow:
    """An IoT periodic flow at one rate: its end-to-end percentiles (ms)."""

    system: str
    rate: float
    size: int | None = None
    delivered_msg_s: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p90_ms: float | None = None
    e2e_p99_ms: float | None = None
    lost: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class SporadicRow:
    """A burst of large messages beside a periodic flow: the flow's per-second p90 before, during and after it."""

    system: str
    periodic_rate: float | None = None
    burst_size: int | None = None
    burst_msg_s: float | None = None
    burst_mb_s: float | None = None
    periodic_p90_before_ms: float | None = None
    periodic_p90_during_ms: float | None = None
    periodic_p90_after_ms: float | None = None
    periodic_lost: int | None = None
    burst_lost: int | None = None
    burst_window_s: tuple[float, ...] | None = None
    per_second_p90_ms: Mapping[str, float] | None = None
    error: str | None = None


@dataclass(frozen=True)
class ThroughputMethod:
    """How the back-to-back throughput was measured, as the spec ran it (compare.spec.Throughput's fields): repeats
    and seconds per run (None: a spec written without them), and the percentiles the samples were trimmed to."""

    repeats: int | None = None
    seconds: float | None = None
    trim: tuple[float, ...] = (1.0, 99.0)


@dataclass(frozen=True)
class Comparison:
    """comparison.json: the spec as run, the systems, and one table per method (empty when not run)."""

    name: str
    started: str
    spec: Mapping[str, Any]
    finished: str | None = None  # None: still running, or interrupted
    systems: tuple[System, ...] = ()
    throughput: tuple[ThroughputRow, ...] = ()
    pingpong: tuple[LatencyRow, ...] = ()
    native: Native = Native()
    fixed_rate: tuple[FixedRateRow, ...] = ()
    iot_periodic: tuple[PeriodicRow, ...] = ()
    iot_sporadic: tuple[SporadicRow, ...] = ()
    schema_version: int = SCHEMA_VERSION

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.systems]

    @property
    def throughput_method(self) -> ThroughputMethod:
        """The spec's throughput section, typed (the spec itself is kept whole, as it ran)."""
        section = self.spec.get("throughput")
        return from_json(ThroughputMethod, section, "spec.throughput") if section else ThroughputMethod()


def read_comparison(root: Path) -> Comparison:
    doc = files.read_json_object(root / COMPARISON)
    return from_json(Comparison, {**doc, "native": doc.get("native") or {}}, str(root / COMPARISON))


def write_round_trips(root: Path, system: str, rtt_us: Sequence[float]) -> None:
    d = root / system / "pingpong"
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "rtt_us.npy", np.asarray(rtt_us))


def run_dir(root: Path, system: str, method: str, *parts: str) -> Path:
    """Where one harness run of a comparison keeps its record."""
    return root.joinpath(system, method, *parts)
