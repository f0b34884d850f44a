"""The operating point's choice (sweeps.hold) on search steps whose p99 law is known: the fit recovers it, the rate
it picks keeps z spreads of margin, and a tail that does not grow with the rate, or a margin that reaches further
below the steps than they span, is refused, with its cause."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from advisor.verdict import operating_lines
from loadgen.knee import LOAD_SLOPE, fit_knee
from loadgen.tail import CAUSES
from records.result import Step
from records.summary import Summary
from sweeps.hold import pick, refused, tail_causes
from tests.helpers import trial_doc


def steps(
    law: dict[str, float], rates: list[float], seconds: int = 30, sigma: float = 0.0, seed: int = 1
) -> list[Step]:
    """Search steps at `rates` whose p99 is a·rate^b (ms) times exp(N(0, sigma)), as a record keeps them."""
    rng = random.Random(seed)
    out = []
    for r in rates:
        p = law["a"] * r ** law["b"] * math.exp(rng.gauss(0, sigma))
        out.append(
            Step(
                r,
                0,
                list(range(seconds)),
                p99_e2e_ms=p,
                held=p <= 100,
                why="" if p <= 100 else f"p99 end-to-end {p:.1f} ms > 100 ms",
            )
        )
    return out


def test_the_fit_recovers_a_known_law_and_its_spread() -> None:
    law = {"a": 100 / 10_000**2.2, "b": 2.2}  # 100 ms at 10,000 msg/s
    rates = [4000 + 500 * i for i in range(24)]
    knee = fit_knee(steps(law, rates, sigma=0.15, seed=3), long_s=15)
    assert knee is not None and knee.n == 24 and knee.n_spread == 24
    assert knee.b == pytest.approx(2.2, abs=0.3) and knee.sigma == pytest.approx(0.15, abs=0.05)
    assert knee.p99(10_000) == pytest.approx(100, rel=0.1)
    # the picked rate keeps z spreads: its predicted p99 is exp(z·σ) under the SLO, so below the knee
    r = knee.rate_for(100.0, 2.33)
    assert r is not None and knee.p99(r) == pytest.approx(100 * math.exp(-2.33 * knee.sigma), rel=1e-6)
    assert r < 10_000 and knee.rate_for(100.0, 0.0) == pytest.approx(10_000, rel=0.1)


def test_a_margin_far_below_the_measured_steps_is_refused_not_extrapolated() -> None:
    # a shallow law with a wide spread between runs: z spreads of margin put the rate further under the steps than
    # they span, where the fit says nothing; a steep law with a narrow spread keeps it near them
    law = {"a": 100 / 12_000**0.7, "b": 0.7}  # the shape of the misconfig scenario's written runs (README)
    rates = [10_000 + 500 * i for i in range(13)]
    pairs = [st for r in rates for st in steps(law, [r, r])]
    for i, st in enumerate(pairs):  # each rate measured twice, ×2 above and below the law: slope exact, spread 0.69
        st.p99_e2e_ms = (st.p99_e2e_ms or 0.0) * (2.0 if i % 2 else 0.5)
    wide = fit_knee(pairs, long_s=15)
    assert wide is not None and wide.b == pytest.approx(0.7) and wide.sigma == pytest.approx(math.log(2.0))
    low = wide.rate_for(100.0, 2.33)
    assert low is not None and low < wide.floor() < wide.low  # what an extrapolation would have checked
    first, why = pick(wide, [11_000.0, 12_000.0], 100.0, 2.33)
    assert first is None and f"{wide.low:,.0f} msg/s" in why and "than its steps span" in why
    steep = {"a": 100 / 12_000**3.0, "b": 3.0}
    narrow = fit_knee(steps(steep, rates, sigma=0.05, seed=4), long_s=15)
    assert narrow is not None
    first, why = pick(narrow, [11_000.0, 12_000.0], 100.0, 2.33)
    assert why == "" and first is not None and narrow.floor() <= first <= 11_000.0, (first, narrow)
    # a margin a little under the lowest step, within the span: still a prediction, and checked
    near = fit_knee(steps(steep, [11_500 + 250 * i for i in range(24)], sigma=0.1, seed=4), long_s=15)
    assert near is not None and (r := near.rate_for(100.0, 2.33)) is not None and near.floor() < r < near.low
    assert pick(near, [12_000.0], 100.0, 2.33) == (r, "")
    assert pick(narrow, [], 100.0, 2.33) == (None, "no repeat of the recommended configuration held a rate")


def test_the_spread_comes_from_the_long_steps() -> None:
    law = {"a": 100 / 10_000**2.0, "b": 2.0}
    long = steps(law, [8000, 9000, 9500, 10_000], seconds=30, sigma=0.1, seed=5)
    short = steps(law, [5000, 14_000], seconds=5, sigma=0.0)  # decided early: far from the knee
    short[0].p99_e2e_ms = 2.0 * (short[0].p99_e2e_ms or 0.0)  # a short step's p99 is mostly chance
    knee = fit_knee([*long, *short], long_s=15)
    assert knee is not None and knee.n == 6 and knee.n_spread == 4
    only_long = fit_knee(long, long_s=15)
    assert only_long is not None and knee.sigma < 2 * only_long.sigma + 0.05


def test_steps_not_judged_on_latency_are_left_out_and_too_few_points_fit_nothing() -> None:
    law = {"a": 100 / 10_000**2.0, "b": 2.0}
    pts = steps(law, [8000, 9000, 10_000, 12_000])
    pts[-1].why = "consumers fell behind (10 of 12,000 received)"  # its p99 says nothing about the rate
    pts[-1].held = False
    knee = fit_knee(pts, long_s=15)
    assert knee is not None and knee.n == 3 and knee.high == 10_000
    assert fit_knee(pts[:2], long_s=15) is None
    assert fit_knee(steps(law, [9000, 9000, 9000]), long_s=15) is None  # one rate: no slope


def test_a_tail_that_does_not_grow_with_the_rate_is_refused_with_its_cause(tmp_path: Path) -> None:
    flat = steps({"a": 150.0, "b": 0.0}, [3000, 4000, 5000, 6000], sigma=0.1)  # 150 ms at any rate
    knee = fit_knee(flat, long_s=15)
    assert knee is not None and knee.b < LOAD_SLOPE and knee.rate_for(100.0, 2.33) is None
    for tid, cpu, link in (("t1", 8, 1), ("t2", 6, 0)):  # each search: a step that missed, one that held
        d = tmp_path / "trials" / tid
        d.mkdir(parents=True)
        missed = {"seconds": 6, "above_slo": cpu + 1, "unexplained": 1, "primary": {"cpu": cpu}}
        held = {"seconds": 24, "above_slo": link, "unexplained": 0, "primary": {"link": link} if link else {}}
        tried = [
            {"rate_msg_s": rate, "held": rate == 5000, "tail": t, "start_s": 0, "judged_s": []}
            for rate, t in ((6000, missed), (5000, held))
        ]
        (d / "trial.json").write_text(json.dumps(trial_doc(measured={"sustainable": {"steps": tried}})))
    causes = tail_causes(tmp_path, ["t1", "t2", "t3"])  # t3 has no record: skipped
    assert (
        causes.above_slo_s == 17
        and causes.primary_s["cpu"] == 14
        and causes.primary_s["link"] == 1
        and causes.unexplained_s == 2
    )
    assert causes.cause == CAUSES["cpu"] and causes.cause_share == pytest.approx(14 / 17)
    assert causes.runs == 2 and causes.seconds == 60
    op = refused("the p99 does not grow with the rate", causes)
    assert not op.held and op.rate_msg_s is None
    (line,) = operating_lines(Summary("s", operating_point=op))
    assert line == (
        "operating point: none: no rate holds the SLO reliably: the p99 does not grow with the rate; "
        f"the searches' 17 s over the SLO: {CAUSES['cpu']} in 82% of them"
    )
