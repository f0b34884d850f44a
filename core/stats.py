"""Intervals for repeated measurements: a mean, a difference and a ratio of means (and a ratio of two such ratios,
measured in two studies, and one ratio pooled over several independent runs), each with its CI (95 % unless a
correction for many comparisons asks for more), and Holm's step-down correction across a family of them.

Repeats here are few (3–5) and their spread is the run-to-run variation of a shared, noisy machine, so
the intervals use Student's t (Welch's for two groups) rather than a normal approximation. An interval
from one measurement does not exist: it is None, never a zero-width band.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); above 30 the normal's 1.96 is
# within 4 % of it.
_T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t95(df: float) -> float:
    """Student's t for a two-sided 95 % interval with `df` degrees of freedom (fractional df rounded down)."""
    if df < 1:
        raise ValueError("an interval needs at least one degree of freedom")
    d = int(df)
    return _T95[d - 1] if d <= len(_T95) else 1.96


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-12:
            break
    return h


def _ibeta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (the one-sided p-value of t)."""
    tail = 0.5 * _ibeta(df / 2, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1 - tail


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for chi-squared with `df` degrees of freedom: the upper regularized incomplete gamma Q(df/2, x/2),
    by its series below a + 1 and its continued fraction (modified Lentz) above."""
    a, z = df / 2, x / 2
    if z <= 0:
        return 1.0
    front = math.exp(-z + a * math.log(z) - math.lgamma(a))
    if z < a + 1:
        term = total = 1 / a
        for n in range(1, 1000):
            term *= z / (a + n)
            total += term
            if term < total * 1e-15:
                break
        return max(0.0, 1 - front * total)
    tiny, b = 1e-300, z + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return front * h


def t_quantile(p: float, df: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (bisection on t_sf; p in (0, 1))."""
    if not 0 < p < 1:
        raise ValueError("a quantile's probability lies strictly between 0 and 1")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > 1 - p:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > 1 - p else (lo, mid)
    return (lo + hi) / 2


def t_two_sided(level: float, df: float) -> float:
    """Student's t for a two-sided interval at `level` with `df` degrees of freedom, fractional df kept (Welch's):
    the same t p_greater's test uses, so an interval whose lower bound is a one-sided test's excludes 0 exactly when
    that test rejects. The table (t95) only where it is that value: 0.95 at a whole df it lists."""
    if df < 1:
        raise ValueError("an interval needs at least one degree of freedom")
    if level == 0.95 and df == int(df) and df <= len(_T95):
        return t95(df)
    return t_quantile(1 - (1 - level) / 2, df)


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95 % confidence interval; `low`/`high` are None when it rests on one value."""

    estimate: float
    low: float | None
    high: float | None
    n: int  # measurements behind it (both groups' for a difference or ratio)
    sd: float | None = None  # the spread of the measurements (a mean's) or the standard error (others)
    level: float = 0.95  # two-sided confidence of [low, high] (higher when corrected for many comparisons)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes(self, value: float) -> bool:
        """The interval lies wholly above or below `value` (a difference beyond noise excludes 0)."""
        return self.has_interval and (self.low > value or self.high < value)  # type: ignore[operator]

    def text(self, spec: str = "{:.2f}", unit: str = "") -> str:
        """ "21.30 MB/s (95 % CI 20.10–22.50, n=3)", or "(one run, no interval)"."""
        u = f" {unit}" if unit else ""
        if not self.has_interval:
            return f"{spec.format(self.estimate)}{u} (n={self.n}, no interval)"
        lv = f"{self.level * 100:.3g} %"
        return f"{spec.format(self.estimate)}{u} ({lv} CI {spec.format(self.low)}–{spec.format(self.high)}, n={self.n})"


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


