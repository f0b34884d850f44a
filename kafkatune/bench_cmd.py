"""`kafkatune bench WORKLOAD.yaml`: one measured run against the testbed or any cluster."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cluster import target
from cluster.inventory import load_inventory
from core import paths
from core.errors import RunFailed
from drivers.api import load_driver
from kafkatune import render
from kafkatune.live import LiveView
from kafkatune.options import inventory_options, say, state_dir_option
from loadgen import bench
from loadgen.sustainable import Slo
from loadgen.workload import load_workload, with_durations
from records import run as runs


def _target(
    bootstrap: str | None, inventory: Path | None, state_dir: Path | None, driver: str, accept: bool
) -> target.Target:
    """The cluster the run measures (cluster.target): the testbed unless --bootstrap or --inventory says."""
    if inventory is not None:
        return target.inventory(load_inventory(inventory), accept_new_host_keys=accept, progress=say)
    if bootstrap:  # only a Kafka driver's cluster can be asked: --bootstrap also names MQTT, Zenoh…
        return target.bootstrap(bootstrap, check=load_driver(driver).local_server == "testbed")
    return target.testbed(state_dir or paths.state_dir(), all_nodes=False)


@click.command("bench")
@click.argument("workload", type=click.Path(path_type=Path))
@click.option("--bootstrap", default=None, help="Bootstrap servers of any cluster (default: the testbed).")
@state_dir_option
@inventory_options(
    "A cluster inventory: its bootstrap and security settings, and its client hosts run the producers "
    "and consumers (started over SSH, round robin; results merged into one record)."
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run folder (default runs/<workload name>, or -2, -3… if it holds a run).",
)
@click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@click.option("--keep-topics", is_flag=True, help="Do not delete the run's topics afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the result summary as JSON on stdout.")
@click.option(
    "--slo-p99-e2e-ms",
    type=click.FloatRange(min=0, min_open=True),
    default=100.0,
    show_default=True,
    help="With producerRate 0: the p99 end-to-end latency the discovered rate must hold.",
)
@click.option(
    "--test-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Override the workload's testDurationMinutes (the file is not changed).",
)
@click.option(
    "--warmup-minutes",
    type=click.FloatRange(min=0),
    default=None,
    help="Override the workload's warmupDurationMinutes (the file is not changed).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate the workload (its payload file included) and say what would run; contact no cluster.",
)
def command(
    workload: Path,
    bootstrap: str | None,
    state_dir: Path | None,
    inventory: Path | None,
    accept_new_host_keys: bool,
    out: Path | None,
    runs_dir: Path,
    keep_topics: bool,
    as_json: bool,
    slo_p99_e2e_ms: float,
    test_minutes: float | None,
    warmup_minutes: float | None,
    dry_run: bool,
) -> None:
    """Run one workload (OpenMessaging Benchmark field names) and write runs/<name>/.

    \b
    producerRate: max blasts (the max-rate throughput); a number is a fixed rate (msg/s, publish delay
    recorded); 0 discovers the highest rate held within --slo-p99-e2e-ms (as OMB's producerRate 0): a short
    max-rate probe, then one run stepping through rates below and just above it.
    Exit codes: 0 ok; 2 bad workload (nothing created); 3 cluster not reachable;
    4 the run did not complete, or acknowledged messages were lost.
    """
    w = with_durations(load_workload(workload), test_minutes, warmup_minutes)
    if inventory is not None and bootstrap:
        raise click.UsageError("--inventory and --bootstrap: give one (the inventory names its bootstrap)")
    if dry_run:
        load_driver(w.driver)  # an unknown driver is refused here too
        where = bootstrap or (f"the inventory {inventory}" if inventory else "the testbed")
        say(bench.describe(w, f"{where} (not contacted: --dry-run)"))
        click.echo(f"valid: {workload} (run folder {out or runs_dir / w.slug})")
        return
    with _target(bootstrap, inventory, state_dir, w.driver, accept_new_host_keys) as t:
        say(bench.describe(w, t.bootstrap))
        slo = Slo(p99_e2e_ms=slo_p99_e2e_ms)
        span = w.warmup_seconds + w.test_seconds if not w.discovers_rate else None
        with LiveView(span) as view:
            rec = bench.measure(w, t, on_tick=view, say=say, keep_topics=keep_topics, slo=slo)
    d = out or runs.new_run_dir(runs_dir, w.slug)
    runs.write_run(d, rec)
    runs.copy_workload(d, workload)
    s = rec.summary
    if as_json:
        summary = {k: v for k, v in s.items() if k != "per_producer"}
        click.echo(json.dumps({"out": str(d), **summary, "sustainable": rec.result.get("sustainable")}))
    else:
        if rec.result.get("sustainable"):  # the ramp run's totals mix its steps: the steps are the result
            render.sustainable(rec.result["sustainable"], s, d)
        else:
            render.bench_summary(s, d)
    if s["lost"]:
        raise RunFailed(f"{s['lost']} acknowledged message(s) were never consumed (see {d}/result.json)")
    if s["acknowledged"] == 0:
        raise RunFailed(f"no message was acknowledged: {s['publish_error_samples']}")
