"""One trial, following the trial protocol of docs/design.md.

apply configs (broker: dynamic per broker id, restart-only by rolling restart) -> read them back ->
fresh topic -> warm-up -> k measurement windows at max rate -> stop, drain -> acknowledged == consumed ->
delete the topic -> (objective sustainable_mb_s: the search, loadgen.search, under the max rate just
measured: every trial and every repeat probes for itself) -> write the record. The record (`trial.json`,
schema_version) sits next to the max-rate run's files (`result.json`, `samples.parquet`,
`broker_metrics.parquet`) in `runs/<study>/trials/<id>/`; the search run's are in its `ramp/` folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from brokerconf import catalogue
from core.acks import acks
from core.typed import to_json
from faults.disturbed import disturbances, nothing_consumed
from faults.inject import Injector
from loadgen import brokerside, runner, search, sustainable
from loadgen import result as res
from loadgen.runner import RawRun, Tick
from loadgen.sustainable import Sustainable
from loadgen.warmup import SHAPES, JitBusyWatch, WarmUp, warm_up
from loadgen.workload import Workload
from records.confirmation import Try
from records.result import RunSummary
from records.run import write_run
from records.snapshot import BrokerSnapshot
from records.trial import SEARCH_RUN, TrialMeta, TrialRecord, write_trial
from sweeps import space
from sweeps.protocol import (
    MB,
    constraints,
    measured,
    objective_values,
    or_inf,
    trial_workload,
    warmup_curve,
    window_rates,
)
from sweeps.spec import Spec
from sweeps.target import SweepTarget


@dataclass
class Outcome:
    """What a trial measured, in the units the objectives use."""

    ok: bool
    record_dir: Path
    # sustainable_mb_s (0.0 when no rate held), throughput_mb_s (max rate), p99_publish_ms, p99_e2e_ms (at the
    # sustainable rate when that is the objective; inf when not measured: the record says None and why)
    values: dict[str, float] = field(default_factory=dict)
    windows_mb_s: list[float] = field(default_factory=list)
    constraints: dict[str, float] = field(default_factory=dict)  # ≤ 0 feasible (Optuna's convention)
    violations: list[str] = field(default_factory=list)
    restarts: int = 0
    fail_reason: str | None = None
    measure_s: float = 0.0
    total_s: float = 0.0
    probe_msg_s: float | None = None  # the max rate the search ran under (the trial's own max-rate run)
    at_top: bool = False  # the search held at its cap: that max rate was too low to bound it
    no_rate_held: str | None = None  # why the sustainable rate is not a figure (the sampler is told 0.0)
    below_mb_s: float | None = None  # no rate held: no rate at or above this one held twice (loadgen.search)
    rate_msg_s: float | None = None  # the sustainable rate's step (msg/s), or the operating-point run's rate
    record: TrialRecord | None = None


def run_trial(
    spec: Spec,
    target: SweepTarget,
    cfg: Mapping[str, int | str],
    snapshot: BrokerSnapshot,
    out_dir: Path,
    which: tuple[str, int],
    meta: TrialMeta,
    *,
    say: Callable[[str], None],
    on_tick: Callable[[RawRun, Tick], None] | None = None,
    on_applied: Callable[[], None] | None = None,
) -> Outcome:
    """Apply `cfg`, measure, write the record of trial `which` (stage or phase, number) in `out_dir`, with what the
    phase says of it (`meta`). Raises only on Ctrl-C; failures are outcomes."""
    t = _Trial(spec, target, cfg, out_dir, which, meta, say)
    try:
        t.apply(snapshot, on_applied)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            t_attempt = time.monotonic()
            t.last_attempt = attempt == MAX_ATTEMPTS
            t.measure(on_tick)
            why = t.why_again()
            if why is None:
                break
            last = attempt == MAX_ATTEMPTS
            if why == "jit_busy" and last:  # the compilers never went quiet: the last run stands, with its warning
                say(f"the brokers still compiled in all {MAX_ATTEMPTS} runs: keeping the last, with its JIT warning")
                break
            entry = t.set_aside(attempt, why)
            if last:
                t.outcome.ok = False
                t.outcome.fail_reason = f"disturbed in all {MAX_ATTEMPTS} attempts: {'; '.join(t.disturbed)}"
                break
            if why == "disturbed":
                say(f"trial disturbed by what it did not plan ({'; '.join(t.disturbed)}): measuring it again")
                target.wait_whole(say)
            else:
                cut = "" if t.stopped_at is None else f" (the run stopped {t.stopped_at} s into its window)"
                say(f"{t.jit_busy}{cut}: warming them until their compilers are quiet, then measuring it again")
                t.phase = "warm-up before measuring again"
                entry["warm_up"] = to_json(t.warm_up(spec.measurement.jit_warmup_s, own_load=True))
            entry["s"] = round(time.monotonic() - t_attempt, 1)
            t.rerun()
    except KeyboardInterrupt:
        write_trial(out_dir, replace(t.record, state="interrupted", total_s=time.monotonic() - t.t_start))
        raise
    except Exception as e:  # a trial that breaks is a result, not the end of the sweep
        t.outcome.fail_reason = f"{t.phase}: {type(e).__name__}: {e}".strip()
    out = t.outcome
    out.total_s = time.monotonic() - t.t_start
    out.record = replace(
        t.record, state="complete" if out.ok else "failed", fail_reason=out.fail_reason, total_s=out.total_s
    )
    write_trial(out_dir, out.record)
    return out


# A trial whose window shows an event it did not plan (faults.disturbed: a broker restarting, ISR shrinking, the
# controller moving) is measured again, at most this many times in all, so its dip never reaches the optimizer; so
# is one whose window found the brokers' JIT compiling (loadgen.brokerside.jit_busy), after a warm-up with its own
# settings (measurement.jit_warmup_s; 0: not again; the last attempt is kept, with its warning). The record keeps
# each attempt set aside under `disturbed` or `jit_busy`.
MAX_ATTEMPTS = 3


class _Trial:
    """The steps of one trial; `phase` names the step a failure happened in, `record` what is known so far."""

    def __init__(
        self,
        spec: Spec,
        target: SweepTarget,
        cfg: Mapping[str, int | str],
        out_dir: Path,
        which: tuple[str, int],
        meta: TrialMeta,
        say: Callable[[str], None],
    ) -> None:
        self.spec, self.target, self.cfg, self.out_dir, self.say = spec, target, cfg, out_dir, say
        self.hold_msg_s = meta.hold_msg_s  # an operating-point run (sweeps.hold)
        self.t_start = time.monotonic()
        self.groups = space.split(cfg)
        self.outcome = Outcome(False, out_dir)
        g = self.groups
        # what is known so far; its state and total_s are set when the trial ends (run_trial)
        applied = {"producer": g["producer"], "consumer": g["consumer"], "workload": g["workload"]}
        self.record = TrialRecord.begun(spec.name, which, spec.objective, dict(cfg), applied, meta)
        self.phase = "apply"
        self.disturbed: list[str] = []  # the current attempt's unplanned events (faults.disturbed)
        self.jit_busy: str | None = None  # the current attempt's brokers still compiling (loadgen.brokerside.jit_busy)
        self.stopped_at: int | None = None  # the window's second a JitBusyWatch stopped the attempt's run at
        self.last_attempt = False  # the current attempt is the last: it stands whatever the JIT did

    def why_again(self) -> str | None:
        """Why this attempt is not the trial's measurement: "disturbed", "jit_busy" (only when the spec measures
        such a trial again), or None."""
        if self.disturbed:
            return "disturbed"
        if self.jit_busy and self.spec.measurement.jit_warmup_s:
            return "jit_busy"
        return None

    def set_aside(self, attempt: int, why: str) -> dict[str, object]:
        """Keep an attempt's events and figures in the record under `why`; they feed nothing else."""
        entry: dict[str, object] = {
            "attempt": attempt,
            "events": list(self.disturbed) if why == "disturbed" else [self.jit_busy],
            "values": dict(self.outcome.values),
            "measured": self.record.measured,
        }
        if self.stopped_at is not None:  # its windows' figures cover this much of them only
            entry["stopped_at_s"] = self.stopped_at
        r = self.record
        if why == "disturbed":
            self.record = replace(r, disturbed=[*(r.disturbed or ()), entry])
        else:
            self.record = replace(r, jit_busy=[*(r.jit_busy or ()), entry])
        return entry

    def warm_up(self, cap_s: float, *, own_load: bool = False) -> WarmUp:
        """Load the brokers until their JIT is quiet, `cap_s` at the most (loadgen.warmup); `own_load`: as the trial."""
        t, own = self.target, dict(self.workload.producerConfig)
        shapes, paced = ((own,), own) if own_load else (SHAPES, None)
        return warm_up(
            t.bootstrap,
            cap_s,
            say=self.say,
            shapes=shapes,
            paced_shape=paced,
            placements=t.placements,
            common=t.common,
            metrics_urls=t.metrics_urls,
        )

    def rerun(self) -> None:
        restarts = self.outcome.restarts
        self.outcome = Outcome(False, self.out_dir, restarts=restarts)
        self.disturbed, self.jit_busy, self.stopped_at = [], None, None
        self.record = replace(self.record, measured=None, phases_s=None, probe_msg_s=None, faults=None)

    def _run(self, w: Workload, on_tick: runner.View | None, **kw: Any) -> RawRun:
        """One run of `w` on the target (loadgen.runner), quietly."""
        return runner.run(w, self._settings(on_tick), **kw)

    def _settings(self, on_tick: runner.View | None) -> runner.RunSettings:
        """The target's run settings, quiet: the sweep says its own progress."""
        t = self.target
        common = {"bootstrap.servers": t.bootstrap, **t.common}
        return runner.RunSettings(common, t.placements, t.metrics_urls, on_tick).quiet()

    def _build(self, raw: RawRun, found: Sustainable | None = None) -> res.RunRecord:
        """A run's record with its tail budget against the spec's SLO (loadgen.tail); a search's over its steps that
        held, and each step's own into `found`."""
        slo, secs = self.spec.slo.p99_e2e_ms, found.tail_seconds() if found is not None else None
        if found is not None and slo is not None:
            res.judge_step_tails(raw, found, slo)
        return res.build(raw, self.target.profile, {"client": "confluent-kafka"}, slo, secs)

    def _check_disturbed(self, rec: res.RunRecord) -> None:
        """What the run's window shows that nobody planned (faults.disturbed), from every broker scraped, and
        whether their compilers were still busy in it."""
        seconds = rec.broker_seconds()
        self.disturbed += disturbances(seconds, brokers=self.target.metrics_urls or ())
        if said := nothing_consumed(rec.result.summary):
            self.disturbed.append(said)
        if not self.jit_busy and (busy := brokerside.jit_busy(seconds)):
            self.jit_busy = brokerside.jit_busy_words(busy)

    def apply(self, snapshot: BrokerSnapshot, on_applied: Callable[[], None] | None) -> None:
        broken = catalogue.broken_rules(self.cfg)
        if broken:
            self.phase = "rules"  # nothing is applied: the cluster is not touched
            raise ValueError("; ".join(broken))
        self.workload = trial_workload(self.spec, self.cfg, self.groups)
        if on_applied:
            on_applied()  # the snapshot is marked dirty before the first change
        t_apply = time.monotonic()
        applied = self.target.configs.apply(self.groups["dynamic"], self.groups["restart"], snapshot)
        self.outcome.restarts = applied.restarts
        took = time.monotonic() - t_apply
        self.record = replace(self.record, broker_read_back=applied.read_back, restarts=applied.restarts, apply_s=took)
        if applied.restarts and self.spec.measurement.restart_warmup_s:
            self.phase = "warm-up after restart"
            warmed = self.warm_up(self.spec.measurement.restart_warmup_s)
            self.record = replace(self.record, restart_warmup=warmed)

    def measure(self, on_tick: Callable[[RawRun, Tick], None] | None) -> None:
        if self.hold_msg_s is not None:
            self._hold(self.hold_msg_s, on_tick)
            return
        raw = self._max_rate(on_tick)
        if not (self.spec.sustainable and self.outcome.ok) or self.stopped_at is not None:
            return
        self.phase = "sustainable-rate search"
        u = sustainable.probe_rate(raw)
        self.outcome.probe_msg_s = u
        self.record = replace(self.record, probe_msg_s=u)
        self._search(u, self.out_dir / SEARCH_RUN, on_tick)

    def _max_rate(self, on_tick: Callable[[RawRun, Tick], None] | None) -> RawRun:
        self.phase = "run"
        t, m = self.target, self.spec.measurement
        t_run = time.monotonic()
        planned = self.spec.fault_list()
        inj = Injector(t.testbed, planned, say=self.say) if planned and t.testbed is not None else None
        w = self.workload if inj is None else self.workload.with_faults()
        # a run whose window can no longer stand for a compiling JIT stops there, unless kept anyway: the last
        # attempt, jit_warmup_s 0, planned faults
        watch = JitBusyWatch() if inj is None and t.metrics_urls and m.jit_warmup_s and not self.last_attempt else None
        try:
            raw = self._run(w, on_tick if inj is None else runner.chain(on_tick, inj.on_tick), stop_when=watch)
        finally:
            if inj is not None:
                self.record = replace(self.record, faults=tuple(inj.finish()))
        t_build = time.monotonic()
        rec = self._build(raw)
        if inj is None:  # a robustness study's faults are planned: what they do is its measurement
            self._check_disturbed(rec)
        else:
            rec = rec._replace(result=replace(rec.result, faults=self.record.faults or ()))
        if watch is not None and raw.stopped_early_at is not None:
            self.stopped_at = watch.cut_at(raw)
            self.jit_busy = self.jit_busy or brokerside.jit_busy_words(watch.busy)
        write_run(self.out_dir, rec)
        phases = {"run": t_build - t_run, "warmup": m.warmup_s, "windows": m.window_s * m.windows}
        self.record = replace(self.record, phases_s={**raw.phases_s, **phases, "record": time.monotonic() - t_build})
        self._judge(rec.result.summary, window_rates(raw, m.window_s, m.windows))
        self.record = replace(self.record, measured={**(self.record.measured or {}), "warmup_curve": warmup_curve(raw)})
        return raw

    def _search(self, u: float, where: Path, on_tick: Callable[[RawRun, Tick], None] | None) -> None:
        """The sustainable rate: a search under the max rate `u` (msg/s) this trial just measured, loadgen.search."""
        s, out = self.spec, self.outcome
        how, slo = s.search.how(), s.slo
        t_search = time.monotonic()
        raw, sr = search.search_run(self.workload, self._settings(on_tick), u, how, slo)
        found = search.conclude(
            Sustainable(slo, how, self.workload.messageSize, u, u * self.workload.messageSize / MB), sr
        )
        found.ramp_s = time.monotonic() - t_search
        for said in found.remeasured:
            self.say(f"re-measured: {said}")
        rec = self._build(raw, found)
        self._check_disturbed(rec)
        write_run(where, rec)
        lost = (rec.result.summary.lost or 0) if acks(self.cfg) != "0" else 0
        held = found.steps[-1] if found.rate_msg_s is not None else None  # the confirming step
        out.values["sustainable_mb_s"] = found.mb_s or 0.0
        out.rate_msg_s = found.rate_msg_s
        out.at_top = found.at_top
        out.no_rate_held = found.note if found.mb_s is None else None
        out.below_mb_s = found.below_mb_s if found.mb_s is None else None
        if out.no_rate_held:  # infeasible: the samplers steer away, a confirmation repeat makes it ineligible
            out.constraints["slo"] = 1.0
            out.violations.append(f"no rate held within the SLO: {found.note}")
        out.values["p99_e2e_ms"] = or_inf(held.p99_e2e_ms if held else None)
        out.values["p99_publish_ms"] = or_inf(held.p99_publish_ms if held else None)
        if (over := lost - self.spec.constraints.max_lost) > 0:
            out.constraints["lost"] = max(out.constraints.get("lost", 0.0), float(over))
            out.violations.append(f"search run: lost {lost} > {self.spec.constraints.max_lost}")
        judged = sum(len(st.judged_s) for st in found.steps)
        r = self.record
        answer = {"sustainable_mb_s": found.mb_s, "sustainable": to_json(found.record()), "ramp_lost": lost}
        ramp = {"ramp": found.ramp_s, "ramp_warmup": float(how.warmup_s), "ramp_windows": float(judged)}
        self.record = replace(r, measured={**(r.measured or {}), **answer}, phases_s={**(r.phases_s or {}), **ramp})
        out.measure_s += how.warmup_s + judged

    def _hold(self, rate: float, on_tick: Callable[[RawRun, Tick], None] | None) -> None:
        """One run at the fixed `rate` (msg/s) for hold.run_s seconds, judged like a search step on all of them,
        against the SLO times hold.headroom."""
        self.phase = "operating-point run"
        s, out = self.spec, self.outcome
        w = sustainable.timed_workload(self.workload, rate, s.search.warmup_s, s.hold.run_s)
        t_run = time.monotonic()
        raw = self._run(w, on_tick)
        rec = self._build(raw)
        self._check_disturbed(rec)
        write_run(self.out_dir, rec)
        sm = rec.result.summary
        h = s.hold.headroom
        why = sustainable.judge_run(sm, rate, s.slo.scaled(h))
        why += f" ({h:.0%} of the SLO: hold.headroom)" if why and h < 1 else ""
        lost = (sm.lost or 0) if acks(self.cfg) != "0" else 0
        if lost > s.constraints.max_lost:
            why = f"lost {lost} > {s.constraints.max_lost}" + (f"; {why}" if why else "")
        e2e, pub = sm.end_to_end_latency_ms.p99, sm.publish_latency_ms.p99
        out.ok = (sm.acknowledged or 0) > 0
        out.fail_reason = None if out.ok else f"nothing acknowledged: {list(sm.publish_error_samples)}"
        out.rate_msg_s, out.measure_s = rate, float(s.hold.run_s)
        out.values = {
            "sustainable_mb_s": 0.0 if why else (sm.consume_mb_s or 0.0),
            "p99_e2e_ms": or_inf(e2e),
            "p99_publish_ms": or_inf(pub),
        }
        if why:
            out.no_rate_held, out.constraints["slo"] = f"{rate:,.0f} msg/s did not hold: {why}", 1.0
            out.violations.append(out.no_rate_held)
        hold = Try(rate, not why, why, sm.window_s, sm.warmup_s, sm.consume_msg_s, sm.consume_mb_s, e2e, pub, lost)
        phases = {"run": time.monotonic() - t_run, "warmup": float(s.search.warmup_s), "windows": float(s.hold.run_s)}
        self.record = replace(
            self.record,
            phases_s={**raw.phases_s, **phases},
            measured={
                "sustainable_mb_s": None if why else sm.consume_mb_s,
                "throughput_mb_s": None,
                "windows_mb_s": [],
                "hold": to_json(hold),
            },
        )

    def _judge(self, s: RunSummary, wins: list[float]) -> None:
        """The objectives and constraints from the run's summary and its window rates (sweeps.protocol)."""
        out, produce_acks = self.outcome, acks(self.cfg)
        out.windows_mb_s = wins
        out.values = objective_values(s, wins)
        out.constraints, out.violations = constraints(self.spec, s, produce_acks)
        out.measure_s = self.spec.measurement.window_s * self.spec.measurement.windows
        out.ok = (s.acknowledged or 0) > 0
        if not out.ok:
            out.fail_reason = f"nothing acknowledged: {list(s.publish_error_samples)}"
        self.record = replace(
            self.record,
            measured=measured(s, wins, out.values, produce_acks, self.target.ceiling_mb_s),
            constraints={"values": out.constraints, "violated": out.violations},
        )
