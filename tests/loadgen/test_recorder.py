"""The numpy percentile/mean/stddev path gives exactly hdrh's answers."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen import recorder


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_mean_std_match_hdrh(seed: int) -> None:
    h = recorder.new_histogram()
    rng = np.random.default_rng(seed)
    recorder.record_many(h, rng.lognormal(12 + seed, 1.5, 20000).astype(np.int64))
    ps = [0, 50, 75, 90, 95, 99, 99.9, 99.99, 99.999, 100]
    assert recorder.percentiles(h, ps) == [h.get_value_at_percentile(p) for p in ps]
    mean, std = recorder.mean_std(h)
    assert mean == pytest.approx(h.get_mean_value(), rel=1e-12)
    assert std == pytest.approx(h.get_stddev(), rel=1e-9)


def test_empty_histogram() -> None:
    h = recorder.new_histogram()
    assert recorder.percentiles(h, [50, 99]) == [0, 0]
    assert recorder.mean_std(h) == (0.0, 0.0)
