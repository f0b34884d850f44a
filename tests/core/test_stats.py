"""core.stats: the ratio of two studies' ratios, which says whether a ratio measured in one study reproduces in
another while the machine drifts between them; and one ratio pooled over independent runs."""

from __future__ import annotations

import math
import statistics

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


def test_runs_that_disagree_beyond_their_own_noise_pool_to_the_t_interval_of_their_logs() -> None:
    """Equal standard errors: DerSimonian–Laird's between-run variance is the logs' variance less the within-run one,
    and Hartung–Knapp's interval is Student's t on the logs over runs − 1 df (worked out by hand for this case)."""
    ratios, se = [1.22, 1.56, 1.07], 0.05
    logs = [math.log(r) for r in ratios]
    pooled = stats.across_runs([(r, se) for r in ratios])
    assert pooled is not None
    assert pooled.between_sd == pytest.approx(math.sqrt(statistics.variance(logs) - se * se))
    q = sum((y - statistics.fmean(logs)) ** 2 for y in logs) / se**2  # Cochran's Q at equal weights
    assert pooled.agree_p == pytest.approx(math.exp(-q / 2)) and pooled.agree_p < 1e-6  # chi-squared, 2 df
    half = stats.t95(2) * statistics.stdev(logs) / math.sqrt(3)
    iv = pooled.interval
    assert iv.estimate == pytest.approx(math.exp(statistics.fmean(logs)))
    assert (iv.low, iv.high, iv.n) == (
        pytest.approx(iv.estimate / math.exp(half)),
        pytest.approx(iv.estimate * math.exp(half)),
        3,
    )
    one_run = stats.t95(6) * se  # the widest a single run's own half-interval (on the log) is at 6 + 6 repeats
    assert math.log(iv.high / iv.estimate) > 2 * one_run  # what the runs' own intervals leave out


def test_runs_that_agree_pool_with_no_between_run_spread_and_fewer_runs_pool_to_nothing() -> None:
    pooled = stats.across_runs([(1.3, 0.05)] * 3)
    assert pooled is not None and pooled.between_sd == 0 and pooled.within_se == 0.05 and pooled.agree_p == 1.0
    assert pooled.interval.high == pytest.approx(1.3 * math.exp(stats.t95(2) * 0.05 / math.sqrt(3)))
    assert stats.across_runs([(1.3, 0.05)]) is None
    assert stats.across_runs([(1.3, 0.05), (1.2, 0.0)]) is None  # a run without its own spread cannot be weighed


def test_chi_squared_tail_probabilities_are_the_known_ones() -> None:
    """Two df: exactly exp(−x/2); one and five df: the 5 % points every table lists (series and fraction both)."""
    for x in (0.5, 2.0, 5.991, 30.0):
        assert stats.chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-9)
    assert stats.chi2_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-6)
    assert stats.chi2_sf(11.070498, 5) == pytest.approx(0.05, abs=1e-6)
    assert stats.chi2_sf(0.0, 3) == 1.0
