"""`kafkatune hosts check`: every host of an inventory reached over SSH (host keys checked) and checked for
what kafkatune needs there: a broker's server.properties readable and writable and its log dirs present, a
client host's Python able to run the load workers.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cluster.clients import worker_python_problem
from cluster.inventory import Broker, ClientHost, load_inventory
from cluster.ssh import SshPool, Target
from core.errors import EnvironmentProblem


def _broker_problems(pool: SshPool, t: Target, b: Broker) -> list[str]:
    out = []
    if not pool.exists(t, b.server_properties, "-r"):
        out.append(f"server_properties {b.server_properties} is not readable")
    elif not pool.exists(t, b.server_properties, "-w"):
        out.append(f"server_properties {b.server_properties} is not writable")
    return out + [f"log dir {d} is not a directory" for d in b.log_dirs if not pool.exists(t, d, "-d")]


@dataclass
class HostCheck:
    """One host of the inventory as the check found it: reached or not, what is missing there, and what it runs."""

    host: str  # its label in the inventory
    address: str  # host:ssh-port
    problems: list[str] = field(default_factory=list)
    hostname: str | None = None  # `uname -n` there; None: not reached
    python: str | None = None  # a client host's Python, as it names itself

    @property
    def ok(self) -> bool:
        return not self.problems


def _client_check(pool: SshPool, t: Target, c: ClientHost, row: HostCheck) -> None:
    r = pool.run(t, f"{shlex.quote(c.python)} --version", check=False, timeout_s=30, retry=True)
    if r.rc != 0:
        row.problems.append(f"python {c.python!r} does not run: {(r.err or r.out).strip()}")
        return
    row.python = (r.out or r.err).strip()
    why = worker_python_problem(pool, t, c.python)
    if why:
        row.problems.append(why)


def check_hosts(inventory: Path, accept_new_host_keys: bool, say: Callable[[str], None]) -> list[HostCheck]:
    """One row per host: reached or not, and what is missing there (server.properties, log dirs, python)."""
    inv = load_inventory(inventory)
    rows: list[HostCheck] = []
    with SshPool(accept_new_host_keys=accept_new_host_keys, progress=say) as pool:
        for label, entry in inv.hosts():
            t = Target.of(inv, entry)
            row = HostCheck(label, f"{entry.host}:{t.ssh.port}")
            try:
                row.hostname = pool.run(t, "uname -n", timeout_s=30, retry=True).out.strip()
                if isinstance(entry, Broker):
                    row.problems += _broker_problems(pool, t, entry)
                else:
                    _client_check(pool, t, entry, row)
            except EnvironmentProblem as e:  # host key, unreachable, authentication: this host only
                row.problems.append(str(e).removeprefix(f"{label}: "))
            rows.append(row)
    return rows
