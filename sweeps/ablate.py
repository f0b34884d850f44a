"""The ablation of the recommended configuration: per key in which it differs from Kafka's defaults, the
configuration with that key put back, `ablate.repeats` times, in new randomized blocks with the recommended
configuration itself (none of the confirmation's runs reused; sweeps.confirm.repeat runs them). A key's effect is
recommended − ablated, with Welch's interval at Holm's level across the keys; it is recommended only when the
interval lies above 0 and the effect is at least `ablate.min_effect` of the recommended rate (a smaller one is real
but not worth a setting).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from brokerconf import catalogue
from core import stats
from records.confirmation import KeyEffect
from sweeps import space
from sweeps.confirm import ALPHA, RECOMMENDED, Runs, at_bound, at_most
from sweeps.spec import Spec


def changed_keys(spec: Spec, cfg: Mapping[str, Any]) -> list[tuple[str, str | None, str]]:
    """(key, the defaults' value (None: unset), recommended value) for every key the configuration changes.

    The defaults' value is Kafka's, except for the workload's own counts (partitions, producers, consumers),
    which are the spec's workload, as Kafka's defaults candidate runs them."""
    base = space.baseline(spec, "kafka-defaults")
    w = spec.base_workload()
    out = []
    for k in sorted(cfg):
        field = catalogue.param(k).workload_field
        old = base.get(k, getattr(w, field) if field else catalogue.param(k).default)
        unset = old is None and str(cfg[k]) in ("", "None")
        if not unset and (old is None or str(old) != str(cfg[k])):
            out.append((k, None if old is None else str(old), str(cfg[k])))
    return out


def put_back(cfg: Mapping[str, Any], key: str, old: str | None) -> space.Config:
    """`cfg` with `key` back at the defaults' value `old` (changed_keys; None: unset)."""
    back: space.Config = {k: v for k, v in cfg.items() if k != key}
    if old is not None:
        back[key] = int(old) if catalogue.param(key).kind == "int" else old
    return back


def ablations(spec: Spec, cfg: Mapping[str, Any]) -> tuple[list[tuple[str, space.Config]], list[KeyEffect]]:
    """The configurations to measure (label without:<key>), and the keys that cannot be put back alone."""
    todo: list[tuple[str, space.Config]] = []
    blocked: list[KeyEffect] = []
    for key, old, new in changed_keys(spec, cfg):
        back = put_back(cfg, key, old)
        broken = catalogue.broken_rules(back)
        if broken:
            blocked.append(KeyEffect(key, old, new, "; ".join(broken)))
        else:
            todo.append((f"without:{key}", back))
    return todo, blocked


def effects(spec: Spec, cfg: Mapping[str, Any], runs: Runs) -> list[KeyEffect]:
    """Per changed key: recommended − without it, from the ablation's own runs only (the confirmation's runs of the
    recommended configuration chose it as the winner, so they read high: they are never reused to judge it).

    The keys are one family: each key's one-sided test (does it help?) is Holm's, at ALPHA family-wise, and its
    interval is printed at the two-sided level whose lower bound is that test's. A key is recommended when its test
    rejects (the interval lies above 0) and its effect is at least `ablate.min_effect` of the recommended rate. A
    run without the key where no rate held counts at its bound (`at_most`), not as a missing figure. A key without
    which most runs broke a constraint is needed whatever the rates say."""
    mine = runs.get(RECOMMENDED, [])
    ref = [r.value for r in mine if r.value is not None]
    keys = changed_keys(spec, cfg)
    arms = [at_most(runs.get(f"without:{key}", [])) for key, _, _ in keys]  # a run with no rate held: its bound
    tests = stats.holm(
        [stats.p_greater(ref, vals) if len(vals) >= 2 and len(ref) >= 2 else None for vals in arms], ALPHA
    )
    rate = statistics.fmean(ref) if ref else 0.0
    floor = spec.ablate.min_effect * rate
    out = []
    for (key, old, new), vals, (rejected, alpha) in zip(keys, arms, tests, strict=True):
        reps = runs.get(f"without:{key}", [])
        ids = tuple(r.trial_id for r in reps) + tuple(r.trial_id for r in mine)
        row = KeyEffect(key, old, new, "fewer than 2 repeats each side", len(vals) + len(ref), alpha, ids)
        if len(vals) >= 2 and len(ref) >= 2:
            d = stats.difference(ref, vals, 1 - 2 * alpha)
            beyond = rejected and d.estimate >= floor
            why = "" if beyond else _why(d, rejected, floor, rate, spec.ablate.min_effect)
            if n := at_bound(reps):
                why = "; ".join(x for x in (why, f"{n} run(s) without it held no rate: each counted at its bound") if x)
            row = replace(row, why=why, effect_mb_s=d.estimate, interval=d, beyond_noise=beyond)
        broke = [r for r in reps if not r.feasible]
        if len(broke) * 2 > len(reps) and not row.beyond_noise:  # needed to hold the constraints
            why = "; ".join(sorted({v for r in broke for v in r.violations}))
            row = replace(row, beyond_noise=True, why=f"without it, {len(broke)} of {len(reps)} runs: {why}")
        out.append(row)
    return out


def _why(d: stats.Interval, rejected: bool, floor: float, rate: float, share: float) -> str:
    """Why a key whose effect is not beyond noise (or too small) is not recommended, in words."""
    if rejected:
        return f"beyond noise but below ablate.min_effect ({share:.0%} of the recommended rate): no practical effect"
    if d.high is not None and d.high < 0:
        return "putting it back measured better: the key costs throughput here"
    return (
        f"not distinguishable from 0 at the family's level (Holm, {ALPHA:.0%} across the keys): no measurable effect"
        + _unresolved(d, floor, rate)
    )


def _unresolved(d: stats.Interval, floor: float, rate: float) -> str:
    """What a difference whose interval includes 0 cannot rule out, when its far end is beyond ablate.min_effect
    (`floor`, MB/s) of the recommended `rate`: a wide interval's "no measurable effect" says little about the key.
    Empty when the interval rules out a practical effect either way."""
    reach = max(abs(d.low or 0.0), abs(d.high or 0.0))
    if reach <= floor:
        return ""
    return (
        f"; with n={d.n} an effect up to {reach:.2f} MB/s ({reach / rate:.0%} of the recommended rate) is not "
        "ruled out: more ablate.repeats narrow the interval"
    )
