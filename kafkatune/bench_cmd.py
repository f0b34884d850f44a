"""`kafkatune bench WORKLOAD.yaml`: one measured run against the testbed or any cluster."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from advisor import links as links_judge
from cluster import target
from cluster.inventory import load_inventory
from core import paths
from core.errors import RunFailed, UserError, validated
from core.typed import to_json
from drivers.api import load_driver
from faults.inject import Injector
from faults.spec import Fault, check_schedule
from faults.spec import parse as parse_fault
from kafkatune import render
from kafkatune.live import LiveView
from kafkatune.options import inventory_options, say, state_dir_option
from kafkatune.options import testbed as open_testbed
from loadgen import bench
from loadgen.omb_driver import DriverFile, load_driver_file, with_driver_file
from loadgen.runner import chain
from loadgen.sustainable import Search, Slo
from loadgen.workload import Workload, load_workload, with_overrides
from records import run as runs
from records.result import DriverFileUsed, Link, RunResult, RunSummary
from records.run import RunRecord
from records.study import with_links
from records.trialrow import TrialRow
from sweeps.settings import SearchSpec


def _faults(specs: tuple[str, ...], w: Workload, elsewhere: object, state_dir: Path | None) -> list[Fault]:
    """The parsed faults, checked against the run and the testbed before anything is created."""
    faults = [parse_fault(x) for x in specs]
    if not faults:
        return []
    if elsewhere:
        raise UserError(
            "--fault: faults are injected on the testbed (kafkatune starts and stops its brokers); "
            "leave out --bootstrap and --inventory"
        )
    if w.discovers_rate or w.builds_backlog:
        raise UserError("--fault: with a max-rate or fixed-rate run (not producerRate 0 or a backlog run)")
    st = open_testbed(state_dir).state()
    check_schedule(faults, w.test_seconds, bool(st.client_netns), [n.id for n in st.nodes])
    return faults


def _search(settings: tuple[str, ...], w: Workload) -> Search | None:
    """--search FIELD=VALUE…: the search as a sweep spec's `search:` section sets it, each field checked as there, so a
    bench can search as a sweep does (its own max-rate probe stays: a sweep's is the trial's max-rate run). None: the
    bench's defaults. Checked before any cluster is contacted."""
    if not settings:
        return None
    fields = ", ".join(SearchSpec.model_fields)
    if not w.discovers_rate:
        raise UserError("--search: only with producerRate 0, the run that searches for the sustainable rate")
    kv: dict[str, str] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UserError(f"--search {item!r}: expected FIELD=VALUE, e.g. max_step_s=8 (fields: {fields})")
        kv[key.strip()] = value.strip()
    spec = validated(SearchSpec, kv, "--search", "FIELD=VALUE settings", allowed=list(SearchSpec.model_fields))
    return Search(**spec.model_dump())


def _measure(
    w: Workload, t: target.Target, view: LiveView, faults: list[Fault], state_dir: Path | None, **kw: Any
) -> RunRecord:
    """The run, with its faults injected (and the testbed healed after it) when there are any."""
    if not faults:
        return bench.measure(w, t, on_tick=view, say=say, **kw)
    inj = Injector(open_testbed(state_dir), faults, say=say)
    w = w.with_faults()
    try:
        rec = bench.measure(w, t, on_tick=chain(view, inj.on_tick), say=say, **kw)
    finally:
        events = inj.finish()
    return rec._replace(result=replace(rec.result, faults=tuple(events)))


def _degraded(links: Sequence[Link]) -> str | None:
    """What the shaped testbed's links met over the run, when one dropped or delayed packets (advisor.links)."""
    return links_judge.degraded(with_links(TrialRow(), links)) if links else None


def _show(res: RunResult, d: Path, as_json: bool) -> None:
    """The run's summary: one JSON line (--json), or the tables (with the search, scale-out and degraded link)."""
    degraded = _degraded(res.links)
    if as_json:
        summary = {k: v for k, v in to_json(res.summary).items() if k != "per_producer"}
        extra = {
            "sustainable": to_json(res.sustainable),
            "degraded_link": degraded,
            "scaled_out": to_json(res.scaled_out),
        }
        click.echo(json.dumps({"out": str(d), **summary, **extra}))
        return
    if res.sustainable:  # the search run's totals mix its steps: the steps are the result
        render.sustainable(res.sustainable, res.summary, d)
    else:
        render.bench_summary(res.summary, d)
    if res.scaled_out:
        render.scaled_out(res.scaled_out)
    if degraded:
        say(f"degraded link: {degraded}")


