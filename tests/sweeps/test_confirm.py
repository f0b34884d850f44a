"""The confirmation's and the ablation's statistics (sweeps.confirm, core.stats): exact t quantiles, Holm's
correction across a family, the runs that chose a winner never reused to judge it, and the method as a whole on
simulated studies with planted effects (sweeps.simulate): false positives, power and bias."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import optuna
import pytest

from advisor import verdict
from core import stats
from sweeps import ablate, attrs, confirm, storage
from sweeps.simulate import Design, run_many
from sweeps.spec import parse_spec

BASE = {
    "name": "c",
    "cluster": {"testbed": True},
    "workload": {"partitionsPerTopic": 1},
    "plan": "joint",
    "params": {"partitions": {"choices": [6]}},
    "trials": 1,
}


def reps(label: str, vs: list[float], feasible: bool = True) -> list[confirm.Repeat]:
    why = () if feasible else ("lost 3 > 0",)
    return [confirm.Repeat(v, feasible, why, f"{label}-{i}", {}, v * 1000) for i, v in enumerate(vs)]


def test_t_quantiles_match_the_table_and_the_tails() -> None:
    for df in (1, 2, 5, 12, 30):
        assert stats.t_quantile(0.975, df) == pytest.approx(stats.t95(df), abs=2e-3)
    assert stats.t_quantile(0.995, 4) == pytest.approx(4.604, abs=1e-3)  # a 99 % two-sided interval, df 4
    assert stats.t_sf(0.0, 7) == pytest.approx(0.5) and stats.t_sf(-1.0, 7) == pytest.approx(1 - stats.t_sf(1.0, 7))
    assert stats.t_sf(1.96, 1e6) == pytest.approx(0.025, abs=1e-4)  # the normal's, for large df


def test_holm_steps_down_and_stops_at_the_first_test_that_stands() -> None:
    got = stats.holm([0.04, 0.001, 0.02, None], alpha=0.05)
    # sorted: 0.001 at 0.05/3, 0.02 at 0.05/2, 0.04 at 0.05/1; the one without a p-value stands
    assert got[1] == (True, pytest.approx(0.05 / 3)) and got[2] == (True, 0.025) and got[0] == (True, 0.05)
    assert got[3][0] is False
    stops = stats.holm([0.001, 0.04, 0.03], alpha=0.05)  # 0.03 > 0.05/2: it and everything after it stand
    assert stops[0][0] and not stops[2][0] and not stops[1][0]
    assert stops[1][1] == stops[2][1] == 0.025  # the level at which the procedure stopped


def test_an_ablation_judges_each_key_on_its_own_runs_in_one_family() -> None:
    spec = parse_spec({**BASE, "ablate": {"min_effect": 0.0}})
    cfg = {"partitions": 6, "buffer.memory": 67108864}
    runs = {
        confirm.RECOMMENDED: reps("r", [7.2, 6.8, 7.0, 7.1]),
        "without:partitions": reps("p", [3.6, 3.5, 3.7, 3.6]),
        "without:buffer.memory": reps("b", [6.9, 7.2, 6.8, 7.0]),
    }
    got = {e.key: e for e in ablate.effects(spec, cfg, runs)}
    p, b = got["partitions"], got["buffer.memory"]
    assert p.beyond_noise and p.n == 8 and p.alpha == pytest.approx(0.05 / 2)  # the first of two
    assert p.interval and p.interval.level == pytest.approx(1 - 2 * 0.025) and (p.interval.low or 0) > 0
    assert not b.beyond_noise and b.alpha == pytest.approx(0.05) and "Holm" in (b.why or "")
    assert set(p.trial_ids) == {f"p-{i}" for i in range(4)} | {f"r-{i}" for i in range(4)}  # the ablation's own


def test_one_infeasible_run_without_a_key_does_not_make_it_needed() -> None:
    spec = parse_spec(BASE)
    cfg = {"partitions": 6}
    one = {
        confirm.RECOMMENDED: reps("r", [7.0, 7.1, 6.9]),
        "without:partitions": [*reps("p", [7.0, 7.05]), *reps("x", [6.9], feasible=False)],
    }
    assert not ablate.effects(spec, cfg, one)[0].beyond_noise
    most = {**one, "without:partitions": [*reps("p", [7.0]), *reps("x", [6.9, 6.8], feasible=False)]}
    (row,) = ablate.effects(spec, cfg, most)
    assert row.beyond_noise and "2 of 3 runs: lost 3 > 0" in (row.why or "")


def test_a_run_without_a_key_where_no_rate_held_counts_at_its_bound_not_as_a_missing_figure() -> None:
    """benchmarks/written_alone.py found it: with 2 runs a side, one run without the key held no rate, the key was
    left with one figure and filed as no measurable effect. Counted at its bound (no rate at or above it held twice
    in its search), the key is judged, and the row says how; a run that failed outright has no bound."""
    spec = parse_spec(BASE)
    cfg = {"partitions": 6}
    no_rate = confirm.Repeat(None, False, ("no rate held within the SLO",), "x-0", {}, None, below_mb_s=2.5)
    runs = {confirm.RECOMMENDED: reps("r", [12.0, 12.6]), "without:partitions": [*reps("p", [3.72]), no_rate]}
    (row,) = ablate.effects(spec, cfg, runs)
    assert row.beyond_noise and row.n == 4 and row.effect_mb_s == pytest.approx(12.3 - (3.72 + 2.5) / 2), row
    assert row.why == "1 run(s) without it held no rate: each counted at its bound", row
    crashed = replace(no_rate, below_mb_s=None)
    (row,) = ablate.effects(spec, cfg, {**runs, "without:partitions": [*reps("p", [3.72]), crashed]})
    assert not row.beyond_noise and row.why == "fewer than 2 repeats each side", row


def test_a_no_rate_runs_bound_is_read_back_from_the_studys_storage(tmp_path: Path) -> None:
    """The bound a sweep's trial wrote (sweeps.attrs) is the one the ablation reads (confirm.measured), also after
    a resume; a run that held a rate has none."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    st = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", study_name="a", direction="maximize")
    for key, held in (("without:partitions@1", False), ("without:partitions@2", True)):
        trial = st.ask()
        assert storage.claim(st, trial, key)
        attrs.started(trial, "host:1", {"partitions": 1}, tmp_path / "trials" / f"ablate-{trial.number:03d}")
        attrs.finished(
            trial,
            restarts=0,
            probe_msg_s=9000.0,
            rate_msg_s=3000.0 if held else None,
            no_rate_held=None if held else "no step held: the sustainable rate is below 2,560 msg/s",
            windows_mb_s=[],
            violations=[] if held else ["no rate held within the SLO"],
            fail_reason=None,
            below_mb_s=None if held else 2.5,
        )
        trial.set_constraint("slo", 0.0 if held else 1.0)
        st.tell(trial, 2.9 if held else 0.0)
    got = confirm.measured(optuna.load_study(study_name="a", storage=f"sqlite:///{tmp_path / 'o.db'}"))
    (miss, hit) = got["without:partitions"]
    assert (miss.value, miss.below_mb_s, miss.feasible) == (None, 2.5, False), miss
    assert (hit.value, hit.below_mb_s, hit.feasible) == (2.9, None, True), hit
    assert confirm.at_most([miss, hit]) == [2.5, 2.9]


