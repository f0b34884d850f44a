"""The recommended configuration measured as written (sweeps.written), on planted truths: the ablation and the
written phase run through the code that runs them in a sweep (sweeps.confirm.repeat), each run drawn from a known
rate with noise, so what the judgement must conclude is known."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest

from advisor import verdict
from brokerconf import catalogue
from records.confirmation import Confirmation, KeyEffect, Written
from records.summary import Summary
from records.trial import TrialMeta
from sweeps import ablate, confirm, storage, written
from sweeps.simulate import Design, spec_for

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPEC, TUNED = spec_for(3, Design())  # batch.size, linger.ms, compression.type changed from Kafka's defaults
DEFAULTS_MB_S = 10.0


def changed(cfg: Mapping[str, Any], key: str) -> bool:
    return str(cfg.get(key, catalogue.param(key).default)) != str(catalogue.param(key).default)


class Planted:
    """A sweep's phases (sweeps.confirm.Phases) over an in-memory study: each run's rate is `truth(cfg)` times
    lognormal noise (3 %); a configuration `broken` says breaks a constraint in every run."""

    def __init__(
        self, truth: Callable[[Mapping[str, Any]], float], seed: int, broken: Any = None, spec: Any = SPEC
    ) -> None:
        self.spec, self.run_dir, self.restart_now = spec, Path("/nonexistent"), {}
        self.storage = optuna.storages.InMemoryStorage()
        self.truth, self.rng, self.broken = truth, random.Random(seed), broken or (lambda cfg: False)
        self.ran: list[str] = []

    def study(self, suffix: str, stage: Any = None) -> Any:
        return storage.study(self.storage, f"{self.spec.name}.{suffix}", self.spec.directions)

    def measure(self, st: Any, trial: Any, label: str, cfg: Mapping[str, Any], meta: TrialMeta) -> None:
        self.ran.append(meta.confirms or "")
        trial.set_user_attr("config", dict(cfg))
        trial.set_user_attr("record", f"/runs/sim/trials/{label}-{trial.number:03d}")
        trial.set_user_attr("rate_msg_s", 1000.0)
        trial.set_constraint("lost", 1.0 if self.broken(cfg) else 0.0)
        trial.set_user_attr("violations", ["lost 5 messages"] if self.broken(cfg) else [])
        st.tell(trial, [self.truth(cfg) * math.exp(self.rng.gauss(0.0, 0.03))])

    def out_of_time(self) -> bool:
        return False


class View:
    def __init__(self) -> None:
        self.said: list[str] = []
        self.runs = 0

    def note(self, msg: str) -> None:
        self.said.append(msg)

    def extend(self, n: int) -> None:
        self.runs += n


def ablate_then_write(sw: Planted) -> tuple[list[KeyEffect], Written | None, View]:
    without, blocked = ablate.ablations(SPEC, TUNED)
    assert not blocked
    runs = confirm.repeat(sw, "ablate", [(confirm.RECOMMENDED, TUNED), *without], SPEC.ablate.repeats)
    effects = ablate.effects(SPEC, TUNED, runs)
    view = View()
    return effects, written.measure(sw, TUNED, effects, [], view), view


def test_keys_that_stand_in_for_each_other_each_look_useless_alone_and_are_kept_as_a_group() -> None:
    """batch.size and linger.ms each carry the same +3 MB/s (either one is enough), compression.type +2 on its own:
    put back alone, neither of the first two costs anything, so the ablation drops both; the configuration as
    written (compression.type only) then measures 3 MB/s below the full one, beyond noise: the two are kept."""

    def truth(cfg: Mapping[str, Any]) -> float:
        either = changed(cfg, "batch.size") or changed(cfg, "linger.ms")
        return DEFAULTS_MB_S + 3.0 * either + 2.0 * changed(cfg, "compression.type")

    sw = Planted(truth, seed=1)
    effects, w, view = ablate_then_write(sw)
    assert {e.key for e in effects if e.beyond_noise} == {"compression.type"}, effects
    assert w is not None and w.headline == confirm.RECOMMENDED, w
    assert w.kept_as_group == ("batch.size", "linger.ms") and "stand in" in (w.why_kept or ""), w
    assert w.full_vs_written and w.full_vs_written.distinguishable and w.full_vs_written.difference.estimate > 2.5, w
    assert w.vs_defaults and w.vs_defaults.distinguishable and w.vs_defaults.ratio
    assert w.vs_defaults.ratio.estimate == pytest.approx(1.5, 0.05)
    head = written.headline(Confirmation((), written=w))
    assert head is not None and head.config == TUNED
    # 3 arms × n runs, in randomized blocks: every block runs each arm once
    n = SPEC.ablate.repeats
    assert view.runs == 3 * n and len(sw.ran) == 4 * n + 3 * n  # the ablation's 4 arms, then these 3
    blocks = sw.ran[-3 * n :]
    for b in range(n):
        assert {k.rsplit("@", 1)[0] for k in blocks[3 * b : 3 * b + 3]} == {
            written.WRITTEN,
            confirm.RECOMMENDED,
            confirm.DEFAULTS,
        }, blocks


def test_a_written_configuration_as_good_as_the_full_one_is_the_headline_with_its_own_interval() -> None:
    """Only compression.type matters (+2 MB/s): the files hold it alone, it measures like the full configuration,
    and the headline (rate, interval, ratio to the defaults, summary.json's `best`) is the written one's."""
    sw = Planted(lambda cfg: DEFAULTS_MB_S + 2.0 * changed(cfg, "compression.type"), seed=2)
    effects, w, _ = ablate_then_write(sw)
    assert [e.key for e in effects if e.beyond_noise] == ["compression.type"], effects
    assert w is not None and w.headline == written.WRITTEN and not w.kept_as_group, w
    assert w.dropped == ("batch.size", "linger.ms") and w.why_kept is None
    assert w.full_vs_written and not w.full_vs_written.distinguishable, w
    best = written.best(Confirmation((), written=w))
    assert best is not None and best.label == written.WRITTEN and best.config and best.interval
    assert {k for k in best.config if changed(best.config, k)} == {"compression.type"}
    assert best.mb_s == pytest.approx(12.0, rel=0.05) and (best.interval.low or 0) < 12.0 < (best.interval.high or 0)
    assert w.vs_defaults and w.vs_defaults.ratio and w.vs_defaults.ratio.estimate == pytest.approx(1.2, rel=0.05)
    assert (w.vs_defaults.alpha or 1) <= confirm.ALPHA / 2  # one family of three tests (Holm)


def test_a_written_configuration_that_breaks_its_constraints_keeps_the_dropped_keys() -> None:
    """Without batch.size and linger.ms the runs lose messages: whatever the rates, the files keep them."""
    sw = Planted(
        lambda cfg: DEFAULTS_MB_S + 2.0 * changed(cfg, "compression.type"),
        seed=3,
        broken=lambda cfg: changed(cfg, "compression.type") and not changed(cfg, "batch.size"),
    )
    ablation = ablate.ablations(SPEC, TUNED)[0]
    runs = confirm.repeat(sw, "ablate", [(confirm.RECOMMENDED, TUNED), *ablation], SPEC.ablate.repeats)
    effects = [replace(e, beyond_noise=e.key == "compression.type") for e in ablate.effects(SPEC, TUNED, runs)]
    w = written.measure(sw, TUNED, effects, [], View())
    assert w is not None and w.headline == confirm.RECOMMENDED, w
    assert w.kept_as_group == ("batch.size", "linger.ms") and "broke its constraints" in (w.why_kept or ""), w


def test_nothing_is_measured_when_the_files_hold_the_chosen_configuration() -> None:
    every = [KeyEffect(k, None, "", beyond_noise=True) for k in ("batch.size", "linger.ms", "compression.type")]
    none = [replace(e, beyond_noise=False) for e in every]
    assert written.reduced(SPEC, TUNED, every) is None
    empty = written.reduced(SPEC, TUNED, none)  # every key dropped: none of the chosen keys is left
    assert empty is not None and not [k for k in empty if changed(empty, k)], empty
    some = [replace(e, beyond_noise=e.key == "linger.ms") for e in every]
    cfg = written.reduced(SPEC, TUNED, some)
    assert cfg is not None and {k for k in cfg if changed(cfg, k)} == {"linger.ms"}
    sw = Planted(lambda cfg: 1.0, seed=4)
    assert written.measure(sw, TUNED, every, [], View()) is None and not sw.ran
    sw.out_of_time = lambda: True  # type: ignore[method-assign]  # the sweep's budget is spent: nothing is run
    assert written.measure(sw, TUNED, some, [], View()) is None and not sw.ran
    assert written.best(Confirmation(())) is None and written.headline(None) is None


def test_the_verdict_and_the_advice_read_the_configuration_as_written() -> None:
    """`sweep`, `advise` and the report say the written configuration's blocks: its runs, what was dropped, its
    ratio to the defaults; the advice applies its keys, with its own runs and the defaults' as the evidence."""
    sw = Planted(lambda cfg: DEFAULTS_MB_S + 2.0 * changed(cfg, "compression.type"), seed=2)
    effects, w, _ = ablate_then_write(sw)
    assert w is not None
    keep = tuple(e for e in effects if e.beyond_noise)
    none = tuple(e for e in effects if e not in keep)
    conf = Confirmation((), "producer#0", written=w)
    s = Summary("s", confirmation=conf, recommended=keep, no_measurable_effect=none)
    text = "\n".join(verdict.written_lines(s))
    assert "as written (what the recommended files hold)" in text and "without batch.size, linger.ms" in text, text
    assert "Kafka's defaults; difference" in text and "not ahead beyond noise" in text, text
    (r,) = verdict.rule_confirmed(s)
    assert r.action == {"compression.type": "lz4"}, r
    arms = {a.label: a for a in w.arms}
    assert r.trials == [*arms[written.WRITTEN].trial_ids, *arms[confirm.DEFAULTS].trial_ids]
    assert w.vs_defaults and r.expected_gain_mb_s == pytest.approx(w.vs_defaults.difference.estimate)


def test_a_key_not_ablated_is_left_out_of_the_written_configuration_unless_kept_with_the_group() -> None:
    """The files leave out a key the ablation could not put back alone, so the configuration as written does too;
    when the written phase keeps its dropped keys as a group, that key is recommended with them."""
    effects = [
        KeyEffect("compression.type", "none", "lz4", beyond_noise=True),
        KeyEffect("batch.size", "16384", "131072", beyond_noise=False),
    ]
    blocked = [KeyEffect("linger.ms", "5", "20", "a cross-key rule")]
    cfg = written.reduced(SPEC, TUNED, effects, blocked)
    assert cfg is not None and {k for k in cfg if changed(cfg, k)} == {"compression.type"}
    judged = written.settle(Confirmation(()), effects, blocked, None)
    assert [e.key for e in judged.recommended] == ["compression.type"] and judged.not_ablated == tuple(blocked)
    w = Written((), "recommended", kept_as_group=("batch.size", "linger.ms"), why_kept="they stand in for each other")
    judged = written.settle(judged, effects, blocked, w)
    assert [e.key for e in judged.recommended] == ["compression.type", "batch.size", "linger.ms"]
    assert judged.recommended[2].why == "they stand in for each other" and judged.written is w
    assert not judged.no_measurable_effect and not judged.not_ablated


def test_empty_files_are_measured_as_kafkas_defaults_and_lead_when_the_keys_did_not_help() -> None:
    """No key changes the rate: the ablation drops all three, the files are empty, and what they describe (Kafka's
    defaults) is measured against the full configuration in its own blocks. Not behind it beyond noise: the headline
    (summary.json's `best`, the operating point's configuration) is the defaults', nothing is recommended and the
    advice says so, with the blocks as its evidence."""
    sw = Planted(lambda cfg: DEFAULTS_MB_S, seed=5)
    effects, w, view = ablate_then_write(sw)
    assert not [e for e in effects if e.beyond_noise], effects
    assert w is not None and w.headline == confirm.DEFAULTS and not w.kept_as_group, w
    assert w.dropped == ("batch.size", "compression.type", "linger.ms") and w.why_kept is None, w
    assert {a.label for a in w.arms} == {confirm.RECOMMENDED, confirm.DEFAULTS} and w.vs_defaults is None, w
    assert w.full_vs_written and not w.full_vs_written.distinguishable, w
    assert w.full_vs_written.alpha == confirm.ALPHA  # a family of one test
    n = SPEC.ablate.repeats
    assert view.runs == 2 * n and len(sw.ran) == 4 * n + 2 * n and "no key: Kafka's defaults" in view.said[0]
    judged = written.settle(Confirmation((), "producer#0"), effects, [], w)
    assert not judged.recommended and len(judged.no_measurable_effect) == 3
    best = written.best(judged)
    assert best is not None and best.label == confirm.DEFAULTS and best.config is not None
    assert not [k for k in best.config if changed(best.config, k)], best.config
    head = judged.headline()
    assert head is not None and head.label == confirm.DEFAULTS
    s = Summary("s", confirmation=judged, recommended=(), no_measurable_effect=judged.no_measurable_effect)
    text = "\n".join(verdict.written_lines(s))
    assert "the files are empty: the headline is Kafka's defaults'" in text, text
    (r,) = verdict.rule_confirmed(s)
    assert r.action == {} and r.title.startswith("No key to apply") and r.expected_gain_mb_s is None, r
    assert any("in their own blocks" in e and "not ahead beyond noise" in e for e in r.evidence), r.evidence
    assert r.trials == list(head.trial_ids)


def test_keys_that_help_only_together_are_kept_when_the_ablation_dropped_every_one() -> None:
    """Any one of the three keys carries the whole +3 MB/s: put back alone, none costs anything and the ablation
    drops all three; the full configuration then beats Kafka's defaults beyond noise in its own blocks, so the
    keys are kept as a group and the headline is the full configuration's, with its ratio to the defaults."""

    def truth(cfg: Mapping[str, Any]) -> float:
        return DEFAULTS_MB_S + 3.0 * any(changed(cfg, k) for k in ("batch.size", "linger.ms", "compression.type"))

    sw = Planted(truth, seed=6)
    effects, w, _ = ablate_then_write(sw)
    assert not [e for e in effects if e.beyond_noise], effects
    assert w is not None and w.headline == confirm.RECOMMENDED and "stand in" in (w.why_kept or ""), w
    assert w.kept_as_group == ("batch.size", "compression.type", "linger.ms") and not w.dropped, w
    assert w.vs_defaults and w.vs_defaults.distinguishable and w.vs_defaults.ratio
    assert w.vs_defaults.ratio.estimate == pytest.approx(1.3, rel=0.05)
    judged = written.settle(Confirmation((), "producer#0"), effects, [], w)
    assert [e.key for e in judged.recommended] == ["batch.size", "compression.type", "linger.ms"]
    assert not judged.no_measurable_effect


def test_the_defaults_runs_that_held_no_rate_count_at_their_bounds_against_the_written_one() -> None:
    """Written against Kafka's defaults: a defaults' run with no rate held is counted at its bound (the lead is at
    least what is said), not dropped, which would leave the defaults' mean on their lucky runs only."""

    def arm(label: str, values: list[float]) -> list[confirm.Repeat]:
        return [confirm.Repeat(v, True, (), f"{label}-{i}", {}) for i, v in enumerate(values)]

    miss = confirm.Repeat(None, False, ("no rate held within the SLO",), "d-x", {}, None, 1.0)
    runs = {
        confirm.RECOMMENDED: arm("r", [7.0, 7.1, 6.9, 7.0]),
        written.WRITTEN: arm("w", [7.0, 6.9, 7.1, 7.0]),
        confirm.DEFAULTS: [*arm("d", [6.6, 6.8, 6.7]), miss],
    }
    w = written.judge(runs, ["compression.type"])
    assert w.headline == written.WRITTEN and w.vs_defaults is not None
    assert w.vs_defaults.at_bound == 1 and w.vs_defaults.difference.n == 8
    assert w.vs_defaults.difference.estimate == pytest.approx(7.0 - (6.6 + 6.8 + 6.7 + 1.0) / 4)
    assert w.full_vs_written is not None and w.full_vs_written.at_bound == 0


def test_dropped_keys_are_kept_when_the_full_configuration_held_a_rate_once_and_the_test_cannot_be_made() -> None:
    """The stretched run of 2026-12-07: the ablation dropped batch.size and lz4 at n=4, the full configuration held a
    rate in one of its two written-phase runs (2.80 MB/s) and the reduced one 0.75 and 0.79: with one run the
    stand-in test cannot be made, so the files keep the chosen configuration instead of a reduction never tested."""
    held = [confirm.Repeat(2.80, True, (), "r-0", {})]
    miss = confirm.Repeat(None, False, ("no rate held within the SLO",), "r-x", {}, None, 2.76)
    written_runs = [confirm.Repeat(v, True, (), f"w-{i}", {}) for i, v in enumerate([0.75, 0.79])]
    dflt = [confirm.Repeat(0.28, True, (), "d-0", {}), replace(miss, trial_id="d-x", below_mb_s=0.27)]
    runs = {confirm.RECOMMENDED: [*held, miss], written.WRITTEN: written_runs, confirm.DEFAULTS: dflt}
    w = written.judge(runs, ["batch.size", "compression.type"])
    assert w.headline == confirm.RECOMMENDED and w.kept_as_group == ("batch.size", "compression.type"), w
    assert w.why_kept == written.UNTESTED and w.dropped == () and w.full_vs_written is None
    runs[confirm.RECOMMENDED] = [miss, replace(miss, trial_id="r-y")]  # it held no rate here at all: the reduction
    assert written.judge(runs, ["batch.size", "compression.type"]).headline == written.WRITTEN


def test_one_key_without_effect_reads_the_written_check_from_the_ablations_runs_and_runs_none() -> None:
    """The chosen configuration changes batch.size alone and it does not help: put back, it is Kafka's defaults, so
    the ablation's blocks already measured the empty files against the full configuration. No run is added, the
    headline is the defaults' from those runs, and the verdict says where they came from. Without the ablation's
    runs (or with a key whose test rejected but fell below min_effect) the phase measures as before."""
    spec, tuned = spec_for(1, Design())
    sw = Planted(lambda cfg: DEFAULTS_MB_S, seed=7, spec=spec)
    without, _ = ablate.ablations(spec, tuned)
    runs = confirm.repeat(sw, "ablate", [(confirm.RECOMMENDED, tuned), *without], spec.ablate.repeats)
    effects = ablate.effects(spec, tuned, runs)
    assert [e.key for e in effects] == ["batch.size"] and not effects[0].beyond_noise, effects
    ran, view = len(sw.ran), View()
    w = written.measure(sw, tuned, effects, [], view, runs)
    assert w is not None and w.runs_from == "ablate" and w.headline == confirm.DEFAULTS, w
    assert len(sw.ran) == ran and view.runs == 0 and "read from the ablation's runs" in view.said[0], view.said
    ids = {a.label: set(a.trial_ids) for a in w.arms}
    assert ids[confirm.DEFAULTS] == {r.trial_id for r in runs["without:batch.size"]}, ids
    assert ids[confirm.RECOMMENDED] == {r.trial_id for r in runs[confirm.RECOMMENDED]}, ids
    assert w.full_vs_written and not w.full_vs_written.distinguishable and w.dropped == ("batch.size",)
    text = "\n".join(verdict.written_lines(Summary("s", confirmation=Confirmation((), "p#0", written=w))))
    assert "in the ablation's runs" in text and "the files are empty" in text, text
    assert written.measure(sw, tuned, effects, [], View()) is not None and len(sw.ran) == ran + 2 * spec.ablate.repeats
    iv = effects[0].interval
    assert iv is not None
    rejected = [replace(effects[0], interval=replace(iv, low=0.1))]  # beyond noise, below min_effect
    assert written.from_ablation(spec, tuned, rejected, [], runs) is None
    assert written.from_ablation(SPEC, TUNED, effects, [], runs) is None  # three keys: the files are not one arm


def test_one_key_whose_absence_held_no_rate_in_one_run_is_kept_from_the_ablations_runs() -> None:
    """Put back, batch.size held no rate in one of two runs (too few to need it outright, and at its bound not
    behind beyond noise): read from the ablation's runs, the files' configuration broke its constraints, so the key
    is kept, as a written phase of its own would keep it, and nothing is measured again."""
    spec, tuned = spec_for(1, Design())

    def rep(label: str, i: int, v: float | None) -> confirm.Repeat:
        return confirm.Repeat(
            v,
            v is not None,
            () if v else ("no rate held within the SLO",),
            f"{label}-{i}",
            {},
            None,
            None if v else 9.8,
        )

    runs = {
        confirm.RECOMMENDED: [rep("r", 0, 10.0), rep("r", 1, 10.4)],
        "without:batch.size": [rep("w", 0, 10.1), rep("w", 1, None)],
    }
    effects = ablate.effects(spec, tuned, runs)
    assert not effects[0].beyond_noise, effects
    sw, view = Planted(lambda cfg: DEFAULTS_MB_S, seed=8, spec=spec), View()
    w = written.measure(sw, tuned, effects, [], view, runs)
    assert w is not None and w.runs_from == "ablate" and not sw.ran, w
    assert w.headline == confirm.RECOMMENDED and w.kept_as_group == ("batch.size",), w
    assert "broke its constraints" in (w.why_kept or "") and "batch.size put back" in view.said[0], view.said


def fewer_ablation_runs(spec: Any, tuned: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """`spec` confirming 4 runs an arm and ablating 2."""
    out = spec.model_copy(update={"confirm": spec.confirm.model_copy(update={"repeats": 4})})
    return out.model_copy(update={"ablate": spec.ablate.model_copy(update={"repeats": 2})}), tuned


def test_empty_files_are_checked_at_the_confirmations_repeats_when_the_ablations_are_fewer() -> None:
    """The ablation runs 2 a side, the confirmation 4. One key dropped: the ablation's 2 runs of each arm are topped
    up with 2 more in new blocks, pooled, and the verdict says so; three keys dropped: the check runs 4 of each arm
    in its own blocks. A partial written phase (one key kept) stays at the ablation's repeats."""
    spec, tuned = fewer_ablation_runs(*spec_for(1, Design()))
    assert written.empty_files_repeats(spec) == 4
    sw = Planted(lambda cfg: DEFAULTS_MB_S, seed=9, spec=spec)
    without, _ = ablate.ablations(spec, tuned)
    runs = confirm.repeat(sw, "ablate", [(confirm.RECOMMENDED, tuned), *without], 2)
    effects = ablate.effects(spec, tuned, runs)
    ran, view = len(sw.ran), View()
    w = written.measure(sw, tuned, effects, [], view, runs)
    assert w is not None and w.runs_from == "ablate+written" and w.headline == confirm.DEFAULTS, w
    assert len(sw.ran) == ran + 4 and view.runs == 4 and "2 more of each" in view.said[0], view.said
    ids = {a.label: set(a.trial_ids) for a in w.arms}
    assert {r.trial_id for r in runs["without:batch.size"]} < ids[confirm.DEFAULTS] and len(ids[confirm.DEFAULTS]) == 4
    assert w.full_vs_written is not None and w.full_vs_written.difference.n == 8, w
    text = "\n".join(verdict.written_lines(Summary("s", confirmation=Confirmation((), "p#0", written=w))))
    assert "and more of each in new randomized blocks" in text, text

    spec3, tuned3 = fewer_ablation_runs(*spec_for(3, Design()))
    sw3 = Planted(lambda cfg: DEFAULTS_MB_S, seed=10, spec=spec3)
    none = [KeyEffect(k, o, n, beyond_noise=False) for k, o, n in ablate.changed_keys(spec3, tuned3)]
    view3 = View()
    w3 = written.measure(sw3, tuned3, none, [], view3)
    assert w3 is not None and view3.runs == 8 and "× 4 runs each" in view3.said[0], view3.said
    kept = [replace(none[0], beyond_noise=True), *none[1:]]
    view4 = View()
    assert written.measure(sw3, tuned3, kept, [], view4) is not None
    assert view4.runs == 3 * 2 and "× 2 runs each" in view4.said[0], view4.said
