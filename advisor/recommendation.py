"""One piece of advice: a rule's title, the settings it would change, the evidence (trial ids and figures) it
rests on, the gain it expects, and how much it matters."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Recommendation:
    rule: str
    title: str
    action: dict[str, str] = field(default_factory=dict)  # config key → recommended value ("" when advice only)
    evidence: list[str] = field(default_factory=list)
    trials: list[str] = field(default_factory=list)
    expected_gain_mb_s: float | None = None
    severity: str = "info"  # "high" | "medium" | "info"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


SEVERITY_ORDER = {"high": 0, "medium": 1, "info": 2}
