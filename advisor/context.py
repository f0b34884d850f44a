"""What the rules know of a study beyond its tables (advisor.rules): its cluster's shape and the sweep's own
judgement, one typed object instead of a dict each rule falls back on."""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.sustainable import Slo
from records.summary import Summary


@dataclass(frozen=True)
class Context:
    brokers: int = 3  # of the cluster the study ran on (records.study.Study.brokers)
    rf: int = 3
    study: str = ""
    sweep: Summary | None = None  # the sweep's summary.json; None for a bench run or a sweep not finished

    @property
    def slo(self) -> Slo:
        """The SLO the sweep searched under; the product's default for a study that names none."""
        return Slo.from_json(self.sweep.slo) if self.sweep and self.sweep.slo else Slo()

    @property
    def no_effect(self) -> set[str]:
        """The keys the sweep's ablations put back without a difference beyond noise."""
        return {e.key for e in self.sweep.no_measurable_effect} if self.sweep else set()

    @property
    def confirmed(self) -> bool:
        return bool(self.sweep and self.sweep.confirmation)
