"""One piece of advice: a rule's title, the settings it would change, the evidence (trial ids and figures) it
rests on, the gain it expects, and how much it matters; and how the advice of several rules is kept consistent."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Recommendation:
    rule: str
    title: str
    action: dict[str, str] = field(default_factory=dict)  # config key → recommended value ("" when advice only)
    evidence: list[str] = field(default_factory=list)
    trials: list[str] = field(default_factory=list)
    expected_gain_mb_s: float | None = None
    severity: str = "info"  # "high" | "medium" | "info"


SEVERITY_ORDER = {"high": 0, "medium": 1, "info": 2}


def without_causes(best: Recommendation, recs: list[Recommendation]) -> Recommendation:
    """`best` (apply the best measured configuration) without the settings another rule names as a cause, by
    changing them to something else: applying a configuration must never re-apply what is diagnosed as its limit."""
    fixes = {k: r for r in recs if r.rule != "best-config" for k in r.action}
    clash = sorted(k for k, v in best.action.items() if k in fixes and str(fixes[k].action[k]) != str(v))
    if not clash:
        return best
    said = "; ".join(f"{k}={best.action[k]} (the {fixes[k].rule} rule advises {fixes[k].action[k]})" for k in clash)
    left = {k: v for k, v in best.action.items() if k not in clash}
    title = f"Apply the best measured configuration's other {len(left)} key(s)" if left else "Nothing to apply"
    return replace(
        best,
        title=f"{title}: {', '.join(clash)} there is what a rule names as the limit",
        action=left,
        evidence=[*best.evidence, f"left out, named as a cause: {said}"],
        expected_gain_mb_s=best.expected_gain_mb_s if left else None,
        severity=best.severity if left else "info",
    )
