"""`kafkatune sweep SPEC` and `kafkatune study show RUN_DIR`."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import click

from core import paths
from core.errors import RunFailed, UserError

TRIAL_OVERHEAD_S = 6  # topic, workers, drain, record: measured 4-6 s per trial here


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def _ceiling_of(profile: Any, rf: int) -> float | None:
    from advisor import ceiling

    c = ceiling.from_profile(profile, rf=rf)
    return c.mb_s if c else None


def print_plan(spec: Any, run_dir: Path, storage_url: str | None) -> None:
    from brokerconf.catalogue import short
    from sweeps import space, storage

    m = spec.measurement
    w = spec.base_workload()
    per_trial = m.warmup_s + m.window_s * m.windows + TRIAL_OVERHEAD_S
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
        f"each trial: {m.warmup_s:g} s warm-up + {m.windows} × {m.window_s:g} s windows "
        f"(~{per_trial:.0f} s with set-up and drain)",
        f"constraints: lost ≤ {spec.constraints.max_lost}"
        + "".join(
            f", {k} ≤ {v:g}" for k, v in spec.constraints.model_dump().items() if k != "max_lost" and v is not None
        ),
        "baselines: " + ("; ".join(f"{b} [{short(space.baseline(spec, b))}]" for b in spec.baselines) or "none"),
    ]
    for i, s in enumerate(stages, 1):
        params = ", ".join(
            f"{k} {v.low}..{v.high}{' log' if v.log else ''}"
            if hasattr(v, "low")
            else f"{k} {getattr(v, 'choices', v)}"
            for k, v in s.params.items()
        )
        fixed = f" fixed {dict(s.fixed)}" if s.fixed else ""
        lines.append(f"stage {i} {s.name}: {s.trials} trials: {params}{fixed}")
    lines += [
        f"confirmation: top {spec.confirm_top} re-measured"
        + (", and Kafka's defaults once more" if spec.planned[2] > spec.confirm_top else ""),
        f"budget: {n} trials (~{n * per_trial / 60:.0f} min)"
        + (f", stop after {spec.budget.minutes:g} min" if spec.budget.minutes else ""),
        f"storage: {storage.display_url(storage_url or spec.storage, run_dir)}; records in {run_dir}/trials/",
    ]
    click.echo("\n".join(lines))


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def register(cli: click.Group) -> None:
    @cli.command("sweep")
    @click.argument("spec_file", metavar="SPEC", type=click.Path(path_type=Path))
    @click.option("--dry-run", is_flag=True, help="Validate the spec and print the plan; touch nothing.")
    @click.option(
        "--runs-dir",
        type=click.Path(path_type=Path),
        default=Path("runs"),
        show_default=True,
        help="Where study folders live: the study is <runs-dir>/<spec name>/.",
    )
    @click.option(
        "--storage",
        "storage_url",
        default=None,
        help="Optuna storage URL, overriding the spec's: sqlite:///…, journal:<file>, postgresql://user@host/db "
        "(share a study between workers, each with its own cluster).",
    )
    @click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder.")
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout at the end.")
    @click.option(
        "--accept-new-host-keys",
        is_flag=True,
        help="cluster.inventory: accept and record (in known_hosts) a broker host key seen for the first time; "
        "a changed key is refused always.",
    )
    def sweep(
        spec_file: Path,
        dry_run: bool,
        runs_dir: Path,
        storage_url: str | None,
        state_dir: Path | None,
        as_json: bool,
        accept_new_host_keys: bool,
    ) -> None:
        """Sweep producer, broker and consumer settings on a real cluster; resume by running it again.

        \b
        Writes runs/<name>/: the Optuna storage, trials/<stage>-<n>/ (trial.json, result.json,
        samples.parquet, broker_metrics.parquet) and summary.json. Broker configs are snapshotted
        first and restored on every exit (after a kill -9: at the next start).
        Exit codes: 0 done; 2 bad spec (nothing touched); 3 cluster unreachable or not recovering;
        4 no trial produced a measurement; 130 interrupted (configs restored; run again to resume).
        """
        from sweeps.spec import load_spec

        spec = load_spec(spec_file)
        run_dir = runs_dir / spec.name
        url = storage_url or spec.storage
        if dry_run:
            print_plan(spec, run_dir, url)
            return
        from brokerconf.guard import ConfigGuard
        from kafkatune.sweep_view import SweepView
        from sweeps import engine
        from sweeps.spec import redacted_text
        from sweeps.target import resolve

        # Ctrl-C and `kill` both end in the restore; SIGINT explicitly, as a shell that starts a job in
        # the background (`cmd &` without job control) leaves SIGINT ignored for it.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        target = resolve(
            spec,
            spec_file,
            state_dir or paths.state_dir(),
            ceiling_of=_ceiling_of,
            accept_new_host_keys=accept_new_host_keys,
            say=_say,
        )
        snapshot = engine.start_study(run_dir, redacted_text(spec_file), target)
        guard = ConfigGuard(target.configs, snapshot, _say)
        with guard, SweepView() as view:
            sw = engine.Sweep(
                spec, target, run_dir, guard.snapshot, storage_url=url, events=view, mark_dirty=guard.mark_dirty
            )
            summary = sw.run()
        if as_json:
            click.echo(json.dumps(summary))
        else:
            print_summary(summary, sys.stderr)
        if summary["best"] is None:
            raise RunFailed(f"no trial produced a valid measurement: see {run_dir}/trials/*/trial.json")

    @cli.group()
    def study() -> None:
        """Look at a study's results in runs/<study>/."""

    @study.command("show")
    @click.argument("run_dir", type=click.Path(path_type=Path))
    @click.option("--json", "as_json", is_flag=True, help="Print summary.json and the trial records as JSON.")
    def study_show(run_dir: Path, as_json: bool) -> None:
        """Every trial (stage, state, MB/s, latency, params), the baselines and the confirmed best."""
        records = sorted(
            (json.loads(p.read_text()) for p in run_dir.glob("trials/*/trial.json")),
            key=lambda r: (r.get("started_ns") or 0, r.get("stage", ""), r.get("number", 0)),
        )
        sp = run_dir / "summary.json"
        summary = json.loads(sp.read_text()) if sp.exists() else None
        if not records and summary is None:
            raise UserError(f"{run_dir}: no study here (no trials/*/trial.json, no summary.json)")
        if as_json:
            click.echo(json.dumps({"summary": summary, "trials": records}))
            return
        _print_trials(records)
        if summary:
            print_summary(summary, sys.stdout)
        else:
            click.echo("no summary.json yet: the sweep has not finished (run it again to resume)")


