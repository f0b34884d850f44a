"""A sweep in words: its plan (`sweep --dry-run`), its trials and its summary (`sweep`, `study show`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from advisor import verdict
from brokerconf.catalogue import short
from core.fmt import num
from records.summary import Summary
from records.trial import TrialRecord
from sweeps import current, space, storage
from sweeps.spec import Spec
from sweeps.stages import Choices, IntRange

TRIAL_OVERHEAD_S = 6  # a trial's topic, workers, drain and record (its breakdown in a summary: sweeps.timing)
TYPICAL_STEPS = 6  # a search's steps, typically (bracket 2, bisect 2-3, confirm 1)


def _stage_line(i: int, s: Any) -> str:
    """One stage of the plan: its trials, swept ranges or choices, and fixed keys."""
    params = ", ".join(
        f"{k} {v.low}..{v.high}{' log' if v.log else ''}"
        if isinstance(v, IntRange)
        else f"{k} {v.choices if isinstance(v, Choices) else v}"
        for k, v in s.params.items()
    )
    fixed = f" fixed {dict(s.fixed)}" if s.fixed else ""
    return f"stage {i} {s.name}: {s.trials} trials: {params}{fixed}"


def _confirmation_line(spec: Spec) -> str:
    """The phases after the search: confirmation, ablation, the configuration as written, the operating point."""
    if not spec.confirm.top:
        return "no confirmation (confirm.top: 0): figures are single runs"
    line = (
        f"confirmation: the best {spec.confirm.top} of each stage, the baselines and Kafka's defaults, "
        f"{spec.confirm.repeats} runs each, in randomized blocks; then each changed key put back alone "
        f"({spec.ablate.repeats} runs each), and when some are dropped the configuration as written against "
        f"the full one and the defaults ({spec.ablate.repeats} runs each; when the files are left empty by "
        "a configuration that changes one key, the ablation's runs already measured it)"
    )
    if spec.sustainable and spec.hold.tries:
        line += (
            f"; then the operating point: the rate whose p99, fitted against the rate over the confirmation's "
            f"steps, is {spec.hold.z:g} between-run spreads within the SLO, checked in a {spec.hold.run_s}-s run "
            f"at that fixed rate, {spec.hold.step:.0%} lower per miss (at most {spec.hold.tries} runs)"
        )
    return line


def print_plan(spec: Spec, run_dir: Path, storage_url: str | None) -> None:
    """What `sweep --dry-run` prints: the cluster, workload, trial timing, baselines, stages and budget."""
    m = spec.measurement
    w = spec.base_workload()
    per_trial = m.warmup_s + m.window_s * m.windows + TRIAL_OVERHEAD_S
    r = spec.search
    if spec.sustainable:  # the search, typically: about 6 steps, most decided early (loadgen.search)
        per_trial += r.warmup_s + TYPICAL_STEPS * (r.min_step_s + r.max_step_s) / 2 + TRIAL_OVERHEAD_S
    stages = spec.stage_list
    n = sum(spec.planned)
    cl = (
        "the local testbed"
        if spec.cluster.is_testbed
        else spec.cluster.bootstrap or f"the cluster of inventory {spec.cluster.inventory}"
    )
    lines = [
        f"study {spec.name}: plan {spec.plan}, sampler {spec.sampler}, objectives {', '.join(spec.objectives)}",
        f"cluster: {cl}",
        f"workload: {w.messageSize} B records, {w.partitionsPerTopic} partitions, RF {w.replicationFactor or 3}, "
        f"{w.producersPerTopic} producer(s), {w.consumerPerSubscription} consumer(s)",
        verdict.objective_line(spec.objective, spec.slo.to_json() if spec.sustainable else None),
        f"each trial: {m.warmup_s:g} s warm-up + {m.windows} × {m.window_s:g} s windows at max rate"
        + (
            f", then a search from {r.start:g}× that rate (bracket, bisect, confirm to {r.resolution:.0%}; steps of "
            f"{r.min_step_s}-{r.max_step_s} s, at most {r.max_steps})"
            if spec.sustainable
            else ""
        )
        + f" (~{per_trial:.0f} s with set-up and drain)",
        f"constraints: lost ≤ {spec.constraints.max_lost}"
        + "".join(
            f", {k} ≤ {v:g}" for k, v in spec.constraints.model_dump().items() if k != "max_lost" and v is not None
        ),
        "baselines: " + ("; ".join(f"{b} [{_baseline_text(spec, b)}]" for b in spec.baselines) or "none"),
    ]
    lines += [_stage_line(i, s) for i, s in enumerate(stages, 1)]
    lines += [
        _confirmation_line(spec),
        f"budget: {n} trials (~{n * per_trial / 60:.0f} min; ablations add {spec.ablate.repeats} runs per changed key)"
        + (f", stop after {spec.budget.minutes:g} min" if spec.budget.minutes else ""),
        f"storage: {storage.display_url(storage_url or spec.storage, run_dir)}; records in {run_dir}/trials/",
    ]
    click.echo("\n".join(lines))


def print_trials(records: list[TrialRecord]) -> None:
    t = Table(title="trials")
    cols = (
        "stage",
        "#",
        "state",
        "sustained MB/s",
        "max-rate MB/s",
        "±",
        "% ceil",
        "p99 pub ms",
        "p99 e2e ms",
        "restarts",
        "params",
    )
    for col in cols:
        t.add_column(col)
    for r in records:
        m = r.figures
        frac = m.fraction_of_ceiling
        state = "violates" if (r.constraints or {}).get("violated") else r.state
        t.add_row(
            r.stage,
            str(r.number),
            state,
            num(m.sustainable_mb_s, "{:.2f}", "-"),
            num(m.mean_mb_s, "{:.2f}", "-"),
            num(m.stdev_mb_s, "{:.2f}", "-"),
            f"{frac * 100:.0f}" if frac else "-",
            num(m.p99_publish_ms, "{:.1f}", "-"),
            num(m.p99_e2e_ms, "{:.1f}", "-"),
            str(r.restarts or 0),
            short(r.config),
        )
    Console(width=200).print(t)


def print_summary(s: Summary, out: Any) -> None:
    lines = [f"study {s.study} ({s.plan})"]
    for name, b in s.baselines.items():
        lines.append(f"baseline {name:<22} {num(b.mb_s, '{:8.2f}', '       -')} MB/s")
    for st in s.stages:
        best = st.best
        lines.append(
            f"stage {st.name:<25} {st.trials} trials ({st.failed} failed), best "
            + (f"{best.mb_s:.2f} MB/s with {short(best.params or {})}" if best and best.mb_s is not None else "-")
        )
        for t in st.pareto or ():
            vals = ", ".join(f"{o} {v:.2f}" for o, v in zip(s.objectives, t.values, strict=True))
            lines.append(f"  Pareto #{t.number}: {vals}: {short(t.params or {})}")
    lines += verdict.lines(s)
    if best := s.best:
        one = f"{best.mb_s:.2f} MB/s (one run, no interval)" if best.mb_s is not None else "nothing measured"
        fig = best.interval.text(unit="MB/s") if best.interval else one
        lines.append(f"BEST ({best.source}): {fig}: {short(best.config or {})}")
        if s.best_fraction_of_ceiling and s.ceiling_mb_s:
            lines.append(f"  {s.best_fraction_of_ceiling * 100:.1f} % of the {s.ceiling_mb_s:.1f} MB/s ceiling")
        if s.trials_to_95pct_of_best:
            lines.append(f"  95 % of the best reached after {s.trials_to_95pct_of_best} trials")
    inv = s.this_invocation
    if inv and inv.overhead_fraction is not None:
        lines.append(
            f"this run: {inv.trials} trials in {inv.wall_s / 60:.1f} min, "
            f"{inv.overhead_fraction * 100:.0f} % not measuring; {s.restarts} broker restarts in all"
        )
    if inv and (wc := inv.warmup_check) is not None:
        lines.append(f"warm-up ({wc.warmup_s:g} s a run): {wc.verdict}")
    print("\n".join(lines), file=out)


def _baseline_text(spec: Spec, name: str) -> str:
    """A baseline's configuration as the dry run knows it: `current`'s brokers and topic are read when the sweep
    starts (sweeps.current), its client files now."""
    if name != current.NAME:
        return short(space.baseline(spec, name))
    files = current.client_config(spec.current)[0] if spec.current else {}
    topic = spec.current.topic if spec.current else None
    where = f"the brokers' live configs{f' and topic {topic}' if topic else ''}, read when the sweep starts"
    return f"{short(files)}; {where}" if files else where
