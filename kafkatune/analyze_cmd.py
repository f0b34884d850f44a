"""`kafkatune analyze RUN_DIR`: the Spark analysis of a study or a bench run."""

from __future__ import annotations

import json
from pathlib import Path

import click

from advisor import analysis
from core.typed import to_json
from kafkatune import render
from kafkatune.options import say
from records.analysis import load_table, trial_rows


@click.command("analyze")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--master", default=None, help="Spark master URL (default local[*]; e.g. spark://host:7077).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Output folder (default RUN_DIR/analysis).")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis summary as JSON.")
def command(run_dir: Path, master: str | None, out: Path | None, as_json: bool) -> None:
    """Analyse a study (runs/<study>/ of `sweep`) or a bench run with Spark: reads only its files and
    writes Parquet tables to RUN_DIR/analysis/: trials (MB/s, produce/replicate/consume, % of ceiling,
    binding resource, latency, stability), params (marginal effect per value), importance (Optuna
    PED-ANOVA), pareto, series (per second)."""
    summary = analysis.run(run_dir, master, out, progress=say)
    if as_json:
        click.echo(json.dumps(to_json(summary)))
        return
    tables = Path(summary.tables["trials"]).parent
    render.analysis(trial_rows(load_table(tables, "trials")), tables)
