"""What a sweep's phases after the search established, as summary.json keeps it under `confirmation` (records.summary):
the confirmation's arms and comparisons (sweeps.confirm), the ablation's key effects, the written phase
(sweeps.written) and the operating point (sweeps.hold). Typed here so every reader (advisor.verdict, the report,
`plan --from`) reads attributes; the phases build their parts as JSON and `Confirmation.from_json` types them.

Every figure is MB/s received unless its name says otherwise; every interval is a core.stats.Interval at the level
its test used (Holm's), so "distinguishable" and the interval lying above 0 are the same statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.stats import Interval
from core.typed import from_json
from records.tail import TailTotal

Config = Mapping[str, int | str]  # a whole configuration: producer, consumer, broker and workload keys
DEFAULTS = "baseline:kafka-defaults"  # the label of Kafka's defaults among a confirmation's candidates and arms


@dataclass(frozen=True)
class Arm:
    """One configuration's repeats (sweeps.confirm.candidate): each an independent search, None where it failed."""

    label: str
    config: Config
    repeats: tuple[float | None, ...]
    trial_ids: tuple[str, ...] = ()
    rates_msg_s: tuple[float | None, ...] = ()
    interval: Interval | None = None
    mean_mb_s: float | None = None
    eligible: bool = False  # every repeat held its constraints
    why_not: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """The chosen configuration against another: `distinguishable` is the one-sided test at Holm's level `alpha`,
    `difference` (MB/s) and `ratio` are at the two-sided level whose lower bound is that test's."""

    difference: Interval
    distinguishable: bool
    alpha: float | None = None
    label: str | None = None  # the other arm (the written phase's comparisons name theirs by position)
    ratio: Interval | None = None
    # The other arm's runs where no rate held, each counted at its search's bound (sweeps.confirm.at_most): as high
    # as it could have scored, so the chosen one leads by at least the difference and ratio printed.
    at_bound: int = 0


@dataclass(frozen=True)
class Noise:
    """The between-run noise: the pooled sd of every eligible arm's repeats, with its degrees of freedom."""

    between_run_sd_mb_s: float | None
    df: int = 0
    how: str = ""


@dataclass(frozen=True)
class KeyEffect:
    """One changed key (`old` the defaults' value, None: unset): recommended − without it, from the ablation's runs;
    a key that could not be put back alone (`not_ablated`) has only `why`."""

    key: str
    old: str | None
    new: str
    why: str | None = ""
    n: int | None = None
    alpha: float | None = None
    trial_ids: tuple[str, ...] = ()
    effect_mb_s: float | None = None
    interval: Interval | None = None
    beyond_noise: bool = False


@dataclass(frozen=True)
class Written:
    """The configuration the recommended files hold, measured as written against the full one and the defaults."""

    arms: tuple[Arm, ...]
    headline: str  # the arm the headline's rate and interval are read from
    dropped: tuple[str, ...] = ()
    kept_as_group: tuple[str, ...] = ()
    why_kept: str | None = None
    full_vs_written: Comparison | None = None
    vs_defaults: Comparison | None = None
    # the phases whose runs the arms are: "written" (its own blocks), "ablate" (the ablation's: the same two arms),
    # "ablate+written" (the ablation's with more of each in the written phase's blocks: sweeps.written._topped_up)
    runs_from: str = "written"

    def arm(self) -> Arm | None:
        """The arm the headline reads (`headline`'s)."""
        return next((a for a in self.arms if a.label == self.headline), None)


@dataclass(frozen=True)
class Fit:
    """log p99 = a + b·log rate over `n` search steps between `low` and `high` msg/s; `sigma`: a long step's spread
    about it (log), from `n_spread` steps (loadgen.knee.Knee computes with it)."""

    a: float
    b: float
    sigma: float
    n: int
    n_spread: int
    low: float
    high: float


@dataclass(frozen=True)
class Try:
    """One run of the operating point at a fixed rate (the trial record's `measured.hold`)."""

    rate_msg_s: float | None
    held: bool
    why: str | None = None
    run_s: float | None = None
    warmup_s: float | None = None
    consume_msg_s: float | None = None
    consume_mb_s: float | None = None
    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    lost: int | None = None
    trial_id: str | None = None


@dataclass(frozen=True)
class OperatingPoint:
    """A rate the recommended configuration held its SLO at, in a run of its own (sweeps.hold); or, with
    `not_load_driven`, why no rate holds reliably and the causes the searches' tail budgets give (loadgen.tail)."""

    held: bool
    rate_msg_s: float | None = None
    mb_s: float | None = None
    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    run_s: int | None = None
    headroom: float = 1.0
    tries: tuple[Try, ...] = ()
    fit: Fit | None = None
    predicted_p99_e2e_ms: float | None = None
    not_load_driven: str | None = None
    causes: TailTotal | None = None  # the searches' tail budgets added up (loadgen.tail.combine)
    how: str = ""


@dataclass(frozen=True)
class Resolution:
    """The rate grid an older study's repeats shared (they shared one probe): its step as a share of the rate."""

    step: float | None = None


@dataclass(frozen=True)
class Confirmation:
    """The confirmation (the arms, the chosen one and its comparisons) with what the later phases added."""

    candidates: tuple[Arm, ...]
    chosen: str | None = None  # the label of the best eligible mean; None: nothing held in every run
    noise: Noise | None = None
    runner_up: Comparison | None = None
    vs_defaults: Comparison | None = None
    vs_current: Comparison | None = None
    written: Written | None = None
    recommended: tuple[KeyEffect, ...] = ()
    no_measurable_effect: tuple[KeyEffect, ...] = ()
    not_ablated: tuple[KeyEffect, ...] = ()
    operating_point: OperatingPoint | None = None
    # studies from before each repeat ran its own search: the rate grid's step the differences include
    resolution: Resolution | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Confirmation:
        return from_json(cls, d, "summary.json confirmation")

    def arm(self, label: str | None) -> Arm | None:
        """The candidate `label`; the chosen one when `label` is None."""
        want = self.chosen if label is None else label
        return next((c for c in self.candidates if c.label == want), None)

    def headline(self) -> Arm | None:
        """The arm a study's headline and diagnosis read: the configuration as written when the written phase
        measured it (sweeps.written), else the chosen candidate."""
        w = self.written
        return (w.arm() if w else None) or self.arm(None)
