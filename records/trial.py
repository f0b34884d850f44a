"""One sweep trial: `trial.json` in `runs/<study>/trials/<stage>-<number>/`, beside the run's record.

It holds what the trial set (the whole configuration, and what each broker read back), what happened
(state, the reason of a failure, restarts, time spent per phase) and what it measured (window rates, the
objectives, constraint values). Written at the end of the trial, and also when Ctrl-C interrupts it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from core import files
from core.errors import UserError
from core.typed import from_json, to_json
from records.confirmation import Try
from records.result import FaultEvent, Step, Sustainable

SCHEMA_VERSION = 1
TRIAL = "trial.json"
# A sustainable-rate trial's search run (loadgen.search) is a run folder of its own inside the trial's: its name is
# the ramp's it replaced, so studies written before the search read the same way
SEARCH_RUN = "ramp"
# Written only when the trial got that far (a failed or interrupted trial has no measurement).
_OPTIONAL = (
    "baseline",
    "confirms",
    "repeat",
    "probe_msg_s",
    "hold_msg_s",
    "suggested",
    "carried",
    "broker_read_back",
    "restarts",
    "apply_s",
    "restart_warmup",
    "phases_s",
    "measured",
    "constraints",
    "disturbed",
    "jit_busy",
    "faults",
)


@dataclass(frozen=True)
class Measured:
    """What a trial measured, as trial.json keeps it under `measured` (sweeps.trial writes it): its objectives, the
    max-rate run's windows and losses, a search's answer, an operating-point run's figures. None: not measured."""

    throughput_mb_s: float | None = None
    sustainable_mb_s: float | None = None
    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    p999_e2e_ms: float | None = None
    windows_mb_s: tuple[float, ...] = ()
    mean_mb_s: float | None = None
    stdev_mb_s: float | None = None
    ceiling_mb_s: float | None = None
    fraction_of_ceiling: float | None = None
    lost: int | None = None
    duplicated: int | None = None
    client_bound: bool = False
    warnings: tuple[str, ...] = ()
    # the warm-up's consumed bytes per second and the window's first ones, each over the window's median second
    warmup_curve: tuple[float, ...] = ()
    sustainable: Sustainable | None = None  # a search's answer (loadgen.sustainable.Sustainable.record)
    hold: Try | None = None  # an operating-point run (sweeps.hold)


@dataclass(frozen=True)
class Phases:
    """Where a trial's time went, s, as trial.json keeps it under `phases_s` (sweeps.trial writes it, sweeps.timing
    adds it up): its runs' set-up and clean-up (loadgen.runner), its max-rate or operating-point run with that
    run's warm-up and windows, the record written, and a search's ramp run with its warm-up and judged seconds.
    A phase the trial did not reach is 0."""

    create_topics: float = 0.0
    after_produce_end: float = 0.0  # the drain after the producers' end
    stop_workers: float = 0.0
    delete_topics: float = 0.0
    run: float = 0.0
    warmup: float = 0.0
    windows: float = 0.0
    record: float = 0.0
    ramp: float = 0.0
    ramp_warmup: float = 0.0
    ramp_windows: float = 0.0


@dataclass(frozen=True)
class WarmShape:
    """One shape of a warm-up's load (loadgen.warmup): its producer settings, its rate (None: the maximum), how long
    it ran, the acknowledged msg/s, the brokers' JIT cores per broker at its end, whether it ended quiet (None: no
    metrics) and the seconds of load it was given (its share of what was left)."""

    producer: Mapping[str, Any]
    rate_msg_s: float | None
    s: float
    msg_s: float
    jit_cores: float | None
    quiet: bool | None
    cap_s: float | None = None  # None: read from a record written before shapes shared what was left


