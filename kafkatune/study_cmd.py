"""`kafkatune study show RUN_DIR`: a study's trials and summary, again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from core.errors import UserError
from kafkatune.sweep_text import print_summary, print_trials
from records.study import TRIALS
from records.summary import read_summary
from records.trial import TRIAL, read_trial


@click.group("study")
def command() -> None:
    """Look at a study's results in runs/<study>/."""


@command.command("show")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print summary.json and the trial records as JSON.")
def show(run_dir: Path, as_json: bool) -> None:
    """Every trial (stage, state, MB/s, latency, params), the baselines and the confirmed best."""
    found = [read_trial(p.parent) for p in run_dir.glob(f"{TRIALS}/*/{TRIAL}")]
    records = sorted((r for r in found if r is not None), key=lambda r: (r.started_ns, r.stage, r.number))
    summary = read_summary(run_dir)
    if not records and summary is None:
        raise UserError(f"{run_dir}: no study here (no trials/*/trial.json, no summary.json)")
    if as_json:
        click.echo(json.dumps({"summary": summary and summary.to_json(), "trials": [r.as_json() for r in records]}))
        return
    print_trials(records)
    if summary:
        print_summary(summary, sys.stdout)
    else:
        click.echo("no summary.json yet: the sweep has not finished (run it again to resume)")