class _Studies:
    """What confirm.candidates reads of a sweep (sweeps.confirm.Phases): its spec and its studies by suffix."""

    def __init__(self, tmp_path: Path) -> None:
        self.spec, self.url = parse_spec(BASE), f"sqlite:///{tmp_path / 'o.db'}"

    def study(self, suffix: str, stage: object = None) -> optuna.Study:
        return optuna.create_study(storage=self.url, study_name=suffix, direction="maximize", load_if_exists=True)


def _current_held_no_rate(sw: _Studies, tmp_path: Path) -> None:
    """The baselines study with one trial: the current configuration (one request handler), which held no rate."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    st = sw.study("baselines")
    trial = st.ask()
    assert storage.claim(st, trial, "current")
    attrs.started(trial, "host:1", {"num.io.threads": 1}, tmp_path / "trials" / "baseline-000")
    attrs.finished(
        trial,
        restarts=0,
        probe_msg_s=9000.0,
        rate_msg_s=None,
        no_rate_held="no step held: the sustainable rate is below 2,560 msg/s",
        windows_mb_s=[],
        violations=["no rate held within the SLO"],
        fail_reason=None,
        below_mb_s=2.5,
    )
    trial.set_constraint("slo", 1.0)
    st.tell(trial, 0.0)


def test_a_baseline_that_held_no_rate_is_still_confirmed(tmp_path: Path) -> None:
    """The current configuration's baseline trial held no rate (the io-threads run of 2026-12-07): it is confirmed
    like every baseline, so the recommendation is still stated against it."""
    sw = _Studies(tmp_path)
    _current_held_no_rate(sw, tmp_path)
    todo = dict(confirm.candidates(sw))  # type: ignore[arg-type]  # candidates reads only spec and study
    assert todo.get("baseline:current") == {"num.io.threads": 1}, todo


def test_the_current_configuration_is_found_under_the_label_it_was_confirmed_as(tmp_path: Path) -> None:
    """candidates measures no configuration twice: the current one equal to a search's best runs under that label,
    and current_as names it (settings at Kafka's defaults do not make two configurations differ)."""
    sw = _Studies(tmp_path)
    assert confirm.current_as(sw, [("broker#2", {"num.io.threads": 1})]) == confirm.CURRENT  # type: ignore[arg-type]
    _current_held_no_rate(sw, tmp_path)
    todo = [(confirm.DEFAULTS, {}), ("broker#2", {"num.io.threads": "1", "num.network.threads": 3})]
    assert confirm.current_as(sw, todo) == "broker#2"  # type: ignore[arg-type]
    assert confirm.current_as(sw, todo[:1]) == confirm.CURRENT  # type: ignore[arg-type]


def test_the_current_configuration_is_compared_under_the_label_it_ran_as() -> None:
    """A current configuration confirmed as a search's candidate (broker#2) that is not chosen is still compared with,
    in the same family; one equal to Kafka's defaults is that one comparison, not a second test of the same arm."""
    runs = {
        confirm.DEFAULTS: reps("d", [5.0, 5.2, 4.9, 5.1]),
        "a": reps("a", [7.0, 7.2, 6.9, 7.1]),
        "b": reps("b", [6.9, 7.1, 7.0, 6.8]),
        "broker#2": reps("c", [5.5, 5.7, 5.4, 5.6]),
    }
    s = confirm.summary(runs, "broker#2")
    assert s.chosen == "a" and s.vs_current and s.vs_current.label == "broker#2" and s.vs_current.distinguishable
    assert s.vs_current.ratio and (s.vs_current.ratio.low or 0) > 1
    assert confirm.summary(runs).vs_current is None  # no arm under the current label: nothing to compare with
    del runs["broker#2"]  # two tests in the family (runner-up, defaults), not three
    same = confirm.summary(runs, confirm.DEFAULTS)
    assert same.vs_current == same.vs_defaults and same.vs_defaults and same.vs_defaults.alpha == pytest.approx(0.025)


def test_the_confirmations_comparisons_are_one_family_and_the_ratio_is_printed_at_its_level() -> None:
    runs = {
        confirm.DEFAULTS: reps("d", [5.0, 5.2, 4.9, 5.1]),
        "a": reps("a", [7.0, 7.2, 6.9, 7.1]),
        "b": reps("b", [6.9, 7.1, 7.0, 6.8]),
    }
    s = confirm.summary(runs)
    assert s.chosen == "a" and s.runner_up and not s.runner_up.distinguishable  # a and b: within noise
    vd = s.vs_defaults
    assert vd and vd.distinguishable and vd.alpha in (pytest.approx(0.05), pytest.approx(0.025))
    level = 1 - 2 * vd.alpha
    assert vd.ratio and vd.difference.level == pytest.approx(level) and vd.ratio.level == pytest.approx(level)
    assert (vd.ratio.low or 0) > 1  # the ratio's interval and the difference's agree: both exclude no change
    two = confirm.summary({confirm.DEFAULTS: runs[confirm.DEFAULTS], "a": runs["a"]})
    assert two.vs_defaults and two.vs_defaults.label == confirm.DEFAULTS
    assert two.runner_up == replace(two.vs_defaults, ratio=None)  # the runner-up is the defaults: one test


def no_rate(label: str, below: float) -> confirm.Repeat:
    """A repeat whose search held no rate: no figure, its bound."""
    return confirm.Repeat(None, False, ("no rate held within the SLO",), f"{label}-x", {}, None, below)


def test_the_defaults_that_held_no_rate_in_a_run_are_compared_at_its_bound() -> None:
    """A no-rate run of Kafka's defaults counts at its bound (as high as it could have scored), so the chosen one's
    lead is understated, not dropped with the comparison; a run that failed outright leaves the defaults out."""
    chosen = reps("a", [7.0, 7.2, 6.9, 7.1])
    dflt = [*reps("d", [5.0, 5.2, 4.9]), no_rate("d", 2.0)]
    s = confirm.summary({confirm.DEFAULTS: dflt, "a": chosen})
    assert s.chosen == "a" and [c.eligible for c in s.candidates] == [True, False]
    vd = s.vs_defaults
    assert vd is not None and vd.at_bound == 1 and vd.distinguishable and vd.ratio is not None
    assert vd.difference.n == 8 and vd.difference.estimate == pytest.approx(7.05 - 17.1 / 4)  # the bound in the mean
    assert "1 of its runs held no rate: counted at their bounds" in verdict.bound_words(vd)
    crashed = confirm.Repeat(None, False, ("failed: broker down",), "d-y", {})
    assert confirm.summary({confirm.DEFAULTS: [*dflt[:3], crashed], "a": chosen}).vs_defaults is None


def test_the_method_on_simulated_studies_holds_its_error_rates() -> None:
    """500 simulated studies per row (sweeps.simulate), n = 4 runs per arm, a between-run spread of 6 % and the
    search's 6 % resolution: with no effect, at most 5 % of studies recommend any key (1 to 8 keys); one effect of 2
    between-run sds, alone, is recommended in at least 80 % of them, and its reported size is within 5 % of the
    planted one."""
    d = Design(repeats=4, ablate=4)
    for k in (1, 4, 8):
        null = run_many(k, 0.0, d, 500, seed=10 + k)
        assert null.studies > 150 and null.false_positive_rate is not None and null.false_positive_rate <= 0.05, null
    planted = run_many(1, 2.0, d, 500, seed=7)
    assert planted.power is not None and planted.power >= 0.8, planted
    assert planted.bias is not None and abs(planted.bias) <= 0.05, planted
    assert math.isfinite(planted.bias)