@dataclass(frozen=True)
class WarmUp:
    """A warm-up (loadgen.warmup.warm_up): how long it ran, the last shape's JIT cores, whether every shape ended
    quiet (None: no metrics), and each shape. A trial record keeps one after a rolling restart (`restart_warmup`)
    and one per attempt set aside while the JIT compiled; a partial one reads with what it has."""

    s: float = 0.0
    jit_cores: float | None = None
    quiet: bool | None = None
    shapes: tuple[WarmShape, ...] = ()


@dataclass(frozen=True)
class Aside:
    """An attempt set aside (trial.json `disturbed` or `jit_busy`): which attempt, the events that set it aside, its
    objective values and measurement, and `s`, the attempt and the wait or warm-up after it (None when the last
    attempt failed the trial). `stopped_at_s`: the second of its window its run stopped at (None: it ran out)."""

    attempt: int
    events: tuple[str, ...] = ()
    values: Mapping[str, float] = field(default_factory=dict)
    measured: Measured | None = None
    s: float | None = None
    warm_up: WarmUp | None = None  # the load until the compilers were quiet, after a JIT-busy attempt
    stopped_at_s: int | None = None


@dataclass(frozen=True)
class TrialMeta:
    """What a sweep's phase says of a trial it asks the engine to measure (sweeps.confirm.Phases.measure); the trial
    record keeps each field that is set (TrialRecord.begun). A search trial: what the sampler suggested and the best
    of earlier stages it carries; a baseline: its name; a confirmation, ablation or operating-point repeat: its key
    and block, and an operating-point run its one fixed rate."""

    baseline: str | None = None
    confirms: str | None = None  # `<configuration>@<repeat>` (sweeps.confirm)
    repeat: int | None = None
    hold_msg_s: float | None = None
    suggested: Mapping[str, Any] | None = None
    carried: Mapping[str, Any] | None = None

    @property
    def queued_again(self) -> bool:
        """Whether a search trial cut short is queued again with its parameters (a baseline or a repeat is found
        by its key instead)."""
        return self.baseline is None and self.confirms is None


# What every trial record has, from its start (the rest is written only when the trial got that far).
_REQUIRED = ("study", "stage", "number", "started_ns", "config", "applied", "state", "total_s")


