"""`kafkatune report RUN_DIR`: the study's report (HTML, Markdown, recommended .properties)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkatune.options import say
from records.study import open_study
from reports.study import build


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Folder (default RUN_DIR/report).")
@click.option("--master", default=None, help="Spark master, if the study still needs its analysis.")
@click.option("--json", "as_json", is_flag=True, help="Print the written files and chart ids as JSON.")
def command(run_dir: Path, out: Path | None, master: str | None, as_json: bool) -> None:
    """Write report.html (one self-contained file with charts, opens offline), report.md (the same
    story for a pull request or wiki) and recommended/{producer,consumer,server}.properties and
    topic-configs.txt (only the changed keys, each with old value, new value, measured gain, trial).
    Runs the analysis first when RUN_DIR/analysis is missing."""
    open_study(run_dir)  # a bad folder fails here with a clear message
    r = build(run_dir, out, master, progress=say)
    if as_json:
        files = [str(f) for f in r.files]
        click.echo(json.dumps({"html": str(r.html), "markdown": str(r.markdown), "files": files, "charts": r.charts}))
        return
    say(f"{len(r.charts)} charts; recommended settings in {r.dir / 'recommended'}/")
    click.echo(f"report: {r.html}")
