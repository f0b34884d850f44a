"""core.stats: the ratio of two studies' ratios, which says whether a ratio measured in one study reproduces in
another while the machine drifts between them."""

from __future__ import annotations

import pytest

from core import stats


def test_a_ratio_that_reproduces_under_drift_has_one_inside_its_interval() -> None:
    cfg, dflt = [12.8, 13.3, 12.1], [3.9, 4.1, 3.7]
    slower = 0.72  # the whole machine slower in the second study: both arms drop alike
    rr = stats.ratio_of_ratios(cfg, dflt, [x * slower for x in cfg], [x * slower for x in dflt])
    assert rr is not None and rr.estimate == pytest.approx(1.0)
    assert rr.low is not None and rr.high is not None and rr.low < 1 < rr.high
    first, second = stats.ratio(cfg, dflt), stats.ratio([x * slower for x in cfg], [x * slower for x in dflt])
    assert first is not None and first.low is not None and rr.high / rr.low > first.high / first.low  # type: ignore[operator]
    assert second is not None and rr.n == first.n + second.n


def test_a_ratio_that_halved_in_the_second_study_is_told_apart() -> None:
    rr = stats.ratio_of_ratios([12.8, 13.3, 12.1], [3.9, 4.1, 3.7], [6.4, 6.6, 6.1], [3.9, 4.0, 3.8])
    assert rr is not None and rr.estimate == pytest.approx((12.7333 / 3.9) / (6.3667 / 3.9), rel=1e-3)
    assert rr.excludes(1.0) and rr.low > 1.5  # type: ignore[operator]


def test_a_ratio_of_ratios_without_spread_or_with_nothing_measured_has_no_interval() -> None:
    one = stats.ratio_of_ratios([12.0], [4.0, 4.2], [9.0, 9.5], [3.0, 3.1])
    assert one is not None and not one.has_interval and one.n == 7
    assert stats.ratio_of_ratios([12.0, 13.0], [0.0, 0.0], [9.0, 9.5], [3.0, 3.1]) is None  # no ratio to nothing


def test_a_one_sided_test_and_the_interval_printed_for_it_agree_at_a_fractional_df() -> None:
    """The lan study of tuning_lan_20261202b.json: batch.size's ablation, 2 runs a side (Welch df 1.85), tested first
    of two keys (Holm: one-sided at 0.025, its interval at 95 %). With the table's t for df rounded down the interval
    reached below 0 (−3.70) while the test rejected: a key called beyond noise beside an interval that includes 0."""
    ref, without = [16.002048, 15.106816], [9.132032, 10.333568]
    p = stats.p_greater(ref, without)
    d = stats.difference(ref, without, 0.95)
    assert p is not None and p < 0.025
    assert d.low is not None and d.low > 0
    for alpha in (0.025, 0.005, 0.001):  # at every level the test rejects exactly when the interval excludes 0
        low = stats.difference(ref, without, 1 - 2 * alpha).low
        assert low is not None and (p <= alpha) == (low > 0)
    assert stats.t_two_sided(0.95, 4) == stats.t95(4) == 2.776  # a whole df: the table's value
