"""Intervals for repeated measurements: a mean, a difference and a ratio of means, each with its 95 % CI.

Repeats here are few (3–5) and their spread is the run-to-run variation of a shared, noisy machine, so
the intervals use Student's t (Welch's for two groups) rather than a normal approximation. An interval
from one measurement does not exist: it is None, never a zero-width band.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); above 30 the normal's 1.96 is
# within 4 % of it.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)  # fmt: skip


def t95(df: float) -> float:
    """Student's t for a two-sided 95 % interval with `df` degrees of freedom (fractional df rounded down)."""
    if df < 1:
        raise ValueError("an interval needs at least one degree of freedom")
    d = int(df)
    return _T95[d - 1] if d <= len(_T95) else 1.96


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95 % confidence interval; `low`/`high` are None when it rests on one value."""

    estimate: float
    low: float | None
    high: float | None
    n: int  # measurements behind it (both groups' for a difference or ratio)
    sd: float | None = None  # the spread of the measurements (a mean's) or the standard error (others)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes(self, value: float) -> bool:
        """The interval lies wholly above or below `value` (a difference beyond noise excludes 0)."""
        return self.has_interval and (self.low > value or self.high < value)  # type: ignore[operator]

    def as_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n, "sd": self.sd}

    def text(self, spec: str = "{:.2f}", unit: str = "") -> str:
        """ "21.30 MB/s (95 % CI 20.10–22.50, n=3)", or "(one run, no interval)"."""
        u = f" {unit}" if unit else ""
        if not self.has_interval:
            return f"{spec.format(self.estimate)}{u} (n={self.n}, no interval)"
        return f"{spec.format(self.estimate)}{u} (95 % CI {spec.format(self.low)}–{spec.format(self.high)}, n={self.n})"


def mean_interval(xs: Sequence[float]) -> Interval:
    if not xs:
        raise ValueError("no measurements")
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return Interval(m, None, None, len(xs))
    sd = statistics.stdev(xs)
    half = t95(len(xs) - 1) * sd / math.sqrt(len(xs))
    return Interval(m, m - half, m + half, len(xs), sd)


def _welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float] | None:
    """(standard error of mean(a) − mean(b), Welch–Satterthwaite df), or None without spread to estimate."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 0.0, float(len(a) + len(b) - 2)
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return math.sqrt(se2), df


def difference(a: Sequence[float], b: Sequence[float]) -> Interval:
    """mean(a) − mean(b) with Welch's 95 % interval."""
    d = statistics.fmean(a) - statistics.fmean(b)
    w = _welch(a, b)
    if w is None:
        return Interval(d, None, None, len(a) + len(b))
    se, df = w
    half = t95(max(1.0, df)) * se
    return Interval(d, d - half, d + half, len(a) + len(b), se)


def quantized_difference(a: Sequence[float], b: Sequence[float], step: float) -> Interval:
    """mean(a) − mean(b) for values read off a grid of rates `step` apart (relative: 0.12 is 12 %): each one
    says the true value lies in [v, v·(1 + step)), so Welch's interval is widened by one step of b below and
    one step of a above. Repeats that land on one grid point have no spread, and their interval alone would
    call a difference smaller than a step (one grid point apart) an effect."""
    d = difference(a, b)
    if not d.has_interval or step <= 0:
        return d
    below, above = step * statistics.fmean(b), step * statistics.fmean(a)
    return Interval(d.estimate, d.low - below, d.high + above, d.n, d.sd)  # type: ignore[operator]


def ratio(a: Sequence[float], b: Sequence[float]) -> Interval | None:
    """mean(a) / mean(b) with a 95 % interval (delta method on the log ratio); None when mean(b) is not > 0."""
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    if mb <= 0 or ma <= 0:
        return None
    r = ma / mb
    if len(a) < 2 or len(b) < 2:
        return Interval(r, None, None, len(a) + len(b))
    va, vb = statistics.variance(a) / len(a) / ma**2, statistics.variance(b) / len(b) / mb**2
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else len(a) + len(b) - 2
    k = math.exp(t95(max(1.0, df)) * se)
    return Interval(r, r / k, r * k, len(a) + len(b), se)


def pooled_sd(groups: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """The run-to-run standard deviation pooled over groups of repeats of one configuration each, and its df."""
    ss, df = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            ss += statistics.variance(g) * (len(g) - 1)
            df += len(g) - 1
    return (math.sqrt(ss / df), df) if df else None
