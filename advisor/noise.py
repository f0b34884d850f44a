"""The spread between the windows of one run, and the effect of each swept parameter, computed once for the
advice and the report.

Noise of a stage: the median, over its complete trials, of the spread of each trial's measurement windows
(window_cv × MB/s). An effect of a parameter within a stage: the difference between its best and worst
value's mean MB/s (params.parquet); it is within noise when smaller than twice the stage's noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from advisor.trials import complete
from records.analysis import ParamValue, param_values


def stage_noise(trials: pd.DataFrame) -> dict[str, float]:
    """Stage -> the typical spread between the windows of one trial, in MB/s (stages without it are left out).
    Not run-to-run noise, which is larger: that comes from repeats (sweeps.confirm)."""
    done = complete(trials)
    if done.empty:
        return {}
    done = done[done["window_cv"].notna()]
    spread = (done["window_cv"] * done["mb_s"]).groupby(done["stage"]).median()
    return {str(k): float(v) for k, v in spread.items()}


@dataclass(frozen=True)
class Effect:
    """One swept parameter in one stage: its values best and worst by mean MB/s, and whether the difference
    is beyond the stage's run-to-run noise."""

    stage: str
    param: str
    rows: list[ParamValue]  # the params.parquet rows of this parameter, in value order
    best: ParamValue
    worst: ParamValue
    noise: float | None  # MB/s; None when the stage's trials have no window spread

    @property
    def delta(self) -> float:
        return float(self.best.mean_mb_s - self.worst.mean_mb_s)

    @property
    def within_noise(self) -> bool:
        return self.noise is not None and self.delta < 2 * self.noise

    @property
    def at_edge(self) -> bool:
        """The best value is the highest tested (of more than two): the range may be too narrow."""
        return self.best is self.rows[-1] and self.best.value_num is not None and len(self.rows) > 2


def effects(trials: pd.DataFrame, params: pd.DataFrame) -> list[Effect]:
    """Every (stage, parameter) of the params table, in that order."""
    noise = stage_noise(trials)
    if params.empty:
        return []
    out = []
    ordered = params.assign(_num=params["value_num"].fillna(0)).sort_values(["stage", "param", "_num", "value"])
    for (stage, param), g in ordered.groupby(["stage", "param"], sort=True):
        rs = param_values(g.drop(columns="_num"))
        best = rs[int(g["mean_mb_s"].to_numpy().argmax())]
        worst = rs[int(g["mean_mb_s"].to_numpy().argmin())]
        out.append(Effect(str(stage), str(param), rs, best, worst, noise.get(str(stage))))
    return out
