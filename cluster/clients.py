"""Client hosts of an inventory, reached over SSH, that run kafkatune's load workers.

Each is checked before a run needs it: reachable, its host key trusted, and its `python` (the inventory's
`clients[].python`) able to import the load workers' agent (`loadgen.remote`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from cluster.inventory import Inventory
from cluster.ssh import SshPool, Target
from core.errors import RunFailed

WORKER_AGENT = "loadgen.agent"  # the module a client host runs (`python -m loadgen.agent`)


@dataclass(frozen=True)
class RemoteClient:
    """A client host of an inventory, reached over SSH (`pool`), running workers with `python`."""

    label: str  # the host, as records name it
    target: Target
    python: str
    pool: SshPool = field(compare=False, hash=False)


def worker_python_problem(pool: SshPool, t: Target, python: str) -> str | None:
    """Why `python` on host `t` cannot run kafkatune's load workers, or None when it can."""
    r = pool.run(t, f"{shlex.quote(python)} -c 'import {WORKER_AGENT}'", check=False, timeout_s=60, retry=True)
    if r.rc == 0:
        return None
    return (
        f"`{python}` cannot run kafkatune's load workers (install kafkatune there, or set clients[].python to "
        f"an interpreter that has it): {(r.err.strip() or r.out.strip())[-300:]}"
    )


def client_hosts(inv: Inventory, pool: SshPool) -> list[RemoteClient]:
    """The inventory's client hosts as load-worker placements, each checked first (see the module doc)."""
    out = []
    for c in inv.clients:
        rc = RemoteClient(c.host, Target.of(inv, c), c.python, pool)
        why = worker_python_problem(pool, rc.target, c.python)
        if why:
            raise RunFailed(f"client {c.host}: {why}")
        out.append(rc)
    return out