def difference(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Interval:
    """mean(a) − mean(b) with Welch's interval at `level`."""
    d = statistics.fmean(a) - statistics.fmean(b)
    w = _welch(a, b)
    if w is None:
        return Interval(d, None, None, len(a) + len(b), level=level)
    se, df = w
    half = t_two_sided(level, max(1.0, df)) * se
    return Interval(d, d - half, d + half, len(a) + len(b), se, level)


def p_greater(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Welch's one-sided p-value that mean(a) > mean(b) by chance alone; None without spread to judge it."""
    w = _welch(a, b)
    if w is None:
        return None
    se, df = w
    d = statistics.fmean(a) - statistics.fmean(b)
    if se == 0:
        return 0.0 if d > 0 else 1.0
    return t_sf(d / se, max(1.0, df))


def holm(pvalues: Sequence[float | None], alpha: float = 0.05) -> list[tuple[bool, float]]:
    """Holm's step-down procedure over a family of one-sided tests: per test, whether it is rejected (an effect, with
    the family-wise error held at `alpha`) and the one-sided level it was tested at (alpha / the tests left when its
    turn came; after the first test that stands, the rest stand at that level). A test without a p-value stands."""
    order = sorted((i for i, p in enumerate(pvalues) if p is not None), key=lambda i: pvalues[i])  # type: ignore[arg-type,return-value]
    m = len(order)
    out: list[tuple[bool, float]] = [(False, alpha / max(1, m))] * len(pvalues)
    stopped = False
    for rank, i in enumerate(order):
        a = alpha / (m - rank)
        if stopped:
            out[i] = (False, out[order[rank - 1]][1])
            continue
        rejected = pvalues[i] <= a  # type: ignore[operator]
        out[i] = (rejected, a)
        stopped = not rejected
    return out


def ratio(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Interval | None:
    """mean(a) / mean(b) with an interval at `level` (delta method on the log ratio); None when a mean is not > 0."""
    return _log_ratio([(a, 1), (b, -1)], level)


def ratio_of_ratios(
    a1: Sequence[float], b1: Sequence[float], a2: Sequence[float], b2: Sequence[float], level: float = 0.95
) -> Interval | None:
    """(mean(a1) / mean(b1)) / (mean(a2) / mean(b2)) with an interval at `level`: whether a ratio measured in one
    study is the one measured in another (1 inside the interval: the same within noise). Two studies hours apart see
    the machine drift; each ratio to a reference measured in its own study's blocks cancels that drift."""
    return _log_ratio([(a1, 1), (b1, -1), (a2, -1), (b2, 1)], level)


def _log_ratio(groups: Sequence[tuple[Sequence[float], int]], level: float) -> Interval | None:
    """The product of the groups' means, each raised to its sign (±1), with Welch's interval on its log (the delta
    method: each group adds var/n/mean² to the log's variance; Welch–Satterthwaite degrees of freedom)."""
    means = [statistics.fmean(g) for g, _ in groups]
    if min(means) <= 0:
        return None
    r = math.prod(m**sign for m, (_, sign) in zip(means, groups, strict=True))
    n = sum(len(g) for g, _ in groups)
    if min(len(g) for g, _ in groups) < 2:
        return Interval(r, None, None, n, level=level)
    parts = [(statistics.variance(g) / len(g) / m**2, len(g) - 1) for (g, _), m in zip(groups, means, strict=True)]
    var = sum(v for v, _ in parts)
    df = var**2 / sum(v**2 / d for v, d in parts) if var > 0 else n - len(groups)
    k = math.exp(t_two_sided(level, max(1.0, df)) * math.sqrt(var))
    return Interval(r, r / k, r * k, n, math.sqrt(var), level)


def pooled_sd(groups: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """The run-to-run standard deviation pooled over groups of repeats of one configuration each, and its df."""
    ss, df = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            ss += statistics.variance(g) * (len(g) - 1)
            df += len(g) - 1
    return (math.sqrt(ss / df), df) if df else None


@dataclass(frozen=True)
class AcrossRuns:
    """A ratio pooled over independent runs, with the spread between the runs beside the noise within each."""

    interval: Interval  # the pooled ratio and its interval; n is the number of runs
    between_sd: float  # the sd of the runs' true log ratios (0 when they agree within their own noise)
    within_se: float  # the median of the runs' own standard errors of the log ratio
    agree_p: float  # Cochran's Q test: the chance of a spread between the runs this large from their own noise alone


def across_runs(runs: Sequence[tuple[float, float]], level: float = 0.95) -> AcrossRuns | None:
    """Ratios measured in independent runs (each its estimate and the standard error of its log, as ratio() gives
    them) pooled under a random-effects model: DerSimonian–Laird's between-run variance, and Hartung and Knapp's
    interval on (runs − 1) df with its variance factor kept at least 1. One run's interval covers the noise within
    it only; a machine whose speed moves by day moves a ratio between runs too, and this interval carries that.
    None for fewer than two runs, a ratio not > 0 or a run without a standard error."""
    if len(runs) < 2 or any(r <= 0 or se is None or se <= 0 for r, se in runs):
        return None
    y = [math.log(r) for r, _ in runs]
    v = [se * se for _, se in runs]
    k, w = len(runs), [1 / x for x in v]
    fixed = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / sum(w)
    q = sum(wi * (yi - fixed) ** 2 for wi, yi in zip(w, y, strict=True))
    tau2 = max(0.0, (q - (k - 1)) / (sum(w) - sum(wi * wi for wi in w) / sum(w)))
    ws = [1 / (x + tau2) for x in v]
    mu = sum(wi * yi for wi, yi in zip(ws, y, strict=True)) / sum(ws)
    factor = max(1.0, sum(wi * (yi - mu) ** 2 for wi, yi in zip(ws, y, strict=True)) / (k - 1))
    half = t_two_sided(level, k - 1) * math.sqrt(factor / sum(ws))
    est = math.exp(mu)
    iv = Interval(est, est * math.exp(-half), est * math.exp(half), k, math.sqrt(factor / sum(ws)), level)
    return AcrossRuns(iv, math.sqrt(tau2), statistics.median(se for _, se in runs), chi2_sf(q, k - 1))
