"""`kafkatune sweep SPEC`: sweep producer, broker and consumer settings on a real cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from advisor import ceiling
from brokerconf.guard import ConfigGuard
from core import paths
from core.errors import RunFailed
from kafkatune.options import say
from kafkatune.sweep_text import print_plan, print_summary
from kafkatune.sweep_view import SweepView
from records.profile import ClusterProfile
from sweeps import engine
from sweeps.spec import load_spec, redacted_text
from sweeps.target import resolve


def _ceiling_of(profile: ClusterProfile | None, rf: int) -> float | None:
    c = ceiling.from_profile(profile, rf=rf)
    return c.mb_s if c else None


@click.command("sweep")
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
def command(
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
    spec = load_spec(spec_file)
    run_dir = runs_dir / spec.name
    url = storage_url or spec.storage
    if dry_run:
        print_plan(spec, run_dir, url)
        return
    target = resolve(
        spec,
        spec_file,
        state_dir or paths.state_dir(),
        ceiling_of=_ceiling_of,
        accept_new_host_keys=accept_new_host_keys,
        say=say,
    )
    guard = ConfigGuard(target.configs, engine.start_study(run_dir, redacted_text(spec_file), target), say)
    with guard, SweepView() as view:
        sw = engine.Sweep(
            spec, target, run_dir, guard.snapshot, storage_url=url, events=view, mark_dirty=guard.mark_dirty
        )
        summary = sw.run()
    if as_json:
        click.echo(json.dumps(summary.to_json()))
    else:
        print_summary(summary, sys.stderr)
    if summary.best is None:
        why = summary.operating_point.not_load_driven if summary.operating_point else None
        raise RunFailed(
            f"no trial produced a valid measurement: {why}"
            if why
            else f"no trial produced a valid measurement: see {run_dir}/trials/*/trial.json"
        )
