"""`kafkatune bench WORKLOAD.yaml`: one measured run against the testbed or any cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from core import paths
from core.errors import RunFailed
from kafkatune.hosts_cmd import inventory_options
from loadgen.workload import load_workload
from records import run as runs


def _target(
    bootstrap: str | None, inventory: Path | None, state_dir: Path | None, driver: str, accept: bool, say: Any
) -> Any:
    """The cluster the run measures (cluster.target): the testbed unless --bootstrap or --inventory says."""
    from cluster import target
    from cluster.inventory import load_inventory
    from drivers.api import load_driver

    if inventory is not None:
        return target.inventory(load_inventory(inventory), accept_new_host_keys=accept, progress=say)
    if bootstrap:  # only a Kafka driver's cluster can be asked: --bootstrap also names MQTT, Zenoh…
        return target.bootstrap(bootstrap, check=load_driver(driver).local_server == "testbed")
    return target.testbed(state_dir or paths.state_dir(), all_nodes=False)


def _broker_config(bootstrap: str, say: Any, common: dict[str, str]) -> dict[str, dict[str, str | None]] | None:
    """The catalogue's broker keys as each broker runs them, so the record says what the run ran against."""
    from brokerconf.apply import BrokerConfigs
    from brokerconf.catalogue import DYNAMIC_KEYS, RESTART_KEYS

    try:
        conf = {k: v for k, v in common.items() if k != "bootstrap.servers"}
        return BrokerConfigs.connect(bootstrap, conf, progress=say).read_back([*DYNAMIC_KEYS, *RESTART_KEYS])
    except Exception as e:  # a cluster that refuses DescribeConfigs still gets measured
        say(f"note: broker configs not recorded ({e})")
        return None


def register(cli: click.Group) -> None:
    @cli.command("bench")
    @click.argument("workload", type=click.Path(path_type=Path))
    @click.option("--bootstrap", default=None, help="Bootstrap servers of any cluster (default: the testbed).")
    @click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder.")
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
    def bench(
        workload: Path,
        bootstrap: str | None,
        state_dir: Path | None,
        inventory: Path | None,
        accept_new_host_keys: bool,
        out: Path | None,
        runs_dir: Path,
        keep_topics: bool,
        as_json: bool,
    ) -> None:
        """Run one workload (OpenMessaging Benchmark field names) and write runs/<name>/.

        \b
        Max-rate mode when producerRate is 0, fixed-rate otherwise (publish delay recorded).
        Exit codes: 0 ok; 2 bad workload (nothing created); 3 cluster not reachable;
        4 the run did not complete, or acknowledged messages were lost.
        """
        w = load_workload(workload)
        say = lambda m: click.echo(m, err=True)  # noqa: E731
        if inventory is not None and bootstrap:
            raise click.UsageError("--inventory and --bootstrap: give one (the inventory names its bootstrap)")
        with _target(bootstrap, inventory, state_dir, w.driver, accept_new_host_keys, say) as t:
            _bench(
                w,
                workload,
                t.bootstrap,
                dict(t.common),
                list(t.placements),
                dict(t.metrics_urls),
                t.profile,
                out,
                runs_dir,
                keep_topics,
                as_json,
            )


def _bench(
    w: Any,
    workload: Path,
    boot: str,
    common: dict[str, str],
    placements: list[Any],
    metric_urls: dict[int, str],
    profile: Any,
    out: Path | None,
    runs_dir: Path,
    keep_topics: bool,
    as_json: bool,
) -> None:
    from kafkatune.live import LiveView
    from loadgen import result as res
    from loadgen import runner

    say = lambda m: click.echo(m, err=True)  # noqa: E731
    say(
        f"bench {w.name}: {w.topics}×{w.partitionsPerTopic} partitions, {w.messageSize} B, "
        f"{w.producersPerTopic} producer(s), {w.consumerPerSubscription} consumer(s), "
        f"{'max rate' if not w.producerRate else f'{w.producerRate:g} msg/s'}, "
        f"{w.warmup_seconds:g} s warm-up + {w.test_seconds:g} s against {boot}"
    )
    broker_config = _broker_config(boot, say, common)
    with LiveView(w.warmup_seconds + w.test_seconds) as view:
        raw = runner.run(
            w,
            {**common, "bootstrap.servers": boot},
            placements=placements,
            metrics_urls=metric_urls,
            on_tick=view,
            say=say,
            keep_topics=keep_topics,
        )
    import confluent_kafka

    rec = res.build(
        raw,
        profile,
        {
            "client": "confluent-kafka",
            "version": confluent_kafka.version()[0],
            "librdkafka": confluent_kafka.libversion()[0],
        },
    )
    rec.result["brokerConfig"] = broker_config
    d = out or runs.new_run_dir(runs_dir, w.name)
    runs.write_run(d, rec)
    runs.copy_workload(d, workload)
    s = rec.summary
    if as_json:
        click.echo(json.dumps({"out": str(d), **{k: v for k, v in s.items() if k != "per_producer"}}))
    else:
        _print_summary(s, d)
    if s["lost"]:
        raise RunFailed(f"{s['lost']} acknowledged message(s) were never consumed (see {d}/result.json)")
    if s["acknowledged"] == 0:
        raise RunFailed(f"no message was acknowledged: {s['publish_error_samples']}")


def _print_summary(s: dict[str, Any], d: Path) -> None:
    pl, e2e = s["publish_latency_ms"], s["end_to_end_latency_ms"]
    lines = [
        f"publish  {s['publish_msg_s']:>12,.0f} msg/s {s['publish_mb_s']:>9.2f} MB/s "
        f"{s['publish_bit_s'] / 1e9:.3f} Gbit/s",
        f"consume  {s['consume_msg_s']:>12,.0f} msg/s {s['consume_mb_s']:>9.2f} MB/s",
        f"publish latency ms  p50 {pl['p50']:.2f}  p99 {pl['p99']:.2f}  p99.9 {pl['p99.9']:.2f}  max {pl['max']:.2f}",
        f"end-to-end ms       p50 {e2e['p50']:.2f}  p99 {e2e['p99']:.2f}  p99.9 {e2e['p99.9']:.2f}  "
        f"max {e2e['max']:.2f}",
        f"acknowledged {s['acknowledged']:,}  consumed {s['consumed']:,}  lost {s['lost']}  "
        f"duplicated {s['duplicated']}  publish errors {s['publish_errors']}",
    ]
    if s["unacknowledged_at_end"]:
        lines.append(
            f"{s['unacknowledged_at_end']:,} message(s) still unacknowledged when the producers' flush timed out"
        )
    b = s["broker_rates"]
    if b:
        lines.append(
            f"brokers: produce {b['produce_mb_s']:.2f} MB/s  replicate {b['replicate_mb_s']:.2f} MB/s  "
            f"consume {b['consume_mb_s']:.2f} MB/s"
        )
    for wmsg in s["warnings"]:
        lines.append(f"WARNING: {wmsg}")
    lines.append(f"results: {d}/result.json")
    print("\n".join(lines), file=sys.stderr)
