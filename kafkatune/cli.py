"""`kafkatune` command line. It wires options to the packages; it computes nothing itself.

Exit codes: 0 ok, 1 unexpected error, 2 bad input (nothing touched), 3 environment problem
(missing tool, no root, cluster not reachable), 4 a run that did not produce a valid measurement,
130 interrupted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from core import paths
from core.errors import EnvironmentProblem, RunFailed, UserError

F = TypeVar("F", bound=Callable[..., Any])


def say(msg: str) -> None:
    click.echo(msg, err=True)


def state_option(f: F) -> F:
    f = click.option(
        "--state-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Testbed state folder (default $KAFKATUNE_STATE or ~/.cache/kafkatune/testbed).",
    )(f)
    f = click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Where the Kafka jars are cached (default $KAFKATUNE_CACHE or ~/.cache/kafkatune).",
    )(f)
    f = click.option(
        "--base-port",
        type=int,
        default=29090,
        show_default=True,
        help="Loopback mode: node i listens on base+i, controller base+100+i, metrics base+200+i.",
    )(f)
    return f


def _testbed(state_dir: Path | None, cache_dir: Path | None, base_port: int) -> Any:
    from testbed.dist import default_dist
    from testbed.lifecycle import Testbed

    return Testbed(state_dir or paths.state_dir(), default_dist(cache_dir), base_port=base_port)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kafkatune")
def cli() -> None:
    """kafkatune: find the Kafka settings that get the most out of a replicated cluster.

    \b
    Quick start:
      kafkatune testbed up                  # 3 local KRaft brokers, RF 3, min.insync.replicas 2
      kafkatune bench examples/bench-1kb.yaml
      kafkatune testbed down
    """


@cli.group()
def testbed() -> None:
    """The local 3-node Kafka cluster (KRaft, combined broker+controller nodes)."""


@testbed.command("install")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None, help="Cache folder for the jars.")
def testbed_install(cache_dir: Path | None) -> None:
    """Fetch Kafka, the log4j binding and the JMX exporter from Maven Central into the cache (once)."""
    from testbed import dist

    d = dist.default_dist(cache_dir)
    if d.installed():
        say(f"Kafka {d.version} already installed in {d.root}")
        return
    say(f"resolving Kafka {d.version} with Maven into {d.root} …")
    d = dist.install(cache_dir)
    say(f"installed Kafka {d.version}: {len(list(d.libs.glob('*.jar')))} jars in {d.libs}")


@testbed.command("up")
@state_option
@click.option(
    "--network",
    type=click.Choice(["loopback", "shaped"]),
    default="loopback",
    show_default=True,
    help="shaped: each broker and client host in its own network namespace with tc rate limits (needs root).",
)
@click.option(
    "--nic-mbps",
    type=float,
    default=None,
    help="Shaped mode: each host's link rate in MB/s (megabytes per second), both directions.",
)
@click.option("--subnet", default="198.18.0", show_default=True, help="Shaped mode: the /24 to use.")
@click.option(
    "--netns-prefix",
    default="kt",
    show_default=True,
    help="Shaped mode: names of the namespaces (<prefix>-b1…) and bridge; distinct per testbed.",
)
@click.option(
    "--security",
    type=click.Choice(["plaintext", "sasl_ssl"]),
    default=None,
    help="Default: what the running testbed has (plaintext for a new one). sasl_ssl: each node also "
    "listens with SASL_SSL (SCRAM-SHA-512 and PLAIN, a keytool certificate) for clients; the password and CA "
    "are written to <state>/security/ (owner-only files).",
)
@click.option(
    "--warm-up",
    "warm_up_s",
    type=click.FloatRange(min=0),
    default=0,
    show_default=True,
    help="Seconds of acks=all load after start, so the brokers' JIT is warm before anything is "
    "measured (a cold testbed here is several times slower for 3-4 minutes).",
)
def testbed_up(
    state_dir: Path | None,
    cache_dir: Path | None,
    base_port: int,
    network: str,
    nic_mbps: float | None,
    subnet: str,
    netns_prefix: str,
    security: str | None,
    warm_up_s: float,
) -> None:
    """Start the three nodes (formatting a new cluster if needed) and wait until all serve."""
    from testbed import dist

    if network == "shaped" and nic_mbps is None:
        raise UserError("--network shaped needs --nic-mbps (MB/s per host link)")
    if network == "loopback" and nic_mbps is not None:
        raise UserError("--nic-mbps only applies with --network shaped")
    dist.install(cache_dir)
    tb = _testbed(state_dir, cache_dir, base_port)
    tb.prefix = netns_prefix
    import time

    t0 = time.monotonic()
    st = tb.up(network=network, nic_mb_s=nic_mbps, subnet=subnet, security=security, progress=say)
    say(f"testbed up in {time.monotonic() - t0:.1f} s: bootstrap {st.bootstrap_servers} ({st.network})")
    if warm_up_s:
        from loadgen.warmup import warm_up

        warm_up(st.bootstrap_servers, warm_up_s, say=say, placements=tb.client_netns(st))
    click.echo(st.bootstrap_servers)


@testbed.command("down")
@state_option
@click.option("--wipe", is_flag=True, help="Also delete the data, logs and state (a fresh cluster next time).")
def testbed_down(state_dir: Path | None, cache_dir: Path | None, base_port: int, wipe: bool) -> None:
    """Stop all nodes (controlled shutdown) and remove the shaped network if any."""
    _testbed(state_dir, cache_dir, base_port).down(wipe=wipe, progress=say)


@testbed.command("status")
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def testbed_status(state_dir: Path | None, cache_dir: Path | None, base_port: int, as_json: bool) -> None:
    """Each node (pid, listener, alive), the active controller, under-replicated partitions.

    Exits 0 when all nodes are alive, 3 otherwise.
    """
    st = _testbed(state_dir, cache_dir, base_port).status()
    if as_json:
        click.echo(json.dumps(st, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"testbed ({st['network']}, Kafka {st['kafka_version']}) {st['bootstrap_servers']}")
        for col in ("node", "pid", "listener", "alive", "under-replicated", "controller"):
            t.add_column(col)
        for n in st["nodes"]:
            t.add_row(
                str(n["id"]),
                str(n["pid"] or "-"),
                n["listener"],
                "yes" if n["alive"] else "NO",
                str(n.get("under_replicated_partitions", "-")),
                "*" if st["controller"] == n["id"] else "",
            )
        Console().print(t)
        ur = st["under_replicated_partitions"]
        click.echo(f"under-replicated partitions: {'unknown' if ur is None else len(ur)}")
    if not all(n["alive"] for n in st["nodes"]):
        sys.exit(3)


@testbed.command("kill")
@state_option
@click.argument("node", type=int)
def testbed_kill(state_dir: Path | None, cache_dir: Path | None, base_port: int, node: int) -> None:
    """kill -9 one node (for fault tests). `testbed up` or `restart` brings it back."""
    pid = _testbed(state_dir, cache_dir, base_port).kill(node)
    say(f"killed node {node} (pid {pid})")


@testbed.command("restart")
@state_option
@click.argument("node", type=int)
@click.option(
    "--keep-config",
    is_flag=True,
    help="Start the node with its server.properties as it is on disk (edited by hand or over SSH) instead of "
    "rewriting it from the testbed's state.",
)
def testbed_restart(
    state_dir: Path | None, cache_dir: Path | None, base_port: int, node: int, keep_config: bool
) -> None:
    """Clean restart of one node; returns when it serves again and every ISR is full."""
    _testbed(state_dir, cache_dir, base_port).restart(node, progress=say, keep_config=keep_config)
    say(f"node {node} restarted; all partitions in sync")


def main() -> None:
    from kafkatune import (
        advise_cmd,
        bench_cmd,
        ceiling_cmd,
        compare_cmd,
        hosts_cmd,
        report_cmd,
        servers_cmd,
        sweep_cmd,
    )

    bench_cmd.register(cli)
    sweep_cmd.register(cli)
    ceiling_cmd.register(cli)
    advise_cmd.register(cli)
    report_cmd.register(cli)
    servers_cmd.register(cli)
    compare_cmd.register(cli)
    hosts_cmd.register(cli)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        say("interrupted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except (UserError, EnvironmentProblem, RunFailed) as e:
        say(f"error: {e}")
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
