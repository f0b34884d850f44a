"""`kafkatune servers up|down|status|install [SYSTEM…]`: the servers the non-Kafka drivers talk to."""

from __future__ import annotations

import json

import click

from core import paths
from core.typed import to_json
from kafkatune.options import say
from testbed.servers import SYSTEMS, Servers, install_pulsar


def _servers() -> Servers:
    return Servers(paths.home() / "servers")


@click.group("servers")
def command() -> None:
    """Mosquitto (MQTT), a Zenoh router and a Pulsar standalone, on 127.0.0.1, for `bench`/`compare`
    with those drivers. (Kafka itself is `kafkatune testbed`; DDS needs no server.)"""


@command.command("up")
@click.argument("systems", nargs=-1)
@click.option(
    "--port", type=int, default=None, help="Port (one system only; default 1883 MQTT, 7447 Zenoh, 6650 Pulsar)."
)
def up(systems: tuple[str, ...], port: int | None) -> None:
    """Start SYSTEMS (default: all of them) and wait until each accepts connections."""
    todo = systems or SYSTEMS
    if port is not None and len(todo) != 1:
        raise click.UsageError("--port needs exactly one system")
    sv = _servers()
    for s in todo:
        st = sv.up(s, port=port, progress=say)
        click.echo(f"{s} {st.address}" + (f" admin {st.admin}" if st.admin else ""))


@command.command("install")
@click.argument("systems", nargs=-1)
def install(systems: tuple[str, ...]) -> None:
    """Fetch what SYSTEMS need once (pulsar: its jars, with Maven); a no-op when cached.

    Mosquitto comes from Debian (`make deps`); the Zenoh router is the Python package."""
    for s in systems or SYSTEMS:
        if s not in SYSTEMS:
            raise click.UsageError(f"unknown system {s!r}; known: {', '.join(SYSTEMS)}")
        if s == "pulsar":
            click.echo(f"pulsar {install_pulsar(progress=say)}")


@command.command("down")
@click.argument("systems", nargs=-1)
def down(systems: tuple[str, ...]) -> None:
    """Stop SYSTEMS (default: all of them)."""
    sv = _servers()
    for s in systems or SYSTEMS:
        sv.down(s, progress=say)


@command.command("status")
@click.option("--json", "as_json", is_flag=True)
def status(as_json: bool) -> None:
    """Which servers run, where, and whether they answer."""
    rows = _servers().status()
    if as_json:
        click.echo(json.dumps(to_json(rows)))
        return
    for r in rows:
        click.echo(
            f"{r.system:<10} {'running' if r.running else 'stopped':<8} {r.address or '':<22} "
            f"{'ready' if r.ready else ''}"
        )
