"""`kafkatune diff BASELINE CANDIDATE`: two measurements side by side, each change judged against the noise."""

from __future__ import annotations

import json

import click

from advisor import diff
from core.typed import to_json
from kafkatune import render


@click.command("diff")
@click.argument("sides", nargs=-1, metavar="BASELINE CANDIDATE")
@click.option("--json", "as_json", is_flag=True, help="Print both sides and every metric's change as JSON.")
def command(sides: tuple[str, ...], as_json: bool) -> None:
    """Throughput and latency percentiles of BASELINE and CANDIDATE side by side, with the change and whether
    it is beyond the measured noise.

    \b
    Each side is a run folder (bench, import-omb), an OMB result file, a study folder (its recommended
    configuration's confirmation repeats; STUDY#LABEL picks another candidate, e.g.
    runs/s#baseline:kafka-defaults), or a quoted glob of run folders or result files (the repeats of one
    configuration: 'runs/defaults*'). A change is called only when Welch's 95 % interval of the difference
    excludes 0, which needs at least 2 runs on each side (3 or more, interleaved, is better); with one run a
    side the change is shown and not judged.
    Exit codes: 0 compared; 2 bad input (a side that is not a measurement, or two that are not comparable).
    """
    if len(sides) != 2:
        raise click.UsageError(
            f"give two sides, BASELINE and CANDIDATE (got {len(sides)}); quote a glob so that the shell does "
            "not expand it into several arguments: 'runs/defaults*'"
        )
    base, cand = diff.side(sides[0]), diff.side(sides[1])
    rows = diff.compare(base, cand)
    if as_json:
        out = {
            name: {"given": s.given, "measures": s.measures, "runs": s.sources, "notes": s.notes}
            for name, s in (("baseline", base), ("candidate", cand))
        }
        click.echo(json.dumps({**out, "metrics": [to_json(r) for r in rows]}))
        return
    render.diff(base, cand, rows)