def _judge(s: RunSummary, d: Path) -> None:
    """Exit 4 when an acknowledged message was lost (naming their sequence numbers) or nothing was acknowledged."""
    if s.lost:
        raise RunFailed(f"{s.lost} acknowledged message(s) were never consumed (see {d}/result.json): {_lost_seqs(s)}")
    if not s.acknowledged:
        raise RunFailed(f"no message was acknowledged: {list(s.publish_error_samples)}")


def _lost_seqs(s: RunSummary) -> str:
    """Per producer, the ranges of its lost sequence numbers (loadgen.result keeps the first 200)."""
    out = []
    for pid, p in s.per_producer.items():
        if p.lost:
            rs = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in p.lost_seqs[:20])
            out.append(f"producer {pid}: {p.lost} lost, sequence numbers {rs}")
    return "; ".join(out)


def _target(
    bootstrap: str | None, inventory: Path | None, state_dir: Path | None, driver: str, accept: bool
) -> target.Target:
    """The cluster the run measures (cluster.target): the testbed unless --bootstrap or --inventory says."""
    if inventory is not None:
        return target.inventory(load_inventory(inventory), accept_new_host_keys=accept, progress=say)
    if bootstrap:  # only a Kafka driver's cluster can be asked: --bootstrap also names MQTT, Zenoh…
        return target.bootstrap(bootstrap, check=load_driver(driver).local_server == "testbed")
    return target.testbed(state_dir or paths.state_dir(), all_nodes=False)


def _with_driver(w: Workload, driver_file: Path | None) -> tuple[Workload, DriverFile | None, list[str]]:
    """The workload with an OMB driver file's settings applied (loadgen.omb_driver), the file, and what it could not
    apply, each said."""
    if driver_file is None:
        return w, None, []
    df = load_driver_file(driver_file)
    w, notes = with_driver_file(w, df)
    for n in notes:
        say(f"driver file: {n}")
    return w, df, notes


def _name_driver_file(rec: RunRecord, df: DriverFile, notes: list[str]) -> RunRecord:
    """OMB reports the driver file's name; the record keeps the file and what was not applied."""
    if rec.omb is not None:
        rec.omb["driver"] = df.name
    return rec._replace(result=replace(rec.result, driver_file=DriverFileUsed(str(df.path), df.name, tuple(notes))))


def _dry_run(w: Workload, workload: Path, where: str, run_dir: Path, how: Search | None) -> None:
    """Check the client configs (the client library checks them, which needs no server) and say what would run."""
    load_driver(w.driver)({}).validate(w.str_map("producerConfig"), w.str_map("consumerConfig"))
    say(bench.describe(w, f"{where} (not contacted: --dry-run)"))
    if how is not None:
        say(
            f"search: steps of {how.min_step_s}-{how.max_step_s} judged s, warm-up {how.warmup_s} s, "
            f"resolution {how.resolution:g}, first step at {how.start:g}× the probe"
        )
    click.echo(f"valid: {workload} (run folder {run_dir})")


