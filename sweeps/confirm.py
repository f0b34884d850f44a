"""The confirmation and the ablations: figures with intervals, and only effects that survive the noise.

    confirm   the best `confirm.top` of every stage and every acks=all baseline, plus Kafka's defaults,
              each measured `confirm.repeats` times on the warm cluster in randomized blocks (every block runs
              each once, in a new random order; back to back only to save a rolling restart, `rounds`): the
              recommended configuration is the best mean of these repeats, and the spread of each one's repeats
              is the between-run noise.
    ablate    per key in which the recommended configuration differs from Kafka's defaults: the
              recommended configuration with that key put back, in new randomized blocks with the recommended
              configuration itself (sweeps.ablate judges them).

Every repeat is an independent measurement: its own max-rate probe, its own search (loadgen.search), so no two
repeats share a grid of rates and the spread of the repeats is the between-run noise, the search's resolution
included. That spread is what every interval uses (Welch), and the comparisons of one confirmation, and the keys of
one ablation, are each one family: Holm's procedure holds its family-wise error at ALPHA, and the intervals printed
are at the levels it tested them at.

Within a block, configurations that share their restart-only keys run together, so a block changes
restart-only values as few times as it can (`rounds`): a rolling restart with its warm-up costs about 3 minutes
here (docs/design.md, what a restart-only key costs).

Repeats are Optuna trials of `<study>.confirm` and `<study>.ablate` with the key `<label>@<repeat>`, so a
killed sweep resumes where it stopped and no repeat runs twice.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import optuna

from brokerconf import catalogue
from core import stats
from core.acks import acks
from records.confirmation import DEFAULTS, Arm, Comparison, Confirmation, Noise
from records.summary import Best
from records.trial import TrialMeta
from sweeps import space, storage
from sweeps.attrs import TrialAttrs
from sweeps.spec import Spec
from sweeps.stages import Stage
from sweeps.trial import Outcome

CURRENT = "baseline:current"  # what the cluster and its clients run now (sweeps.current), when measured
RECOMMENDED = "recommended"  # the recommended configuration, among the ablations


@dataclass(frozen=True)
class Repeat:
    """One measured repeat of an arm (a trial of the confirm, ablate or written study), failed ones included."""

    value: float | None  # its sustainable MB/s; None when the run failed or no rate held
    feasible: bool  # it broke no constraint
    violations: tuple[str, ...]  # what it broke, in words
    trial_id: str
    config: Mapping[str, Any]
    rate_msg_s: float | None = None  # the rate it held, msg/s
    below_mb_s: float | None = None  # no rate held: no rate at or above this one (MB/s) held twice in its search


Runs = Mapping[str, list[Repeat]]  # arm label -> its repeats


class Phases(Protocol):
    """What the phases after the search need of a sweep: its spec and folder, its Optuna studies by suffix, one
    measurement recorded as a trial of a study, and whether the time budget is spent (sweeps.engine.Sweep)."""

    spec: Spec
    run_dir: Path

    @property
    def restart_now(self) -> Mapping[str, str]:
        """The restart-only values the brokers run now, as far as the sweep knows."""

    def study(self, suffix: str, stage: Stage | None = None) -> Any: ...

    def measure(self, st: Any, trial: Any, label: str, cfg: space.Config, meta: TrialMeta) -> Outcome: ...

    def out_of_time(self) -> bool: ...


def canonical(cfg: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A configuration as what it changes: keys at Kafka's default dropped, so equal settings compare equal."""
    return tuple(sorted((k, str(v)) for k, v in cfg.items() if str(v) != str(catalogue.param(k).default)))


def arm_as(conf: Confirmation, label: str, config: Mapping[str, Any]) -> Arm | None:
    """The candidate `label`, else the one confirmed with the same configuration (`candidates` measures none twice,
    so a baseline equal to a search's best runs under that label); None when neither was confirmed."""
    key = canonical(config)
    return conf.arm(label) or next((a for a in conf.candidates if canonical(a.config) == key), None)


