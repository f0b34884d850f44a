"""The cluster a command measures, resolved in one place: the local testbed, any bootstrap, or the cluster of
an inventory.

A `Target` says where the brokers are (`bootstrap`), the client settings that reach them (`common`:
security, a SASL password included, so it is never written out), where load workers run (`placements`:
this host, a network namespace of the shaped testbed, or client hosts over SSH), where broker metrics are
(`metrics_urls`), and what the hardware allows (`profile`, when it was probed). Every way of failing to
reach the cluster is an EnvironmentProblem (exit 3) that says what to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cluster import admin
from cluster.clients import RemoteClient, client_hosts
from cluster.inventory import Inventory
from cluster.ssh import SshPool
from cluster.ssh import Target as SshTarget
from core import procs
from core.errors import EnvironmentProblem
from records.profile import PROFILE, ClusterProfile, inventory_profile_path, read_profile
from records.testbed import Node, TestbedState, load_state, node_config, state_path

# Where a load worker runs: this host (None), a network namespace on it (its name), or a client host over SSH.
Placement = str | RemoteClient | None
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Target:
    kind: str  # "testbed" | "bootstrap" | "inventory"
    bootstrap: str
    common: Mapping[str, str] = field(default_factory=dict)
    placements: tuple[Placement, ...] = (None,)
    metrics_urls: Mapping[int, str] = field(default_factory=dict)
    profile: ClusterProfile | None = None
    broker_ids: tuple[int, ...] = ()
    state_dir: Path | None = None  # the testbed's
    inventory: Inventory | None = None
    pool: SshPool | None = field(default=None, compare=False)  # the inventory's SSH connections

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def node_running(state_dir: Path, st: TestbedState, node: Node) -> bool:
    """Whether the testbed's `node` runs: its recorded pid alive, with its own server.properties."""
    return procs.running(st.pids.get(str(node.id)), str(node_config(state_dir, node.id)))


def testbed(state_dir: Path, *, all_nodes: bool = True, instead: str = "--bootstrap") -> Target:
    """The local testbed in `state_dir`; with `all_nodes`, every node must run (a sweep changes all of them).
    `instead`: what the user can give to measure another cluster (named in the errors)."""
    if not state_path(state_dir).exists():
        raise EnvironmentProblem(f"no testbed in {state_dir}: run `kafkatune testbed up` first (or give {instead})")
    st = load_state(state_path(state_dir))
    alive = tuple(n.id for n in st.nodes if node_running(state_dir, st, n))
    if not alive:
        raise EnvironmentProblem(
            f"the testbed in {state_dir} is not running: `kafkatune testbed up` (or give {instead})"
        )
    if all_nodes and len(alive) < len(st.nodes):
        down = sorted({n.id for n in st.nodes} - set(alive))
        raise EnvironmentProblem(
            f"the testbed in {state_dir} is not fully running (node {down} down): `kafkatune testbed up`"
        )
    return Target(
        "testbed",
        st.bootstrap_servers,
        placements=tuple(st.client_netns) or (None,),
        metrics_urls=st.metrics_urls,
        profile=read_profile(state_dir / PROFILE),
        broker_ids=alive,
        state_dir=state_dir,
    )


def testbed_serving(state_dir: Path, servers: str) -> Target | None:
    """The testbed in `state_dir` when it is the cluster at `servers` and runs; None otherwise."""
    if not state_path(state_dir).exists() or load_state(state_path(state_dir)).bootstrap_servers != servers:
        return None
    try:
        return testbed(state_dir, all_nodes=False)
    except EnvironmentProblem:
        return None


def bootstrap(
    servers: str,
    conf: Mapping[str, str] | None = None,
    *,
    check: bool = True,
    where: str = "--bootstrap",
    login: str = "the SASL username and password",
    tls: str = "ssl.ca.location",
) -> Target:
    """Any Kafka cluster at `servers` with client settings `conf`. With `check`, it must answer first: a refused
    login or TLS handshake fails at once, naming `where` and the settings to fix (`login`, `tls`)."""
    ids: list[int] = []
    if check:
        try:
            ids = admin.reach(servers, conf)
        except admin.Unreachable as e:
            raise EnvironmentProblem(f"{where}: {admin.unreachable_hint(e, login=login, tls=tls)}") from None
    return Target("bootstrap", servers, dict(conf or {}), broker_ids=tuple(ids))


def reach_inventory(inv: Inventory, timeout_s: float = 10) -> list[int]:
    """The inventory's live broker ids through its own security settings; a refused login or TLS handshake
    fails at once with the inventory fields to fix."""
    try:
        return admin.reach(inv.bootstrap, inv.security.client_config(), timeout_s=timeout_s)
    except admin.Unreachable as e:
        hint = admin.unreachable_hint(
            e, login="security.username and security.password", tls="security.ca_file and security.check_hostname"
        )
        raise EnvironmentProblem(f"inventory {inv.name}: {hint}") from None


def inventory(
    inv: Inventory, *, accept_new_host_keys: bool = False, progress: Progress = print, all_brokers: bool = False
) -> Target:
    """The cluster of `inv`: its security, its client hosts (checked over SSH) and its probed profile.
    With `all_brokers` (a sweep, which may restart them), every broker of the inventory must be in the
    cluster, and only those, and every broker host reachable over SSH with its key trusted, before anything
    changes."""
    ids = reach_inventory(inv)  # a refused login fails here, before any SSH or topic
    known = {b.id for b in inv.brokers}
    if all_brokers and set(ids) != known:
        raise EnvironmentProblem(
            f"inventory {inv.name} lists brokers {sorted(known)}, the cluster has {sorted(ids)} live: "
            "every broker must be in the inventory and running"
        )
    pool = SshPool(accept_new_host_keys=accept_new_host_keys, progress=progress)
    try:
        if all_brokers:
            for b in inv.brokers:
                pool.run(SshTarget.of(inv, b), "true", timeout_s=30, retry=True)
        clients = client_hosts(inv, pool)
    except BaseException:
        pool.close()
        raise
    pf = inventory_profile_path(inv.name)
    profile = read_profile(pf)
    if profile is None:
        progress(
            f"no profile of {inv.name} ({pf}): trials are not compared with a ceiling; `kafkatune probe --inventory`"
        )
    return Target(
        "inventory",
        inv.bootstrap,
        inv.security.client_config(),
        placements=tuple(clients) or (None,),
        profile=profile,
        broker_ids=tuple(ids),
        inventory=inv,
        pool=pool,
    )