def _print_trials(records: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from brokerconf.catalogue import short

    t = Table(title="trials")
    for col in ("stage", "#", "state", "MB/s", "±", "% ceil", "p99 pub ms", "p99 e2e ms", "restarts", "params"):
        t.add_column(col)
    for r in records:
        m = r.get("measured") or {}
        frac = m.get("fraction_of_ceiling")
        state = r.get("state", "?")
        if r.get("constraints", {}).get("violated"):
            state = "violates"
        t.add_row(
            r.get("stage", ""),
            str(r.get("number", "")),
            state,
            f"{m['mean_mb_s']:.2f}" if m else "-",
            f"{m['stdev_mb_s']:.2f}" if m else "-",
            f"{frac * 100:.0f}" if frac else "-",
            f"{m['p99_publish_ms']:.1f}" if m else "-",
            f"{m['p99_e2e_ms']:.1f}" if m else "-",
            str(r.get("restarts", 0)),
            short(r.get("config", {})),
        )
    Console(width=200).print(t)


def print_summary(s: dict[str, Any], out: Any) -> None:
    from brokerconf.catalogue import short

    lines = [f"study {s['study']} ({s['plan']})"]
    for name, b in s["baselines"].items():
        lines.append(f"baseline {name:<22} {b['mb_s']:8.2f} MB/s")
    for st in s["stages"]:
        best = st["best"]
        lines.append(
            f"stage {st['name']:<25} {st['trials']} trials ({st['failed']} failed), best "
            + (f"{best['mb_s']:.2f} MB/s with {short(best['params'])}" if best else "-")
        )
        for t in st.get("pareto") or []:
            vals = ", ".join(f"{o} {v:.2f}" for o, v in zip(s["objectives"], t["values"], strict=True))
            lines.append(f"  Pareto #{t['number']}: {vals}: {short(t['params'])}")
    for c in s["confirmed"]:
        lines.append(f"confirmed {c['confirms']:<30} {c['mb_s']:8.2f} ± {c['stdev_mb_s']:.2f} MB/s")
    b = s["best"]
    if b:
        lines.append(f"BEST ({b['from']}): {b['mb_s']:.2f} MB/s: {short(b['config'])}")
        if s.get("best_fraction_of_ceiling"):
            lines.append(f"  {s['best_fraction_of_ceiling'] * 100:.1f} % of the {s['ceiling_mb_s']:.1f} MB/s ceiling")
        if s.get("best_vs_defaults"):
            again = " (re-measured at the end)" if s.get("defaults_remeasured") else ""
            d = s.get("defaults_mb_s") or s["baselines"]["kafka-defaults"]["mb_s"]
            lines.append(f"  {s['best_vs_defaults']:.2f}× Kafka defaults: {d:.2f} MB/s{again}")
        if s.get("trials_to_95pct_of_best"):
            lines.append(f"  95 % of the best reached after {s['trials_to_95pct_of_best']} trials")
    inv = s["this_invocation"]
    if inv["overhead_fraction"] is not None:
        lines.append(
            f"this run: {inv['trials']} trials in {inv['wall_s'] / 60:.1f} min, "
            f"{inv['overhead_fraction'] * 100:.0f} % not measuring; {s['restarts']} broker restarts in all"
        )
    print("\n".join(lines), file=out)
