"""The cluster a sweep measures, from its spec's `cluster:` (testbed | bootstrap | inventory), with the means
to change and restore its broker configs.

Where the cluster is comes from cluster.target (one resolver for every command); this adds the
`BrokerConfigs` a trial applies through (dynamic configs by the Admin API; restart-only ones by the
testbed's rolling restart or, for an inventory, over SSH) and the ceiling the trials are held against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerconf.apply import BrokerConfigs
from brokerconf.restarts import RemoteRestarts
from cluster import admin, target
from cluster.inventory import Inventory, load_inventory
from cluster.target import Placement
from records.profile import ClusterProfile
from sweeps.spec import Spec
from testbed.dist import default_dist
from testbed.lifecycle import Testbed

Progress = Callable[[str], None]
# The ceiling model (advisor.ceiling) is above the sweep: its caller passes it in.
CeilingOf = Callable[[ClusterProfile | None, int], float | None]


@dataclass
class SweepTarget:
    """The cluster a sweep worker measures: where to connect, where clients run, how to reach configs."""

    bootstrap: str
    configs: BrokerConfigs
    placements: list[Placement]  # where load workers run (cluster.target)
    metrics_urls: dict[int, str]
    profile: ClusterProfile | None
    ceiling_mb_s: float | None
    common: dict[str, str] = field(default_factory=dict)  # client security settings (never written out)
    inventory: Inventory | None = None
    testbed: Testbed | None = None  # the local testbed's nodes (a robustness study's faults stop and start them)

    def tag(self) -> str:
        """The cluster's id as a file-name part (the broker snapshot is per cluster)."""
        try:
            cid = self.configs.admin.describe_cluster(request_timeout=10).result(timeout=15).cluster_id
        except Exception:
            cid = self.bootstrap
        return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(cid))

    def wait_whole(self, say: Callable[[str], None]) -> None:
        """Every broker up and every partition in full ISR (the testbed or an inventory restarts what is down)."""
        if self.configs.restarts is not None:
            self.configs.restarts.heal(say)
        else:
            admin.wait_full_isr(self.configs.admin, timeout_s=180, progress=say)


def resolve(
    spec: Spec,
    spec_file: Path,
    state_dir: Path,
    *,
    ceiling_of: CeilingOf,
    accept_new_host_keys: bool = False,
    say: Progress = print,
) -> SweepTarget:
    """The spec's cluster; `state_dir` is the testbed's (a spec's own `cluster.state_dir` wins)."""
    c = spec.cluster
    tb: Testbed | None = None
    if c.inventory:
        p = Path(c.inventory).expanduser()
        inv = load_inventory(p if p.is_absolute() else spec_file.parent / p)
        t = target.inventory(inv, accept_new_host_keys=accept_new_host_keys, progress=say, all_brokers=True)
        assert t.pool is not None
        restarts = RemoteRestarts(inv, t.pool, lambda: admin.admin_client(t.bootstrap, t.common))
        configs = _configs(t, say, restarts)
    elif c.is_testbed:
        sd = Path(c.state_dir) if c.state_dir else state_dir
        t = target.testbed(sd, instead="cluster.bootstrap")
        tb = Testbed(sd, default_dist())
        configs = BrokerConfigs.connect(t.bootstrap, testbed=tb, progress=say)
    else:
        assert c.bootstrap is not None
        t = target.bootstrap(
            c.bootstrap,
            c.admin,
            where="cluster.bootstrap",
            login="cluster.admin's sasl.username and sasl.password",
            tls="cluster.admin's ssl.ca.location",
        )
        configs = _configs(t, say, None)
    return SweepTarget(
        t.bootstrap,
        configs,
        list(t.placements),
        dict(t.metrics_urls),
        t.profile,
        ceiling_of(t.profile, spec.base_workload().replicationFactor or 3),
        common=dict(t.common),
        inventory=t.inventory,
        testbed=tb if c.is_testbed and not c.inventory else None,
    )


def _configs(t: target.Target, say: Progress, restarts: RemoteRestarts | None) -> BrokerConfigs:
    def new() -> Any:
        return admin.admin_client(t.bootstrap, t.common)

    return BrokerConfigs(new(), list(t.broker_ids), restarts=restarts, progress=say, reconnect=new)
