"""Run-to-run noise and the effect of each swept parameter, computed once for the advice and the report.

Noise of a stage: the median, over its complete trials, of the spread of each trial's measurement windows
(window_cv × MB/s). An effect of a parameter within a stage: the difference between its best and worst
value's mean MB/s (params.parquet); it is within noise when smaller than twice the stage's noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor.trials import complete


def stage_noise(trials: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Stage -> the typical spread of one trial's windows, in MB/s (stages without it are left out)."""
    spreads: dict[str, list[float]] = {}
    for t in complete(trials):
        if t.get("window_cv") is not None:
            spreads.setdefault(t["stage"], []).append(t["window_cv"] * t["mb_s"])
    return {k: statistics.median(v) for k, v in spreads.items()}


@dataclass(frozen=True)
class Effect:
    """One swept parameter in one stage: its values best and worst by mean MB/s, and whether the difference
    is beyond the stage's run-to-run noise."""

    stage: str
    param: str
    rows: list[dict[str, Any]]  # the params.parquet rows of this parameter, in value order
    best: dict[str, Any]
    worst: dict[str, Any]
    noise: float | None  # MB/s; None when the stage's trials have no window spread

    @property
    def delta(self) -> float:
        return float(self.best["mean_mb_s"] - self.worst["mean_mb_s"])

    @property
    def within_noise(self) -> bool:
        return self.noise is not None and self.delta < 2 * self.noise

    @property
    def at_edge(self) -> bool:
        """The best value is the highest tested (of more than two): the range may be too narrow."""
        return self.best is self.rows[-1] and self.best["value_num"] is not None and len(self.rows) > 2


def effects(trials: list[dict[str, Any]], params: list[dict[str, Any]]) -> list[Effect]:
    """Every (stage, parameter) of the params table, in that order."""
    noise = stage_noise(trials)
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in params:
        by.setdefault((p["stage"], p["param"]), []).append(p)
    out = []
    for (stage, param), rows in sorted(by.items()):
        rows = sorted(rows, key=lambda r: (r["value_num"] if r["value_num"] is not None else 0, r["value"]))
        best = max(rows, key=lambda r: r["mean_mb_s"])
        worst = min(rows, key=lambda r: r["mean_mb_s"])
        out.append(Effect(stage, param, rows, best, worst, noise.get(stage)))
    return out
