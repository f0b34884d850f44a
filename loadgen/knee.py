"""p99 against rate: the fit of a search's steps, log p99 = a + b·log rate, and whether the tail is load at all.

A queue near its limit makes the p99 grow far faster than the rate; a tail that is not load (a pause, a stall of
the machine) does not grow with the rate, and stepping the rate down cannot find one that holds. The fit is how the
search (loadgen.search, when no rate held twice) and the operating point (sweeps.hold) tell the two apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from records.confirmation import Fit
from records.result import Step

# Below this slope of log p99 on log rate the tail is not load: it grows slower than the square root of the rate (a
# queue near its limit grows far faster).
LOAD_SLOPE = 0.5


@dataclass(frozen=True)
class Knee(Fit):
    """The fit as summary.json keeps it (records.confirmation.Fit), and what is computed with it."""

    def p99(self, rate: float) -> float:
        return math.exp(self.a + self.b * math.log(rate))

    def rate_for(self, p99_ms: float, z: float) -> float | None:
        """The highest rate whose p99 is within `p99_ms` `z` spreads above the fit; None when the p99 does not grow
        with the rate (b < LOAD_SLOPE)."""
        if self.b < LOAD_SLOPE:
            return None
        return math.exp((math.log(p99_ms) - self.a - z * self.sigma) / self.b)

    def floor(self) -> float:
        """The lowest rate the fit predicts at: as far below its lowest step as its steps span (`high` / `low`), a
        law measured over a range being carried no further than that range's own width."""
        return self.low * self.low / self.high

    def below_range(self, rate: float) -> str | None:
        """Why `rate` is no prediction, in words, when it lies under `floor` (a shallow law with a wide spread pushes
        a margin's rate far under the steps); else None."""
        if rate >= self.floor():
            return None
        return (
            f"the fit's margin puts the rate at {rate:,.0f} msg/s, further below the lowest step it was made from "
            f"({self.low:,.0f} msg/s) than its steps span (to {self.high:,.0f}; p99 ∝ rate^{self.b:.2f}, "
            f"between-run spread ×{math.exp(self.sigma):.2f}): no measured rate is predicted to hold run after run"
        )

    def not_load(self) -> str | None:
        """Why the tail is not load, in words, when the p99 does not grow with the rate (b < LOAD_SLOPE); else None."""
        if self.b >= LOAD_SLOPE:
            return None
        return (
            f"the p99 does not grow with the rate (slope {self.b:.2f} of log p99 on log rate over {self.n} steps, "
            f"{self.low:,.0f}-{self.high:,.0f} msg/s): the tail is not load"
        )


def _points(steps: Sequence[Step]) -> list[tuple[float, float, int]]:
    """(rate, p99 e2e, judged seconds) of the steps judged on their latency (not on keeping the schedule up)."""
    out = []
    for st in steps:
        p = st.p99_e2e_ms
        if p and p > 0 and st.rate_msg_s and (st.held or st.why.startswith("p99")):
            out.append((float(st.rate_msg_s), float(p), len(st.judged_s) or 1))
    return out


def fit_knee(steps: Sequence[Step], long_s: int) -> Knee | None:
    """The fit of `steps` (several searches' together); None with fewer than 3
    points or a single rate. The spread comes from steps of at least `long_s` judged seconds (all, if fewer than 2)."""
    pts = _points(steps)
    if len(pts) < 3 or len({r for r, _, _ in pts}) < 2:
        return None
    xs, ys, ws = ([math.log(r) for r, _, _ in pts], [math.log(p) for _, p, _ in pts], [float(w) for *_, w in pts])
    sw = sum(ws)
    mx, my = sum(w * x for w, x in zip(ws, xs, strict=True)) / sw, sum(w * y for w, y in zip(ws, ys, strict=True)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(ws, xs, strict=True))
    b = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys, strict=True)) / sxx
    a = my - b * mx
    res = [(w, y - a - b * x) for w, x, y in zip(ws, xs, ys, strict=True)]
    long = [(w, r) for (w, r), (_, _, n) in zip(res, pts, strict=True) if n >= long_s]
    spread = long if len(long) >= 2 else res
    sigma = math.sqrt(sum(w * r * r for w, r in spread) / sum(w for w, _ in spread))
    rates = [r for r, _, _ in pts]
    return Knee(a, b, sigma, len(pts), len(spread), min(rates), max(rates))
