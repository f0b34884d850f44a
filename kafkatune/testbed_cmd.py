"""`kafkatune testbed install|up|down|status|kill|restart`: the local 3-node Kafka cluster."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from core.errors import UserError
from kafkatune import render
from kafkatune.options import say, testbed, testbed_options
from loadgen.warmup import warm_up
from testbed import dist


@click.group("testbed")
def command() -> None:
    """The local 3-node Kafka cluster (KRaft, combined broker+controller nodes)."""


@command.command("install")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None, help="Cache folder for the jars.")
def install(cache_dir: Path | None) -> None:
    """Fetch Kafka, the log4j binding and the JMX exporter from Maven Central into the cache (once)."""
    d = dist.default_dist(cache_dir)
    if d.installed():
        say(f"Kafka {d.version} already installed in {d.root}")
        return
    say(f"resolving Kafka {d.version} with Maven into {d.root} …")
    d = dist.install(cache_dir)
    say(f"installed Kafka {d.version}: {len(list(d.libs.glob('*.jar')))} jars in {d.libs}")


@command.command("up")
@testbed_options
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
    help="Seconds of acks=all load after start at the most, so the brokers' JIT is warm before anything is "
    "measured (a cold testbed here is several times slower for 3-4 minutes): half of it with small batches, "
    "half with 1-MiB ones (a cluster warmed with one compiles again under the other), each half ending sooner "
    "once their JIT compilers take at most 0.1 core per broker over 10 s.",
)
@click.option(
    "--jvm-option",
    "jvm_extra",
    multiple=True,
    metavar="OPTION",
    help="A JVM option every broker starts with beyond the testbed's own (repeatable; a later one wins), e.g. "
    "--jvm-option=-XX:TieredStopAtLevel=1; kept for every later start and restart (a node already running keeps "
    "the options it started with).",
)
def up(
    state_dir: Path | None,
    cache_dir: Path | None,
    base_port: int,
    network: str,
    nic_mbps: float | None,
    subnet: str,
    netns_prefix: str,
    security: str | None,
    warm_up_s: float,
    jvm_extra: tuple[str, ...],
) -> None:
    """Start the three nodes (formatting a new cluster if needed) and wait until all serve."""
    if network == "shaped" and nic_mbps is None:
        raise UserError("--network shaped needs --nic-mbps (MB/s per host link)")
    if network == "loopback" and nic_mbps is not None:
        raise UserError("--nic-mbps only applies with --network shaped")
    dist.install(cache_dir)
    tb = testbed(state_dir, cache_dir, base_port, jvm_extra)
    tb.prefix = netns_prefix
    t0 = time.monotonic()
    st = tb.up(network=network, nic_mb_s=nic_mbps, subnet=subnet, security=security, progress=say)
    say(f"testbed up in {time.monotonic() - t0:.1f} s: bootstrap {st.bootstrap_servers} ({st.network})")
    if warm_up_s:
        warm_up(st.bootstrap_servers, warm_up_s, say=say, placements=tb.client_netns(st), metrics_urls=st.metrics_urls)
    click.echo(st.bootstrap_servers)


@command.command("down")
@testbed_options
@click.option(
    "--wipe",
    is_flag=True,
    help="Also delete the data, logs and state (a fresh cluster next time); the nodes are then killed, not shut down.",
)
def down(state_dir: Path | None, cache_dir: Path | None, base_port: int, wipe: bool) -> None:
    """Stop all nodes (a controlled shutdown; killed with --wipe) and remove the shaped network if any."""
    testbed(state_dir, cache_dir, base_port).down(wipe=wipe, progress=say)


@command.command("status")
@testbed_options
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def status(state_dir: Path | None, cache_dir: Path | None, base_port: int, as_json: bool) -> None:
    """Each node (pid, listener, alive), the active controller, under-replicated partitions.

    Exits 0 when all nodes are alive, 3 otherwise.
    """
    st = testbed(state_dir, cache_dir, base_port).status()
    if as_json:
        click.echo(json.dumps(st.to_json(), indent=2))
    else:
        render.testbed_status(st)
    if not all(n.alive for n in st.nodes):
        sys.exit(3)


@command.command("kill")
@testbed_options
@click.argument("node", type=int)
def kill(state_dir: Path | None, cache_dir: Path | None, base_port: int, node: int) -> None:
    """kill -9 one node (for fault tests). `testbed up` or `restart` brings it back."""
    pid = testbed(state_dir, cache_dir, base_port).kill(node)
    say(f"killed node {node} (pid {pid})")


@command.command("restart")
@testbed_options
@click.argument("node", type=int)
@click.option(
    "--keep-config",
    is_flag=True,
    help="Start the node with its server.properties as it is on disk (edited by hand or over SSH) instead of "
    "rewriting it from the testbed's state.",
)
def restart(state_dir: Path | None, cache_dir: Path | None, base_port: int, node: int, keep_config: bool) -> None:
    """Clean restart of one node; returns when it serves again and every ISR is full."""
    testbed(state_dir, cache_dir, base_port).restart(node, progress=say, keep_config=keep_config)
    say(f"node {node} restarted; all partitions in sync")
