"""`kafkatune servers up|down|status [SYSTEM…]`: the servers the non-Kafka drivers talk to."""

from __future__ import annotations

import json

import click

from core import paths


def register(cli: click.Group) -> None:
    from testbed.servers import SYSTEMS

    @cli.group("servers")
    def servers() -> None:
        """Mosquitto (MQTT), a Zenoh router and a Pulsar standalone, on 127.0.0.1, for `bench`/`compare`
        with those drivers. (Kafka itself is `kafkatune testbed`; DDS needs no server.)"""

    def say(m: str) -> None:
        click.echo(m, err=True)

    @servers.command("up")
    @click.argument("systems", nargs=-1)
    @click.option(
        "--port",
        type=int,
        default=None,
        help="Port (one system only; default 1883 MQTT, 7447 Zenoh, 6650 Pulsar).",
    )
    def up(systems: tuple[str, ...], port: int | None) -> None:
        """Start SYSTEMS (default: all of them) and wait until each accepts connections."""
        from testbed.servers import Servers

        sv = Servers(paths.home() / "servers")
        todo = systems or SYSTEMS
        if port is not None and len(todo) != 1:
            raise click.UsageError("--port needs exactly one system")
        for s in todo:
            st = sv.up(s, port=port, progress=say)
            click.echo(f"{s} {st.address}" + (f" admin {st.admin}" if st.admin else ""))

    @servers.command("install")
    @click.argument("systems", nargs=-1)
    def install(systems: tuple[str, ...]) -> None:
        """Fetch what SYSTEMS need once (pulsar: its jars, with Maven); a no-op when cached.

        Mosquitto comes from Debian (`make deps`); the Zenoh router is the Python package."""
        from testbed.servers import install_pulsar

        for s in systems or SYSTEMS:
            if s not in SYSTEMS:
                raise click.UsageError(f"unknown system {s!r}; known: {', '.join(SYSTEMS)}")
            if s == "pulsar":
                click.echo(f"pulsar {install_pulsar(progress=say)}")

    @servers.command("down")
    @click.argument("systems", nargs=-1)
    def down(systems: tuple[str, ...]) -> None:
        """Stop SYSTEMS (default: all of them)."""
        from testbed.servers import Servers

        sv = Servers(paths.home() / "servers")
        for s in systems or SYSTEMS:
            sv.down(s, progress=say)

    @servers.command("status")
    @click.option("--json", "as_json", is_flag=True)
    def status(as_json: bool) -> None:
        """Which servers run, where, and whether they answer."""
        from testbed.servers import Servers

        rows = Servers(paths.home() / "servers").status()
        if as_json:
            click.echo(json.dumps(rows))
            return
        for r in rows:
            click.echo(
                f"{r['system']:<10} {'running' if r['running'] else 'stopped':<8} {r['address'] or '':<22} "
                f"{'ready' if r['ready'] else ''}"
            )
