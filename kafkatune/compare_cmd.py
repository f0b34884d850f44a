"""`kafkatune compare SPEC.yaml`: the same workloads on Kafka, MQTT, Zenoh, DDS, Pulsar and raw TCP."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from compare import run
from compare.spec import load
from core.errors import RunFailed
from core.typed import to_json
from kafkatune.options import say
from reports import comparison

METHODS = ("throughput", "pingpong", "native", "fixedRate", "iot")
OUT_TABLES = ("systems", "throughput", "pingpong", "native", "fixed_rate", "iot_periodic", "iot_sporadic")


def _progress(n: int) -> run.Tick:
    """A tick per finished run: how many of `n`, time elapsed, and about how much is left."""
    done = [0]
    t0 = time.monotonic()

    def tick() -> None:
        done[0] += 1
        el = time.monotonic() - t0
        say(f"  [{done[0]}/{n}] {el:,.0f} s elapsed, about {el / done[0] * (n - done[0]):,.0f} s left")

    return tick


@click.command("compare")
@click.argument("spec_file", type=click.Path(path_type=Path))
@click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Folder (default RUNS_DIR/<name>).")
@click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder (Kafka).")
@click.option("--system", "only", multiple=True, help="Run only this system of the spec (repeatable).")
@click.option("--dry-run", is_flag=True, help="Validate the spec and print the plan; start nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result files and tables as JSON on stdout.")
def command(
    spec_file: Path,
    runs_dir: Path,
    out: Path | None,
    state_dir: Path | None,
    only: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
) -> None:
    """Run the published comparison methods on every system of SPEC_FILE, through one harness.

    \b
    throughput  NTU: back-to-back over payload sizes (8 B … 1 MB), repeated, trimmed median msg/s, bit/s
    pingpong    NTU: one message there and back at a time; RTT/2 percentiles
    native      iperf3 and sockperf on 127.0.0.1 (the floor); a raw-TCP run through the harness (its ceiling)
    fixedRate   OMB: a fixed rate on 1/6/16 partitions, publish and end-to-end percentiles
    iot         periodic flows (p90 against rate) and a sporadic burst beside a periodic flow

    Servers the systems need (Mosquitto, a Zenoh router, Pulsar) are started when not running and
    stopped afterwards; Kafka is the testbed unless the system's `common` names bootstrap.servers.
    Writes RUNS_DIR/<name>/comparison.json, one run record per run, and report/report.{html,md}.
    Exit codes: 0 done (a size a system could not carry is a row with its error); 2 bad spec;
    3 a server could not be started or reached; 4 no run of any system succeeded.
    """
    spec = load(spec_file)
    run.validate_systems(spec, list(only) or None)
    systems = spec.selected(only)
    n = run.steps(spec, systems)
    methods = ", ".join(k for k in METHODS if getattr(spec, k))
    say(f"compare {spec.name}: {', '.join(s.name for s in systems)}; {methods}; {n} runs")
    if spec.throughput:
        say(f"  payload sizes: {', '.join(str(x) for x in spec.throughput.size_list())} B")
    if dry_run:
        return
    d = out or runs_dir / spec.name
    doc = run.compare(spec, d, state_dir=state_dir, say=say, tick=_progress(n), only=list(only) or None)
    r = comparison.build(d)
    say(f"report: {r.html} (and {r.markdown.name}); records under {d}/")
    if as_json:
        files = {"out": str(d), "html": str(r.html), "markdown": str(r.markdown), "charts": r.charts}
        tables = to_json(doc)
        click.echo(json.dumps({**files, **{k: tables[k] for k in OUT_TABLES}}))
    else:
        click.echo(r.markdown.read_text())
    if not run.succeeded(doc):
        raise RunFailed(f"no run of any system succeeded; see {d}/comparison.json")
