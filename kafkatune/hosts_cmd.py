"""`kafkatune hosts check INVENTORY.yaml`: reach every host of a cluster inventory over SSH and check it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cluster.hosts import check_hosts
from core.errors import EnvironmentProblem
from core.typed import to_json
from kafkatune.options import say


@click.group("hosts")
def command() -> None:
    """The hosts of a cluster you run yourself, from an inventory file (see examples/inventory.yaml)."""


@command.command("check")
@click.argument("inventory", type=click.Path(path_type=Path))
@click.option(
    "--accept-new-host-keys",
    is_flag=True,
    help="Accept a host key that is not in known_hosts yet and record it there (a CHANGED key is "
    "refused always). Without it, an unknown key is an error.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (for programs) on stdout.")
def check(inventory: Path, accept_new_host_keys: bool, as_json: bool) -> None:
    """Validate INVENTORY, then reach every broker and client host over SSH (host keys checked against
    known_hosts) and check what kafkatune needs there: each broker's server.properties readable and
    writable and its log dirs present, each client host's Python.

    Exit codes: 0 every host fine; 2 the inventory is invalid (no host contacted); 3 a host is unreachable,
    refused (host key, authentication) or lacks something."""
    rows = check_hosts(inventory, accept_new_host_keys, say)
    if as_json:
        hosts = [{**to_json(r), "ok": r.ok} for r in rows]
        click.echo(json.dumps({"inventory": str(inventory), "hosts": hosts}, indent=2))
    for r in rows:
        if r.ok:
            extra = f", {r.python}" if r.python else ""
            say(f"{r.host:<28} {r.address:<24} ok ({r.hostname or ''}{extra})")
        else:
            say(f"{r.host:<28} {r.address:<24} FAILED: {'; '.join(r.problems)}")
    bad = [r for r in rows if not r.ok]
    if bad:
        raise EnvironmentProblem(f"{len(bad)} of {len(rows)} host(s) not usable")
    say(f"all {len(rows)} host(s) reachable and ready")
