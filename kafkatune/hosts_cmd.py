"""`kafkatune hosts check INVENTORY.yaml`: reach every host of a cluster inventory over SSH and check it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from core.errors import EnvironmentProblem


def inventory_options(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--inventory INV` (help: `what`) and `--accept-new-host-keys`, for commands that can work on a
    cluster over SSH."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--accept-new-host-keys",
            is_flag=True,
            help="With --inventory: trust and record host keys not yet in known_hosts (a changed key is refused).",
        )(f)
        return click.option(
            "--inventory", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None, help=what
        )(f)

    return deco


def check_hosts(inventory: Path, accept_new_host_keys: bool, say: Any) -> list[dict[str, Any]]:
    """One row per host: reached or not, and what is missing there (server.properties, log dirs, python)."""
    from cluster.clients import worker_python_problem
    from cluster.inventory import Broker, load_inventory
    from cluster.ssh import SshPool, Target

    inv = load_inventory(inventory)
    rows: list[dict[str, Any]] = []
    with SshPool(accept_new_host_keys=accept_new_host_keys, progress=say) as pool:
        for label, entry in inv.hosts():
            t = Target.of(inv, entry)
            row: dict[str, Any] = {"host": label, "address": f"{entry.host}:{t.ssh.port}", "problems": []}
            try:
                row["hostname"] = pool.run(t, "uname -n", timeout_s=30).out.strip()
                if isinstance(entry, Broker):
                    if not pool.exists(t, entry.server_properties, "-r"):
                        row["problems"].append(f"server_properties {entry.server_properties} is not readable")
                    elif not pool.exists(t, entry.server_properties, "-w"):
                        row["problems"].append(f"server_properties {entry.server_properties} is not writable")
                    for d in entry.log_dirs:
                        if not pool.exists(t, d, "-d"):
                            row["problems"].append(f"log dir {d} is not a directory")
                else:
                    r = pool.run(t, f"{shlex.quote(entry.python)} --version", check=False, timeout_s=30)
                    if r.rc != 0:
                        row["problems"].append(f"python {entry.python!r} does not run: {(r.err or r.out).strip()}")
                    else:
                        row["python"] = (r.out or r.err).strip()
                        why = worker_python_problem(pool, t, entry.python)
                        if why:
                            row["problems"].append(why)
            except EnvironmentProblem as e:  # host key, unreachable, authentication: this host only
                row["problems"].append(str(e).removeprefix(f"{label}: "))
            row["ok"] = not row["problems"]
            rows.append(row)
    return rows


def register(cli: click.Group) -> None:
    @cli.group("hosts")
    def hosts() -> None:
        """The hosts of a cluster you run yourself, from an inventory file (see examples/inventory.yaml)."""

    @hosts.command("check")
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

        def say(m: str) -> None:
            click.echo(m, err=True)

        rows = check_hosts(inventory, accept_new_host_keys, say)
        if as_json:
            click.echo(json.dumps({"inventory": str(inventory), "hosts": rows}, indent=2))
        for r in rows:
            what = r.get("hostname", "")
            if r["ok"]:
                extra = f", {r['python']}" if "python" in r else ""
                say(f"{r['host']:<28} {r['address']:<24} ok ({what}{extra})")
            else:
                say(f"{r['host']:<28} {r['address']:<24} FAILED: {'; '.join(r['problems'])}")
        bad = [r for r in rows if not r["ok"]]
        if bad:
            raise EnvironmentProblem(f"{len(bad)} of {len(rows)} host(s) not usable")
        say(f"all {len(rows)} host(s) reachable and ready")
