"""The sweep loop: baselines, the stages (Optuna ask/tell), the confirmation of the top trials.

    guard (snapshot broker configs) ─┬─ baselines      kafka-defaults, omb-throughput, confluent-throughput, current
                                     ├─ stage 1..n     ask → assemble config → run_trial → tell
                                     │                 (stage i starts from the best of stage i−1)
                                     ├─ confirm        re-measure the top trials of the last stage
                                     └─ restore        on every exit path (see `brokerconf.guard`)

Everything is in the Optuna storage and `runs/<study>/`, so running the same command again resumes:
completed trials are kept, a trial interrupted by Ctrl-C or kill -9 is run again.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState

from brokerconf import catalogue
from core.acks import acks
from core.errors import EnvironmentProblem
from core.stats import Interval
from loadgen.runner import RawRun, Tick
from records import study as studies
from records.confirmation import Confirmation, KeyEffect
from records.profile import PROFILE, write_profile
from records.snapshot import BrokerSnapshot
from records.study import trial_dir
from records.summary import Baseline, Invocation, StageBest, Summary, write_summary
from records.trial import TrialMeta, read_trial
from sweeps import ablate, attrs, confirm, current, hold, space, storage, timing, written
from sweeps.attrs import TrialAttrs
from sweeps.spec import Spec
from sweeps.stages import Stage
from sweeps.target import SweepTarget
from sweeps.trial import Outcome, run_trial

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


class SweepEvents(Protocol):
    """What a sweep tells whoever shows it (the CLI's live table on a terminal, plain lines otherwise)."""

    def plan(self, spec: Spec) -> None: ...

    def note(self, msg: str) -> None: ...

    def trial_started(self, stage: str, number: int, cfg: Mapping[str, Any]) -> None: ...

    def on_tick(self, raw: RawRun, tick: Tick) -> None: ...

    def trial_finished(self, stage: str, number: int, out: Outcome, ceiling: float | None) -> None: ...

    def extend(self, n: int) -> None: ...


def start_study(run_dir: Path, spec_text: str, target: SweepTarget) -> Path:
    """The study folder before the first trial: the spec as run (secrets masked by the caller), the inventory
    (secret references only) and the profile the trials are held against; returns where the broker-config
    snapshot goes."""
    run_dir.mkdir(parents=True, exist_ok=True)
    studies.write_spec_copy(run_dir, spec_text)
    if target.inventory is not None:
        studies.write_inventory_copy(run_dir, target.inventory.public())
    if target.profile:  # the ceilings this study ran against (each trial's result.json has it too)
        write_profile(run_dir / PROFILE, target.profile)
    return studies.snapshot_path(run_dir, target.tag())


def make_sampler(spec: Spec, stage: Stage) -> optuna.samplers.BaseSampler:
    n = stage.trials
    if spec.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=max(2, n // 3), multivariate=True)
    if spec.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=spec.seed, population_size=max(4, min(50, n // 3)))
    if spec.sampler == "random":
        return optuna.samplers.RandomSampler(seed=spec.seed)
    try:
        import torch  # noqa: F401  (GPSampler needs it)
    except ImportError:
        raise EnvironmentProblem("sampler gp needs PyTorch: pip install torch (or use sampler: tpe)") from None
    return optuna.samplers.GPSampler(seed=spec.seed)


class Sweep:
    def __init__(
        self,
        spec: Spec,
        target: SweepTarget,
        run_dir: Path,
        snapshot: BrokerSnapshot,
        *,
        storage_url: str | None,
        events: SweepEvents,
        mark_dirty: Callable[[], None],
    ) -> None:
        self.spec = spec
        self.target = target
        self.run_dir = run_dir
        self.snapshot = snapshot
        self.view = events
        self.mark_dirty = mark_dirty
        self.storage = storage.open_storage(storage_url, run_dir)
        self.started = time.monotonic()
        self.measured_s = 0.0
        self.trials_run = 0
        self.trial_dirs: list[Path] = []  # this invocation's, for the breakdown of its wall clock (sweeps.timing)
        self.restarts = 0
        # the restart-only values the last trial this invocation measured ran with: the brokers run them now
        self.restart_now: dict[str, str] = {}

    # ---- helpers -----------------------------------------------------------------------------------
    def study(self, suffix: str, stage: Stage | None = None) -> Any:
        sampler = make_sampler(self.spec, stage) if stage else optuna.samplers.RandomSampler()
        return storage.study(self.storage, f"{self.spec.name}.{suffix}", self.spec.directions, sampler)

    def out_of_time(self) -> bool:
        m = self.spec.budget.minutes
        return m is not None and time.monotonic() - self.started > m * 60

    def measure(self, st: Any, trial: Any, label: str, cfg: space.Config, meta: TrialMeta) -> Outcome:
        rec = trial_dir(self.run_dir, label, trial.number)
        attrs.started(trial, storage.OWNER, cfg, rec)
        self.view.trial_started(label, trial.number, cfg)
        self.restart_now = space.split(cfg)["restart"]
        try:
            out = run_trial(
                self.spec,
                self.target,
                cfg,
                self.snapshot,
                rec,
                (label, trial.number),
                meta,
                say=self.view.note,
                on_tick=self.view.on_tick,
                on_applied=self.mark_dirty,
            )
        except KeyboardInterrupt:
            # Not counted, and queued again with the same parameters: the next run (or another worker
            # sharing the study) measures it.
            attrs.mark(trial, attrs.INTERRUPTED)
            st.tell(trial, state=TrialState.FAIL)
            if trial.params and meta.queued_again:
                st.enqueue_trial(dict(trial.params))
            raise
        self.trials_run += 1
        self.trial_dirs.append(rec)
        self.restarts += out.restarts
        self.measured_s += out.measure_s if out.ok else 0.0
        attrs.finished(
            trial,
            restarts=out.restarts,
            probe_msg_s=out.probe_msg_s,
            rate_msg_s=out.rate_msg_s,
            no_rate_held=out.no_rate_held,  # the objective's 0.0 is for the sampler: the figure does not exist
            below_mb_s=out.below_mb_s,
            windows_mb_s=out.windows_mb_s if out.ok else None,
            violations=out.violations if out.ok else None,
            fail_reason=None if out.ok else out.fail_reason,
        )
        if out.ok:
            for name, value in out.constraints.items():
                trial.set_constraint(name, value)  # the samplers steer away from infeasible regions
            st.tell(trial, [out.values[o] for o in self.spec.objectives])
        else:
            st.tell(trial, state=TrialState.FAIL)
            if not (out.fail_reason or "").startswith("rules:"):
                self._heal(out.fail_reason or "")
        self.view.trial_finished(label, trial.number, out, self.target.ceiling_mb_s)
        return out

    def _heal(self, why: str) -> None:
        self.view.note(f"trial failed ({why}); healing the cluster")
        try:
            self.target.wait_whole(self.view.note)
        except Exception as e:
            raise EnvironmentProblem(f"the cluster did not recover after a failed trial: {e}") from None

    # ---- phases ------------------------------------------------------------------------------------
    def baselines(self) -> None:
        st = self.study("baselines")
        storage.recover_interrupted(st)
        for name in self.spec.baselines:
            if name in storage.done_keys(st) or self.out_of_time():
                continue
            trial = st.ask()
            if not storage.claim(st, trial, name):
                continue
            cfg = self._current() if name == current.NAME else space.baseline(self.spec, name)
            self.measure(st, trial, f"baseline-{name}", cfg, TrialMeta(baseline=name))

    def _current(self) -> space.Config:
        """The `current` baseline's configuration, read from the pre-sweep snapshot, the topic named and the client
        files (sweeps.current); says which of the files' keys kafkatune leaves out."""
        topic = self.spec.current.topic if self.spec.current else None
        parts = current.topic_partitions(self.target.configs.admin, topic) if topic else None
        cfg, left_out = space.current_baseline(self.spec, self.snapshot, parts)
        if left_out:
            self.view.note(f"current: the client files' {', '.join(left_out)} are not swept keys: not applied")
        return cfg

    def stages(self) -> list[StageBest]:
        carried: space.Config = {}
        used = 0
        out = []
        for stage in self.spec.stage_list:
            st = self.study(stage.name, stage)
            for again in storage.recover_interrupted(st):
                st.enqueue_trial(again.params)
            want = stage.trials
            if self.spec.budget.trials is not None:
                want = min(want, max(0, self.spec.budget.trials - used))
            while len(storage.counted(st)) < want and not self.out_of_time():
                trial = self._ask(st, stage)
                if len([t for t in storage.counted(st) if t.number < trial.number]) >= want:
                    storage.release(st, trial)  # another worker took the last one
                    break
                suggested = space.suggest(trial, stage)
                cfg = space.assemble(self.spec, stage.fixed, carried, suggested)
                self.measure(st, trial, stage.name, cfg, TrialMeta(suggested=suggested, carried=dict(carried)))
            used += len(storage.counted(st))
            best = storage.ranked(st)
            if best:
                carried = {**carried, **best[0].params}
            out.append(
                StageBest(
                    stage.name,
                    len(storage.counted(st)),
                    sum(1 for t in st.get_trials(deepcopy=False) if t.state == TrialState.FAIL),
                    confirm.brief(best[0]) if best else None,
                    dict(carried),
                    tuple(confirm.brief(t) for t in st.best_trials) if len(self.spec.objectives) > 1 else None,
                )
            )
        return out

    def _ask(self, st: Any, stage: Stage) -> Any:
        """Ask for a trial; restart-only keys stay as they are for `trials_per_restart` trials in a row."""
        restart_keys = [k for k in stage.params if k in catalogue.RESTART_KEYS]
        group = self.spec.measurement.trials_per_restart
        done = sorted(storage.counted(st), key=lambda t: t.number)
        base = make_sampler(self.spec, stage)
        if restart_keys and done and group > 1:
            last = {k: done[-1].params.get(k) for k in restart_keys}
            run = 0
            for t in reversed(done):
                if {k: t.params.get(k) for k in restart_keys} != last:
                    break
                run += 1
            if run < group and None not in last.values():
                st.sampler = optuna.samplers.PartialFixedSampler(last, base)
                return st.ask()
        st.sampler = base
        return st.ask()

    def confirm(self) -> Confirmation | None:
        """The confirmation, then the ablations of the chosen configuration (sweeps.confirm)."""
        spec = self.spec
        if not spec.confirm.top:
            return None
        todo = confirm.candidates(self)
        self.view.note(
            f"confirmation: {len(todo)} configuration(s) × {spec.confirm.repeats} runs, in randomized blocks: "
            + ", ".join(label for label, _ in todo)
        )
        confirmed = confirm.repeat(self, "confirm", todo, spec.confirm.repeats)
        judged = confirm.summary(confirmed, confirm.current_as(self, todo))
        chosen = dict(todo).get(judged.chosen or "")
        effects: list[KeyEffect] = []
        blocked: list[KeyEffect] = []
        runs: confirm.Runs = {}
        if chosen is not None and judged.chosen != confirm.DEFAULTS:
            if spec.ablate.repeats:
                without, blocked = ablate.ablations(spec, chosen)
                if without:
                    self.view.extend((len(without) + 1) * spec.ablate.repeats)
                    self.view.note(
                        f"ablations: {len(without)} key(s) put back one at a time, × {spec.ablate.repeats} runs, "
                        "in randomized blocks with as many of the recommended configuration (not the confirmation's)"
                    )
                    arms = [(confirm.RECOMMENDED, chosen), *without]
                    runs = confirm.repeat(self, "ablate", arms, spec.ablate.repeats)
                    effects = ablate.effects(spec, chosen, runs)
            else:
                blocked = [
                    KeyEffect(k, o, n, "not ablated (ablate.repeats: 0)")
                    for k, o, n in ablate.changed_keys(spec, chosen)
                ]
        w = written.measure(self, chosen, effects, blocked, self.view, runs) if chosen is not None and effects else None
        judged = written.settle(judged, effects, blocked, w)  # what the files hold: beyond noise, or kept as a group
        if (candidate := judged.headline()) is not None:
            op = hold.operating_point(self, candidate, self.view.extend)
        elif spec.sustainable and spec.hold.tries:  # no candidate held in every repeat: say why, from the tails
            ids = [tid for c in judged.candidates for tid in c.trial_ids]
            why = "no configuration held a rate within the SLO in every repeat"
            op = hold.refused(why, hold.tail_causes(self.run_dir, ids))
        else:
            op = None
        return replace(judged, operating_point=op)

    # ---- the whole sweep ---------------------------------------------------------------------------
    def run(self) -> Summary:
        self.view.plan(self.spec)
        self.baselines()
        stages = self.stages()
        summary = self.summarize(stages, self.confirm())
        write_summary(self.run_dir, summary)
        return summary

    def summarize(self, stages: list[StageBest], judged: Confirmation | None) -> Summary:
        """summary.json from what the phases left: the baselines, the stages, the confirmation and the time."""
        base_st = self.study("baselines")
        baselines = {}
        for t in base_st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if (a := TrialAttrs.of(t)).key is not None:
                baselines[a.key] = Baseline(t.values[0], a.config, a.windows_mb_s, a.record)
        best = written.best(judged) or confirm.best(judged, self.study(self.spec.stage_list[-1].name))
        ceiling = self.target.ceiling_mb_s
        w = judged.written if judged else None
        arms = w.arms if w else judged.candidates if judged else ()
        dflt = next((c for c in arms if c.label == confirm.DEFAULTS), None)  # beside the headline's arm
        defaults = dflt.mean_mb_s if dflt else (b.mb_s if (b := baselines.get("kafka-defaults")) else None)
        vs = w.vs_defaults if w else judged.vs_defaults if judged else None
        ratio = vs.ratio if vs else None
        mb_s = best.mb_s if best else None
        wall = time.monotonic() - self.started
        docs = [d for p in self.trial_dirs if (d := read_trial(p))]
        s = self.spec
        if ratio is None and best and mb_s is not None and defaults and best.label != confirm.DEFAULTS:
            ratio = Interval(mb_s / defaults, None, None, 2)  # two single runs: no interval
        return Summary(
            study=s.name,
            objective=s.objective,
            objectives=tuple(s.objectives),
            plan=s.plan,
            slo=s.slo.to_json() if s.sustainable else None,
            search=s.search.model_dump() if s.sustainable else None,
            ceiling_mb_s=ceiling,
            baselines=baselines,
            stages=tuple(stages),
            confirmation=judged,
            recommended=judged.recommended if judged else (),
            no_measurable_effect=judged.no_measurable_effect if judged else (),
            noise=judged.noise if judged else None,
            operating_point=judged.operating_point if judged else None,
            defaults_mb_s=defaults,
            best=best,
            best_fraction_of_ceiling=(mb_s / ceiling) if mb_s is not None and ceiling else None,
            best_vs_defaults=ratio,
            trials_to_95pct_of_best=self._trials_to(0.95 * mb_s) if mb_s is not None else None,
            restarts=sum(TrialAttrs.of(t).restarts for s in self._all_studies() for t in s.get_trials(deepcopy=False)),
            this_invocation=Invocation(
                self.trials_run,
                wall,
                self.measured_s,
                (1 - self.measured_s / wall) if wall and self.trials_run else None,
                timing.breakdown(docs, wall),
                timing.warmup_check(docs, self.spec.measurement.warmup_s),
            ),
        )

    def _all_studies(self) -> list[Any]:
        names = ["baselines", *[s.name for s in self.spec.stage_list], "confirm", "ablate", "written", "hold"]
        return [self.study(n) for n in names]

    def _trials_to(self, level: float) -> int | None:
        """How many trials (baselines and stages, in the order run) until one with acks=all reached `level`."""
        studies = self._all_studies()[:-4]  # the search's: not the phases after it
        trials = sorted(
            (
                t
                for s in studies
                for t in s.get_trials(deepcopy=False)
                if t.state in (TrialState.COMPLETE, TrialState.FAIL)
            ),
            key=lambda t: t.datetime_start or datetime.min,
        )
        for i, t in enumerate(trials, 1):
            if t.state == TrialState.COMPLETE and acks(TrialAttrs.of(t).config) == "all" and t.values[0] >= level:
                return i
        return None
