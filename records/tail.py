"""A tail budget as kafkatune keeps it (loadgen.tail computes it): in result.json's `summary.tail`, in brief in each
search step of a trial record, and added up in the operating point of a confirmation.

Causes are named by their keys (loadgen.tail.CAUSES says each in words). A field an older record lacks takes its
default: a neighbour's process names were written only when there were some.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.typed import from_json


@dataclass(frozen=True)
class Cause:
    """One cause over a run's above-SLO seconds: in how many it was present, in how many it was the first
    explanation (`primary`), and how often it was present in the seconds that held (`base_rate`)."""

    cause: str
    what: str
    observed: bool  # False: this run had no way to see it (e.g. no JIT counters from a cluster not the testbed's)
    seconds: int
    primary: int
    share: float  # primary / above-SLO seconds
    base_rate: float | None  # None: no second held
    processes: tuple[str, ...] = ()  # a neighbour's busiest other processes, "name[pid]", most often first


@dataclass(frozen=True)
class Unexplained:
    seconds: int
    share: float


@dataclass(frozen=True)
class Where:
    """Medians over the above-SLO seconds (ms): the producers' queue p99, request round-trip p99 and end-to-end p99."""

    queue_p99_ms: float | None = None
    rtt_p99_ms: float | None = None
    e2e_p99_ms: float | None = None


@dataclass(frozen=True)
class SecondCause:
    """One second over the SLO: its p99, the causes present and the first explanation (None: unexplained)."""

    second: int
    p99_e2e_ms: float
    causes: tuple[str, ...]
    primary: str | None


@dataclass(frozen=True)
class TailBudget:
    """A run's seconds over a p99 end-to-end SLO and what each met."""

    slo_p99_e2e_ms: float
    seconds: int  # judged: those with an end-to-end sample
    above_slo: int
    causes: tuple[Cause, ...]
    unexplained: Unexplained
    not_observed: tuple[str, ...]
    where: Where
    per_second: tuple[SecondCause, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], where: str = "tail budget") -> TailBudget:
        return from_json(cls, doc, where)

    def brief(self) -> TailBrief:
        """In brief, for one search step: its seconds, those over the SLO, their primary causes and the other
        processes that took the CPUs in them."""
        return TailBrief(
            seconds=self.seconds,
            above_slo=self.above_slo,
            unexplained=self.unexplained.seconds,
            primary={c.cause: c.primary for c in self.causes if c.primary},
            processes=tuple(p for c in self.causes for p in c.processes),
        )


@dataclass(frozen=True)
class TailBrief:
    """A budget in brief (a search step's `tail`): primary seconds by cause key."""

    seconds: int
    above_slo: int
    unexplained: int
    primary: Mapping[str, int] = field(default_factory=dict)
    processes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TailTotal:
    """Several budgets in brief added up (loadgen.tail.combine): the cause with most primary seconds said in words
    (None when none was named), and its share of the seconds over the SLO."""

    runs: int
    seconds: int
    above_slo_s: int
    primary_s: Mapping[str, int]
    unexplained_s: int
    cause: str | None = None
    cause_share: float | None = None