@click.command("bench")
@click.argument("workload", type=click.Path(path_type=Path))
@click.option(
    "--driver",
    "driver_file",
    type=click.Path(path_type=Path),
    default=None,
    help="An OpenMessaging Benchmark driver file (driver-kafka/kafka-throughput.yaml, driver-pulsar/pulsar.yaml…): "
    "its driverClass picks the driver, its configs go to the clients and topics.",
)
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
    "--backlog-gb",
    type=click.FloatRange(min=0),
    default=None,
    help="Override the workload's consumerBacklogSizeGB (GiB the consumers owe before they drain; 0: none).",
)
@click.option(
    "--fault",
    "fault_specs",
    multiple=True,
    metavar="SPEC",
    help="A fault during the measurement window, on the testbed (repeatable): KIND[=VALUE]:TARGET@AT[+FOR], "
    "KIND clean_shutdown, hard_shutdown, clean_bounce, hard_bounce (TARGET leader, leader.P, controller, brokerN) "
    "or, on the shaped testbed, loss=5%, delay=20ms (brokerN), partition (brokerA/brokerB); AT and FOR in seconds "
    "from the window's start. E.g. --fault hard_bounce:leader@5. The record keeps when each took effect and when "
    "the cluster was whole again; the testbed is healed after the run.",
)
@click.option(
    "--search",
    "search_settings",
    multiple=True,
    metavar="FIELD=VALUE",
    help="With producerRate 0: a setting of the search, as a sweep spec's `search:` section takes it (repeatable), "
    "e.g. --search min_step_s=3 --search max_step_s=8 --search resolution=0.1 to search as benchmarks/tuning's "
    "sweeps do. Fields: " + ", ".join(SearchSpec.model_fields) + ".",
)
@click.option(
    "--no-scale-out",
    is_flag=True,
    help="At max rate, keep the workload's producer processes even when their send loops were the limit (by "
    "default the run goes again with twice the processes, up to the cores the workers have, and says so).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate the workload (its payload file included) and say what would run; contact no cluster.",
)
def command(
    workload: Path,
    driver_file: Path | None,
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
    backlog_gb: float | None,
    fault_specs: tuple[str, ...],
    search_settings: tuple[str, ...],
    no_scale_out: bool,
    dry_run: bool,
) -> None:
    """Run one workload (OpenMessaging Benchmark's workload files run unchanged) and write runs/<name>/:
    result.json, OMB's own result document omb-result.json, and per-second Parquet files.

    \b
    producerRate: max blasts (the max-rate throughput); a number is a fixed rate (msg/s, publish delay
    recorded); 0 discovers the highest rate held within --slo-p99-e2e-ms (as OMB's producerRate 0): a short
    max-rate probe, then one run that brackets, bisects and confirms the rate, each step judged on its own
    seconds (5 to 30, longest near the limit); the answer is a rate that held twice.
    consumerBacklogSizeGB > 0 (Kafka): after the warm-up the consumers pause until they owe that many GiB,
    then drain it to (1 - backlogDrainRatio) of it; the run goes on for testDurationMinutes after that.
    --driver FILE applies an OMB driver file: each setting it has that kafkatune cannot apply is named.
    Exit codes: 0 ok; 2 bad workload or fault (nothing created); 3 cluster not reachable;
    4 the run did not complete, or acknowledged messages were lost (the lost sequence numbers are listed).
    """
    w = with_overrides(load_workload(workload), test_minutes, warmup_minutes, backlog_gb)
    w, df, notes = _with_driver(w, driver_file)
    if inventory is not None and bootstrap:
        raise click.UsageError("--inventory and --bootstrap: give one (the inventory names its bootstrap)")
    testbed_logs = None if bootstrap or inventory else (state_dir or paths.state_dir())
    bench.refuse_what_cannot_run(w, testbed_logs)  # an unknown driver is refused here too
    faults = _faults(fault_specs, w, bootstrap or inventory, state_dir)
    how = _search(search_settings, w)
    if dry_run:
        where = bootstrap or (f"the inventory {inventory}" if inventory else "the testbed")
        _dry_run(w, workload, where, out or runs_dir / w.slug, how)
        return
    with _target(bootstrap, inventory, state_dir, w.driver, accept_new_host_keys) as t:
        say(bench.describe(w, t.bootstrap))
        slo, scale_out = Slo(p99_e2e_ms=slo_p99_e2e_ms), not (no_scale_out or faults)
        with LiveView(None if w.discovers_rate or w.builds_backlog else w.warmup_seconds + w.test_seconds) as view:
            rec = _measure(
                w, t, view, faults, state_dir, keep_topics=keep_topics, slo=slo, how=how, scale_out=scale_out
            )
    d = out or runs.new_run_dir(runs_dir, w.slug)
    if df is not None:
        rec = _name_driver_file(rec, df, notes)
    runs.write_run(d, rec)
    runs.copy_workload(d, workload)
    _show(rec.result, d, as_json)
    _judge(rec.result.summary, d)
