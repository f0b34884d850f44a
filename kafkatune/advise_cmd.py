"""`kafkatune advise`: recommendations with evidence, for a study or a live cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from advisor import live, verdict
from advisor import study as advice
from core import paths
from core.errors import UserError
from core.typed import to_json
from kafkatune import render
from kafkatune.options import say
from records.summary import Summary

JUDGEMENT = (
    "objective",
    "slo",
    "best",
    "best_vs_defaults",
    "confirmation",
    "recommended",
    "no_measurable_effect",
    "noise",
    "operating_point",
)


@click.command("advise")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@click.option("--bootstrap", default=None, help="Advise on a live cluster from its current configs and metrics.")
@click.option("--metrics-url", "metrics_urls", multiple=True, help="Prometheus JMX exporter URL per broker (live).")
@click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder (live).")
@click.option("--seconds", type=click.FloatRange(min=2), default=10, show_default=True, help="Live metric sampling.")
@click.option("--master", default=None, help="Spark master, if the study still needs its analysis.")
@click.option("--top", type=int, default=None, help="Show only the first N recommendations.")
@click.option("--json", "as_json", is_flag=True, help="Print the recommendations as JSON.")
def command(
    run_dir: Path | None,
    bootstrap: str | None,
    metrics_urls: tuple[str, ...],
    state_dir: Path | None,
    seconds: float,
    master: str | None,
    top: int | None,
    as_json: bool,
) -> None:
    """Recommendations with evidence (trial ids, measured deltas, expected gain).

    \b
    kafkatune advise runs/<study>        from a study's analysis (run first if missing), after what its
                                         confirmation and ablations established (intervals, effects)
    kafkatune advise --bootstrap HOST:PORT   a live cluster: its configs, and its JMX metrics when
                                         --metrics-url is given or it is the testbed

    --json prints {"recommendations": [...]} and, for a study, the sweep's objective, slo, best,
    confirmation, recommended, no_measurable_effect, noise and operating_point from its summary.json."""
    if (run_dir is None) == (bootstrap is None):
        raise UserError("give either RUN_DIR (a study) or --bootstrap (a live cluster), not both")
    sweep: Summary | None = None
    if run_dir is not None:
        a = advice.advise(run_dir, master, say)
        recs, sweep = a.recommendations, a.sweep
    else:
        assert bootstrap is not None
        recs = live.advise(bootstrap, list(metrics_urls), state_dir or paths.state_dir(), seconds, say)
    if as_json:
        doc: dict[str, Any] = {"recommendations": [to_json(r) for r in (recs[:top] if top else recs)]}
        if sweep:  # the sweep's own judgement, as summary.json holds it (sweeps.confirm)
            whole = sweep.to_json()
            doc.update({k: whole.get(k) for k in JUDGEMENT})
        click.echo(json.dumps(doc, indent=2))
    else:
        if sweep:
            click.echo("\n".join(verdict.lines(sweep)))
        render.recommendations(recs, top)
