"""The recommended configuration as written: measured as `recommended/*.properties` hold it.

The ablation drops the keys it finds no measurable effect for, so the files hold fewer keys than the configuration
the confirmation chose. That reduced configuration is measured here, in fresh randomized blocks with the full one
and Kafka's defaults (`ablate.repeats` runs each, none of the confirmation's runs reused), and the headline (the
rate, its interval, the ratio to the defaults and the operating point) is the configuration written, not the one
chosen.

Keys that can stand in for each other each look useless put back alone (the other still carries the effect), so
the reduced configuration then loses throughput: when the full one beats it beyond noise, the dropped keys are kept
as a group and the full configuration is the one written. So they are when the test cannot be made because the full
configuration held a rate in one run only: a reduction is written only after that test was made. The two
comparisons (full over written, written over the defaults) are one family, tested by Holm's procedure at
sweeps.confirm.ALPHA, and their intervals are printed at the levels they were tested at.

When the ablation drops every key, the files are empty: what they describe is Kafka's defaults. The full
configuration is then measured against the defaults in fresh blocks (a family of one test, at the confirmation's
repeats when they are more than the ablation's: `empty_files_repeats`): ahead beyond noise, its
keys stand in for each other and are kept as a group; not, the headline is the defaults' and nothing is recommended.
When the chosen configuration changed one key only, its ablation arm is those defaults, already measured against the
full configuration in blocks after the choice: that test is read from the ablation's runs, not run again
(`from_ablation`), with more runs of each arm in new blocks when the ablation's are fewer than the confirmation's
(`_topped_up`; both sets come after the choice, so pooling them adds the blocks' spread, not a bias).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from brokerconf import catalogue
from core import stats
from records.confirmation import Arm, Comparison, Confirmation, KeyEffect, Written
from records.summary import Best
from sweeps import ablate, confirm, space
from sweeps.spec import Spec

WRITTEN = "written"  # the configuration the recommended files hold, among this phase's arms
BROKE = "without them the written configuration broke its constraints"  # why a written phase kept keys
UNTESTED = (  # and why it kept them when the stand-in test could not be made (the stretched run of 2026-12-07)
    "the full configuration held a rate in one of its runs here, so whether the dropped keys stand in for each other "
    "was not tested: they are kept, as the confirmation chose and measured them"
)


def reduced(
    spec: Spec, cfg: Mapping[str, Any], effects: Sequence[KeyEffect], blocked: Sequence[KeyEffect] = ()
) -> space.Config | None:
    """`cfg` with every key the ablation found no effect for, and every key it could not put back alone (`blocked`),
    back at the defaults' value: what the recommended files hold. None when there is nothing to measure apart: no
    key dropped (the files hold the chosen configuration), or the reduced configuration breaks a cross-key rule.
    With every key dropped none of the chosen keys is left: the files are empty (`measure` runs Kafka's defaults)."""
    drop = {e.key for e in effects if not e.beyond_noise} | {b.key for b in blocked}
    if not drop:
        return None
    out = dict(cfg)
    for key, old, _ in ablate.changed_keys(spec, cfg):
        if key in drop:
            out = ablate.put_back(out, key, old)
    return None if catalogue.broken_rules(out) else out


class View(Protocol):
    """The sweep's progress view: a line to say, and runs to add to the count."""

    def note(self, msg: str) -> None: ...

    def extend(self, n: int) -> None: ...


def measure(
    sw: confirm.Phases,
    chosen: space.Config,
    effects: list[KeyEffect],
    blocked: list[KeyEffect],
    view: View,
    ablation: confirm.Runs | None = None,
) -> Written | None:
    """Measure the written configuration against the full one and Kafka's defaults (randomized blocks) and judge
    them (`judge`); when the files are empty, the full configuration against the defaults alone (they are what the
    files describe), unless the ablation's runs (`ablation`) already measured exactly that (`from_ablation`). None
    when the written configuration is the chosen one (`reduced`), or when the sweep's time ran out before it was
    measured."""
    spec = sw.spec
    cfg = reduced(spec, chosen, effects, blocked)
    if cfg is None:
        return None
    full, defaults = (confirm.RECOMMENDED, dict(chosen)), (confirm.DEFAULTS, space.baseline(spec, "kafka-defaults"))
    if (w := from_ablation(spec, chosen, effects, blocked, ablation or {})) is not None:
        return _topped_up(sw, w, [full, defaults], ablation or {}, view)
    kept = ", ".join(e.key for e in effects if e.beyond_noise)
    if kept:
        n = spec.ablate.repeats
        arms, mine = [(WRITTEN, cfg), full, defaults], WRITTEN
        view.note(f"as written ({kept} only): against the full configuration and Kafka's defaults, × {n} runs each")
    else:  # every key dropped: the empty files run Kafka's defaults, unless the keys help only together
        n = empty_files_repeats(spec)
        arms, mine = [full, defaults], confirm.DEFAULTS
        view.note(f"as written (no key: Kafka's defaults): against the full configuration, × {n} runs each")
    view.extend(len(arms) * n)
    runs = confirm.repeat(sw, "written", arms, n)
    if not runs.get(mine):  # out of time before its first run: the confirmation's choice stays the headline
        return None
    return judge(runs, [e.key for e in effects if not e.beyond_noise] + [b.key for b in blocked])


def _topped_up(
    sw: confirm.Phases, w: Written, arms: list[tuple[str, space.Config]], ablation: confirm.Runs, view: View
) -> Written:
    """`w`, read from the ablation's runs (`from_ablation`), with as many more runs of each arm in new randomized
    blocks as bring it to `empty_files_repeats`; `w` itself when it has them, or when the key is kept because the
    files' configuration broke its constraints (more runs cannot unbreak it)."""
    key = w.dropped[0] if w.dropped else w.kept_as_group[0]
    said, label = f"({key} put back is Kafka's defaults)", f"without:{key}"
    have = min(len(ablation[confirm.RECOMMENDED]), len(ablation[label]))
    more = empty_files_repeats(sw.spec) - have
    if more <= 0 or w.why_kept == BROKE:
        view.note(
            "as written (no key: Kafka's defaults): read from the ablation's runs, which measured the full "
            f"configuration against it in their own blocks {said}"
        )
        return w
    view.note(
        f"as written (no key: Kafka's defaults): the ablation's runs {said} and {more} more of each in new blocks, "
        f"to the confirmation's {have + more}"
    )
    view.extend(len(arms) * more)
    new = confirm.repeat(sw, "written", arms, more)
    pooled = {
        confirm.RECOMMENDED: [*ablation[confirm.RECOMMENDED], *new.get(confirm.RECOMMENDED, [])],
        confirm.DEFAULTS: [*ablation[label], *new.get(confirm.DEFAULTS, [])],
    }
    return replace(judge(pooled, [key]), runs_from="ablate+written")


def empty_files_repeats(spec: Spec) -> int:
    """Runs per arm when the files are empty: the one test left decides whether anything is recommended at all, and
    it asks again what the confirmation asked (the chosen configuration against Kafka's defaults) on runs after the
    choice, so it gets at least the confirmation's repeats: at the ablation's fewer it would be a weaker test
    overruling a stronger one."""
    return max(spec.ablate.repeats, spec.confirm.repeats)


def from_ablation(
    spec: Spec, chosen: space.Config, effects: list[KeyEffect], blocked: list[KeyEffect], ablation: confirm.Runs
) -> Written | None:
    """The written phase's judgement read from the ablation's runs, when they measured its one comparison already:
    the chosen configuration changes one key from Kafka's defaults, the ablation dropped it (its test did not reject)
    and could put it back, so the files are empty, and the ablation's arm without that key is Kafka's defaults,
    measured against the full configuration in blocks of their own after the confirmation chose it. Measuring the
    same two configurations again from nothing would test the same question on new runs (about a minute per search
    here); `measure` only adds what brings them to the confirmation's repeats (`_topped_up`). None when any of that
    does not hold: the phase then runs."""
    keys = ablate.changed_keys(spec, chosen)
    if blocked or len(keys) != 1 or len(effects) != 1:
        return None
    (e,) = effects
    (key, old, _), label = keys[0], f"without:{keys[0][0]}"
    low = e.interval.low if e.interval is not None else None  # above 0: beyond noise, below min_effect (kept)
    if e.key != key or e.beyond_noise or low is None or low > 0 or not ablation.get(label):
        return None
    if ablate.changed_keys(spec, ablate.put_back(chosen, key, old)):  # not what Kafka's defaults arm would run
        return None
    runs = {confirm.RECOMMENDED: list(ablation.get(confirm.RECOMMENDED, [])), confirm.DEFAULTS: list(ablation[label])}
    return replace(judge(runs, [key]), runs_from="ablate")


def settle(judged: Confirmation, effects: list[KeyEffect], blocked: list[KeyEffect], w: Written | None) -> Confirmation:
    """The confirmation `judged` with what the files hold: the keys beyond noise, plus the dropped or not-ablated
    ones the written phase `w` kept as a group (with why); the rest as no measurable effect or not ablated."""
    kept = set(w.kept_as_group) if w else set()
    group = [replace(e, why=w.why_kept) for e in [*effects, *blocked] if w and e.key in kept]
    return replace(
        judged,
        written=w if w is not None else judged.written,
        recommended=tuple([e for e in effects if e.beyond_noise] + group),
        no_measurable_effect=tuple(e for e in effects if not e.beyond_noise and e.key not in kept),
        not_ablated=tuple(b for b in blocked if b.key not in kept),
    )


def judge(runs: confirm.Runs, dropped: list[str]) -> Written:
    """The three arms with their intervals; whether the dropped keys stand in for each other (the full configuration
    beats the written one beyond noise: then they are kept as a group and the full configuration is the one
    written); and the configuration written compared with Kafka's defaults. One family of three one-sided tests
    (full over written, written over the defaults, full over the defaults), fixed before any is read, so Holm's
    procedure holds whichever arm becomes the headline. Without a WRITTEN arm the files are empty and the defaults'
    arm is the written configuration: one test, full over the defaults. Each test's second arm counts its runs that
    held no rate at their bounds (confirm.at_most). `headline` is the label of the arm the report's rate, interval
    and operating point are read from."""
    arms = {label: confirm.candidate(label, reps) for label, reps in runs.items()}
    vals = {label: confirm.values(c) for label, c in arms.items()}
    full, dflt = confirm.RECOMMENDED, confirm.DEFAULTS
    mine = WRITTEN if WRITTEN in arms else dflt
    order = [(full, mine), (mine, dflt), (full, dflt)] if mine == WRITTEN else [(full, dflt)]
    # the arm each test is against at its no-rate runs' bounds, as high as they could have scored (confirm.at_most)
    pairs = [(vals.get(a, []), confirm.at_most(list(runs.get(b, [])))) for a, b in order]
    tests = stats.holm(
        [stats.p_greater(a, b) if len(a) >= 2 and len(b) >= 2 else None for a, b in pairs], confirm.ALPHA
    )
    stand_in, broke = tests[0][0], not arms[mine].eligible
    # one run of the full configuration held a rate: the test cannot be made, and dropping keys is not shown harmless
    untested = mine == WRITTEN and len(vals.get(full, [])) == 1
    head = full if stand_in or broke or untested else mine
    i = next((k for k, (a, b) in enumerate(order) if a == head and b == dflt), None)  # None: the defaults lead
    vs = None if i is None else _comparison(*pairs[i], *tests[i], confirm.at_bound(runs.get(dflt, [])))
    if vs is not None and i is not None:
        vs = replace(vs, ratio=stats.ratio(*pairs[i], 1 - 2 * tests[i][1]))
    why_kept = (
        BROKE
        if broke
        else "together they carry an effect none showed alone: they stand in for each other"
        if stand_in
        else UNTESTED
        if untested
        else None
    )
    full_head = head == full
    return Written(
        tuple(arms.values()),
        head,
        dropped=() if full_head else tuple(dropped),
        kept_as_group=tuple(dropped) if full_head else (),
        why_kept=why_kept,
        full_vs_written=_comparison(*pairs[0], *tests[0], confirm.at_bound(runs.get(order[0][1], []))),
        vs_defaults=vs,
    )


def _comparison(a: list[float], b: list[float], rejected: bool, alpha: float, at_bound: int) -> Comparison | None:
    if len(a) < 2 or len(b) < 2:
        return None
    return Comparison(stats.difference(a, b, 1 - 2 * alpha), rejected, alpha, at_bound=at_bound)


def headline(judged: Confirmation | None) -> Arm | None:
    """The arm the headline reads: the written configuration's (or the full one's when its keys stand in for each
    other), from the written phase; None when that phase did not run (the confirmation's choice is then written)."""
    return judged.written.arm() if judged and judged.written else None


def best(judged: Confirmation | None) -> Best | None:
    """summary.json's `best` from the written phase's headline arm; None when that phase did not run."""
    a = headline(judged)
    if a is None:
        return None
    source = "as written: the recommended files' configuration, in its own randomized blocks"
    return Best(a.mean_mb_s, a.config, source, a.label, a.interval, a.trial_ids)