@dataclass(frozen=True)
class TrialRecord:
    study: str
    stage: str
    number: int
    started_ns: int
    config: Mapping[str, int | str]
    applied: Mapping[str, Mapping[str, str]]  # producer / consumer / workload settings as passed on
    state: str  # "complete" | "failed" | "interrupted" ("running" only in memory, TrialRecord.begun)
    total_s: float
    fail_reason: str | None = None
    baseline: str | None = None  # a published baseline's name
    confirms: str | None = None  # a confirmation or ablation repeat: `<configuration>@<repeat>` (sweeps.confirm)
    repeat: int | None = None
    probe_msg_s: float | None = None  # the max rate (msg/s) a sustainable-rate search ran under
    hold_msg_s: float | None = None  # an operating-point run: the one fixed rate (msg/s) it ran at (sweeps.hold)
    # what the trial's figure is: sustainable_mb_s (a search under the SLO) or throughput_mb_s (max rate)
    objective: str = "throughput_mb_s"
    suggested: Mapping[str, Any] | None = None  # what the sampler chose
    carried: Mapping[str, Any] | None = None  # the best of earlier stages
    broker_read_back: Mapping[str, Mapping[str, str | None]] | None = None  # broker id -> key -> value
    restarts: int | None = None
    apply_s: float | None = None
    # the load after a rolling restart (loadgen.warmup): its seconds, the brokers' JIT cores at its end, whether
    # they were quiet (False: it reached restart_warmup_s first)
    restart_warmup: WarmUp | None = None
    phases_s: Mapping[str, float] | None = None
    measured: Mapping[str, Any] | None = None
    constraints: Mapping[str, Any] | None = None
    # attempts set aside because their window showed an event the trial did not plan (faults.disturbed):
    # [{attempt, events, values, measured, s}], the measurement above is a later attempt's; `s`: the attempt and
    # the wait for a whole cluster after it (absent when the last attempt failed the trial)
    disturbed: list[Mapping[str, Any]] | None = None
    # attempts set aside because the brokers' JIT still compiled in their window (sweeps.trial): the same fields,
    # `events` the JIT warning, and `warm_up` the load until the compilers were quiet (loadgen.warmup's answer);
    # `stopped_at_s`: the second of its window the run stopped at, certain to be set aside (its figures cover that
    # much; absent: it ran its windows out)
    jit_busy: list[Mapping[str, Any]] | None = None
    # a robustness study's planned faults in this trial's run (faults.inject's events: effect and recovery times)
    faults: tuple[FaultEvent, ...] | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = TRIAL) -> TrialRecord:
        """A trial.json document as any release up to this one wrote it; keys this release does not know are left
        out, so an older study reads with what it has."""
        if missing := [n for n in _REQUIRED if n not in d]:
            raise UserError(f"{where}: not a trial record, it lacks {', '.join(missing)}")
        return from_json(cls, d, where)

    @classmethod
    def begun(
        cls,
        study: str,
        which: tuple[str, int],
        objective: str,
        config: Mapping[str, int | str],
        applied: Mapping[str, Mapping[str, str]],
        meta: TrialMeta,
    ) -> TrialRecord:
        """The record of trial `which` (stage or phase, number) as it starts, with what its phase says of it: state
        "running" and total_s 0 until it ends (sweeps.trial)."""
        return cls(
            study=study,
            stage=which[0],
            number=which[1],
            started_ns=time.time_ns(),
            config=config,
            applied=applied,
            state="running",
            total_s=0.0,
            objective=objective,
            baseline=meta.baseline,
            confirms=meta.confirms,
            repeat=meta.repeat,
            hold_msg_s=meta.hold_msg_s,
            suggested=meta.suggested,
            carried=meta.carried,
        )

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    @property
    def figures(self) -> Measured:
        """`measured`, typed (empty when the trial got no measurement)."""
        return from_json(Measured, self.measured or {}, "measured")

    @property
    def phases(self) -> Phases:
        """`phases_s`, typed (every phase 0 when the trial recorded none)."""
        return from_json(Phases, self.phases_s or {}, "phases_s")

    @property
    def steps(self) -> list[Step]:
        """The search's steps in the order run; none without a search."""
        found = self.figures.sustainable
        return list(found.steps) if found else []

    @property
    def aside(self) -> list[Aside]:
        """The attempts set aside, typed: disturbed, or measured while the brokers' JIT compiled."""
        return [from_json(Aside, a, "set aside") for a in (*(self.disturbed or ()), *(self.jit_busy or ()))]

    def as_json(self) -> dict[str, Any]:
        order = [
            "schema_version",
            "study",
            "stage",
            "number",
            "started_ns",
            "objective",
            "baseline",
            "confirms",
            "repeat",
            "probe_msg_s",
            "hold_msg_s",
            "suggested",
            "carried",
            "config",
            "applied",
            "broker_read_back",
            "restarts",
            "apply_s",
            "restart_warmup",
            "phases_s",
            "measured",
            "constraints",
            "disturbed",
            "jit_busy",
            "faults",
            "state",
            "fail_reason",
            "total_s",
        ]
        assert set(order) == {f.name for f in fields(self)}
        return {k: to_json(getattr(self, k)) for k in order if not (k in _OPTIONAL and getattr(self, k) is None)}


def write_trial(trial_dir: Path, rec: TrialRecord) -> None:
    files.write_json(trial_dir / TRIAL, rec.as_json())


def read_trial(trial_dir: Path) -> TrialRecord | None:
    """The trial record of `trial_dir` (every schema version up to SCHEMA_VERSION; a newer one is refused), or None
    when there is none."""
    p = trial_dir / TRIAL
    return TrialRecord.from_json(files.read_record(p, SCHEMA_VERSION), str(p)) if p.exists() else None