def acks_all(cfg: Mapping[str, Any]) -> bool:
    return acks(cfg) == "all"


def candidates(sw: Phases) -> list[tuple[str, space.Config]]:
    """Kafka's defaults first, then the best of each stage, then every measured baseline (the feasible ones best
    first); acks=all only, no config twice."""
    spec = sw.spec
    out: list[tuple[str, space.Config]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()

    def add(label: str, cfg: Mapping[str, Any]) -> None:
        key = canonical(cfg)
        if key not in seen and acks_all(cfg):
            seen.add(key)
            out.append((label, dict(cfg)))

    add(DEFAULTS, space.baseline(spec, "kafka-defaults"))
    for stage in spec.stage_list:
        best = [t for t in storage.ranked(sw.study(stage.name)) if acks_all(TrialAttrs.of(t).config)]
        for t in best[: spec.confirm.top]:
            add(f"{stage.name}#{t.number}", TrialAttrs.of(t).config)
    # a baseline that held no rate is confirmed too: it is what the user runs, and its no-rate runs count at their
    # bounds in the comparisons (at_most), where leaving it out would leave the user's question unanswered
    base = sw.study("baselines")
    done = [t for t in base.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    for t in [*storage.ranked(base), *(t for t in done if not storage.feasible(t))]:
        a = TrialAttrs.of(t)
        add(f"baseline:{a.key}", a.config)
    return out


def current_as(sw: Phases, todo: list[tuple[str, space.Config]]) -> str:
    """The label the current configuration is confirmed under among `todo`: its own, or that of the candidate with
    its configuration (candidates measures none twice); CURRENT when it was not measured."""
    base = sw.study("baselines").get_trials(deepcopy=False)
    cur = [a for t in base if t.state == optuna.trial.TrialState.COMPLETE and (a := TrialAttrs.of(t)).key == "current"]
    key = canonical(cur[0].config) if cur else None
    return next((label for label, cfg in todo if canonical(cfg) == key), CURRENT)


def repeat(sw: Phases, phase: str, todo: list[tuple[str, space.Config]], repeats: int) -> dict[str, list[Repeat]]:
    """Measure each configuration of `todo` `repeats` times in randomized blocks; every repeat measured so far."""
    st = sw.study(phase)
    storage.recover_interrupted(st)
    seed = f"{sw.spec.seed or 0}:{phase}"  # a new random order per block, the same one when a sweep resumes
    for r, (label, cfg) in rounds(todo, repeats, canonical(sw.restart_now), seed):
        key = f"{label}@{r}"
        if key in storage.done_keys(st) or sw.out_of_time():
            continue
        trial = st.ask()
        if storage.claim(st, trial, key):
            sw.measure(st, trial, phase, cfg, TrialMeta(confirms=key, repeat=r))
    return measured(st)


def rounds(
    todo: list[tuple[str, space.Config]],
    repeats: int,
    now: tuple[tuple[str, str], ...] = (),
    seed: int | str | None = None,
) -> list[tuple[int, tuple[str, space.Config]]]:
    """The order of the repeats: randomized blocks. Block r measures every configuration once, in a new order
    drawn from `seed` (None: the order of `todo`, rotated), so no arm is always first after a change, the warmest
    or the coldest; the same seed (and `now`) gives the same order, and every repeat is keyed `<label>@<block>`,
    so a resumed sweep measures none twice. Within a block the
    configurations that share their restart-only keys run together, the first block starts with the group the
    brokers run now (`now`, canonical) and each later block with the group the block before ended with (another
    member of it first): a rolling restart costs about 3 minutes with its warm-up, and the first run after it
    meets colder JVMs, so the blocks change restart-only values as few times as they can. A configuration alone
    in its restart group therefore runs twice in a row across a block's end (A B C | C A B): that saves a
    restart, and its second run is not the first after one."""
    rng = random.Random(seed) if seed is not None else None
    group_of = {label: canonical(space.split(cfg)["restart"]) for label, cfg in todo}
    groups: dict[tuple[tuple[str, str], ...], list[tuple[str, space.Config]]] = {}
    for item in todo:
        groups.setdefault(group_of[item[0]], []).append(item)
    order = list(groups)
    out: list[tuple[int, tuple[str, space.Config]]] = []
    for r in range(1, repeats + 1):
        last = out[-1][1] if out else None
        lead = group_of[last[0]] if last else now
        if rng is not None:
            for members in groups.values():
                rng.shuffle(members)
            rng.shuffle(order)
        order = sorted(order, key=lambda g: g != lead)  # stable: the lead group first, the others as they are
        if last is not None:  # another member of the lead group first, when it has one
            members = groups[lead]
            if rng is None:  # the order of `todo`, rotated past the last one measured
                i = members.index(last)
                groups[lead] = members[i + 1 :] + members[: i + 1]
            elif members[0] == last:
                groups[lead] = members[1:] + members[:1]
        for g in order:
            out.extend((r, item) for item in groups[g])
    return out


def measured(st: Any) -> dict[str, list[Repeat]]:
    """label -> its repeats, failed ones included (value None)."""
    out: dict[str, list[Repeat]] = {}
    for t in storage.counted(st):
        a = TrialAttrs.of(t)
        if a.label is None or t.state.name == "RUNNING":
            continue
        ok = t.state.name == "COMPLETE"
        why = a.violations or (a.fail_reason,)
        out.setdefault(a.label, []).append(
            Repeat(
                value=t.values[0] if ok and not a.no_rate_held else None,
                feasible=ok and storage.feasible(t),
                violations=tuple(str(v) for v in why if v),
                trial_id=a.trial_id,
                config=a.config,
                rate_msg_s=a.rate_msg_s if ok else None,
                below_mb_s=a.below_mb_s if ok and a.no_rate_held else None,
            )
        )
    return out


ALPHA = 0.05  # the family-wise error of one confirmation's comparisons, and of one ablation's keys (Holm)


def candidate(label: str, reps: list[Repeat]) -> Arm:
    """One configuration's repeats: their values, trials and rates, its interval, and whether every run held."""
    vals = [r.value for r in reps if r.value is not None]
    iv = stats.mean_interval(vals) if vals else None
    return Arm(
        label,
        reps[0].config,
        tuple(r.value for r in reps),
        tuple(r.trial_id for r in reps),
        tuple(r.rate_msg_s for r in reps),
        iv,
        iv.estimate if iv else None,
        bool(reps) and all(r.feasible for r in reps),
        tuple(sorted({v for r in reps if not r.feasible for v in r.violations})),
    )


def at_most(reps: list[Repeat]) -> list[float]:
    """The repeats' rates, a run where no rate held at its bound (`below_mb_s`), a failed one left out: as high as
    it could have scored, which understates a one-sided test's difference (in the mean) instead of dropping it."""
    return [v for r in reps if (v := r.value if r.value is not None else r.below_mb_s) is not None]


def at_bound(reps: Iterable[Repeat]) -> int:
    """How many of the repeats held no rate and count at their bound in at_most."""
    return sum(r.value is None and r.below_mb_s is not None for r in reps)


def values(arm: Arm) -> list[float]:
    """The arm's measured repeats (the failed ones left out)."""
    return [v for v in arm.repeats if v is not None]


def bounded(reps: list[Repeat]) -> bool:
    """Whether an arm can be compared with as a baseline: every repeat held its constraints, or held no rate and has
    its bound (at_most). A run that failed outright has neither: its arm is left out of the comparisons."""
    return bool(reps) and all(r.feasible or (r.value is None and r.below_mb_s is not None) for r in reps)


def compared(best: list[float], reps: list[Repeat], rejected: bool, alpha: float, label: str) -> Comparison:
    """The chosen configuration's runs `best` against another arm's `reps`, at `alpha` (Holm's level of the test that
    `rejected` or not): difference and ratio, the other's no-rate runs at their bounds."""
    other = at_most(reps)
    return Comparison(
        stats.difference(best, other, 1 - 2 * alpha),
        rejected,
        alpha,
        label,
        stats.ratio(best, other, 1 - 2 * alpha),
        at_bound(reps),
    )


def summary(runs: Runs, current: str = CURRENT) -> Confirmation:
    """Per candidate its repeats and interval; the between-run noise; the chosen one (the best mean), compared with
    the runner-up, with Kafka's defaults and with the current configuration (the arm `current`, see current_as)
    when it was measured. Those comparisons are one family, an arm in it once: each is one-sided (is the chosen one
    better?) and tested by Holm's procedure at ALPHA, and its difference and ratio are printed at the two-sided
    level whose lower bound is that test's (so "distinguishable" is the interval lying above 0, said once)."""
    cands = [candidate(label, reps) for label, reps in runs.items()]
    cands.sort(key=lambda c: -(c.mean_mb_s if c.eligible and c.mean_mb_s is not None else -1))
    pooled = stats.pooled_sd([values(c) for c in cands if c.eligible and None not in c.repeats])
    noise = Noise(
        pooled[0] if pooled else None,
        pooled[1] if pooled else 0,
        "pooled standard deviation of each candidate's repeats (same configuration, other runs between them; each "
        "repeat an independent search, so the search's resolution is in it)",
    )
    ok = [c for c in cands if c.eligible]
    # a baseline is compared with when its runs held or have their bounds (a no-rate run understates the lead)
    dflt, cur = (next((c for c in cands if c.label == b and bounded(list(runs[b]))), None) for b in (DEFAULTS, current))
    family: list[tuple[str, Arm]] = []
    if len(ok) >= 2:
        family.append(("runner_up", ok[1]))
    for name, other in (("vs_defaults", dflt), ("vs_current", cur)):
        if ok and other is not None and ok[0] is not other and all(o is not other for _, o in family):
            family.append((name, other))
    best = values(ok[0]) if ok else []
    tests = stats.holm([stats.p_greater(best, at_most(list(runs[other.label]))) for _, other in family], ALPHA)
    found = {
        name: compared(best, list(runs[other.label]), rejected, alpha, other.label)
        for (name, other), (rejected, alpha) in zip(family, tests, strict=True)
    }
    for name, other in (("vs_defaults", dflt), ("vs_current", cur)):
        if name not in found and other is not None and (same := next((n for n, o in family if o is other), None)):
            found[name] = found[same]  # the runner-up (or the defaults) is this baseline: one comparison
    if "runner_up" in found:  # a ratio is said against a baseline only
        found["runner_up"] = replace(found["runner_up"], ratio=None)
    return Confirmation(
        tuple(cands),
        ok[0].label if ok else None,
        noise,
        runner_up=found.get("runner_up"),
        vs_defaults=found.get("vs_defaults"),
        vs_current=found.get("vs_current"),
    )


def best(judged: Confirmation | None, final: Any) -> Best | None:
    """The recommended configuration: the confirmation's choice (mean of its repeats, with its interval), or
    the search's best when nothing was confirmed (one run: no interval)."""
    c = judged.arm(None) if judged else None
    if c is not None:
        return Best(c.mean_mb_s, c.config, "confirmation", c.label, c.interval, c.trial_ids)
    r = storage.ranked(final)
    return brief(r[0], "search (not confirmed: one run, no interval)") if r else None


def brief(t: optuna.trial.FrozenTrial, source: str = "") -> Best:
    """One search trial as the summary names a stage's best (one run: its number, values and parameters)."""
    a = TrialAttrs.of(t)
    return Best(
        t.values[0], a.config, source, number=t.number, values=tuple(t.values), params=dict(t.params), record=a.record
    )
