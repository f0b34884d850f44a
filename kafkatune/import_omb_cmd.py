"""`kafkatune import-omb RESULT.json`: an OpenMessaging Benchmark result file as a run in runs/."""

from __future__ import annotations

import json
from pathlib import Path

import click

from core import paths
from core.typed import to_json
from kafkatune.options import say
from records import run as runs
from records.omb import read_omb, windows


@click.command("import-omb")
@click.argument("result", type=click.Path(path_type=Path))
@click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run folder (default runs/<workload name>-omb, or -2, -3… if it holds a run).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the new run folder and its summary as JSON.")
def command(result: Path, runs_dir: Path, out: Path | None, as_json: bool) -> None:
    """Bring an OpenMessaging Benchmark result file (its TestResult JSON) into runs/ as a run folder:
    omb-result.json as it came and a result.json kafkatune reads, so `analyze`, `advise`, `report` and
    `diff` treat it like a kafkatune run. Every field of OMB's TestResult is checked first: a file that lacks
    one, or has one of the wrong type, is refused with the field named (exit 2) and nothing is written.

    \b
    Rates are the mean of OMB's 10-s windows; OMB records no loss count, broker metrics or per-second
    samples, so the run has none.
    """
    doc = read_omb(result)
    d = out or runs.new_run_dir(runs_dir, paths.slug(str(doc["workload"]), "omb") + "-omb")
    s = runs.import_omb(d, doc, str(result)).summary
    if as_json:
        click.echo(json.dumps({"out": str(d), **to_json(s)}))
        return
    say(f"imported {result}: {doc['workload']} ({doc['driver']}), {windows(doc)} windows of 10 s")
    if s.publish_msg_s is None:
        click.echo(f"{d}: the result holds no window")
        return
    p99 = s.end_to_end_latency_ms.p99
    e2e = f"{p99:.2f} ms" if p99 is not None else "not recorded"
    click.echo(f"{d}: publish {s.publish_msg_s:,.0f} msg/s ({s.publish_mb_s or 0:.2f} MB/s), end-to-end p99 {e2e}")
