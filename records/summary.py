"""A sweep's summary, `runs/<study>/summary.json`: baselines, the best of each stage, the confirmed best,
its share of the ceiling and ratio to Kafka's defaults, and the time spent. Written by sweeps.engine at the
end of a sweep (and again by every resumed one); read as the typed `Summary`, by every release's schema up to
this one (keys a release no longer writes are left out, and a field an older one did not write is None)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import files
from core.stats import Interval
from core.typed import from_json, to_json
from records.confirmation import Config, Confirmation, KeyEffect, Noise, OperatingPoint

SCHEMA_VERSION = 1
SUMMARY = "summary.json"


@dataclass(frozen=True)
class Baseline:
    """A published baseline (or `current`) measured once before the search."""

    mb_s: float | None
    config: Config
    windows_mb_s: tuple[float, ...] | None = None
    record: str | None = None  # its trial folder


@dataclass(frozen=True)
class Best:
    """A configuration the summary names best: the confirmation's (mean and interval of its repeats), the written
    phase's, or a stage's best trial (one run: `number`, `values`, `params`)."""

    mb_s: float | None
    config: Config | None = None
    source: str = field(default="", metadata={"json": "from"})  # where it comes from, in words
    label: str | None = None
    interval: Interval | None = None
    trial_ids: tuple[str, ...] = ()
    number: int | None = None
    values: Sequence[float] | Mapping[str, float] = ()  # one per objective (a mapping in studies before 2026-11)
    params: Mapping[str, int | str | float] | None = None
    record: str | None = None


@dataclass(frozen=True)
class StageBest:
    """One search stage: its trials, its best, and what it carried forward to the next stage."""

    name: str
    trials: int = 0
    failed: int = 0
    best: Best | None = None
    carried_forward: Config | None = None
    pareto: tuple[Best, ...] | None = None  # multi-objective studies: the Pareto front's trials


@dataclass(frozen=True)
class Breakdown:
    """Where an invocation's wall clock went (sweeps.timing.breakdown): seconds per part of sweeps.timing.PARTS over
    `trials` trials, and the share of the wall clock not spent in measurement windows (warm-ups counted or not)."""

    seconds: Mapping[str, float]
    trials: int
    wall_s: float
    not_measuring: float | None = None
    not_measuring_warmups_counted: float | None = None


@dataclass(frozen=True)
class CurveSecond:
    """One second of the runs' warm-up curves: the median, range and count of its ratio to the window's median."""

    second: int
    median: float
    min: float
    max: float
    n: int


@dataclass(frozen=True)
class WarmupCheck:
    """Whether the runs' warm-up was long enough (sweeps.timing.warmup_check): the curve per second, the first second
    from which it stayed at `level` (None: never), and the verdict in words."""

    warmup_s: float
    trials: int
    level: float
    level_from: int | None
    seconds: tuple[CurveSecond, ...]
    verdict: str


@dataclass(frozen=True)
class Invocation:
    """What this invocation of the sweep did and where its time went (sweeps.timing)."""

    trials: int
    wall_s: float
    measured_s: float | None = None
    overhead_fraction: float | None = None
    breakdown: Breakdown | None = None
    warmup_check: WarmupCheck | None = None


@dataclass(frozen=True)
class Summary:
    study: str
    objective: str = "throughput_mb_s"
    objectives: tuple[str, ...] = ("throughput_mb_s",)
    plan: str | None = None
    slo: Mapping[str, float | None] | None = None  # loadgen.sustainable.Slo.to_json; None: max-rate objective
    search: Mapping[str, Any] | None = None  # loadgen.sustainable.Search, as the spec set it
    ceiling_mb_s: float | None = None
    baselines: Mapping[str, Baseline] = field(default_factory=dict)
    stages: tuple[StageBest, ...] = ()
    confirmation: Confirmation | None = None
    recommended: tuple[KeyEffect, ...] = ()
    no_measurable_effect: tuple[KeyEffect, ...] = ()
    noise: Noise | None = None
    operating_point: OperatingPoint | None = None
    defaults_mb_s: float | None = None
    best: Best | None = None
    best_fraction_of_ceiling: float | None = None
    best_vs_defaults: Interval | None = None
    trials_to_95pct_of_best: int | None = None
    restarts: int = 0
    this_invocation: Invocation | None = None
    synthetic: bool = False  # generated (records.synthetic), not measured
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = SUMMARY) -> Summary:
        vs = d.get("best_vs_defaults")
        if isinstance(vs, int | float):  # studies before intervals: the ratio of two single runs
            d = {**d, "best_vs_defaults": {"estimate": vs, "low": None, "high": None, "n": 2}}
        return from_json(cls, d, where)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = to_json(self)
        return {"schema_version": out.pop("schema_version"), **out}


def write_summary(root: Path, summary: Summary) -> None:
    files.write_json(root / SUMMARY, summary.to_json())


def read_summary(root: Path) -> Summary | None:
    """The summary (every schema version up to SCHEMA_VERSION; a newer one is refused), or None when the sweep has
    not finished yet."""
    p = root / SUMMARY
    return Summary.from_json(files.read_record(p, SCHEMA_VERSION), str(p)) if p.exists() else None
