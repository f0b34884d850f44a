"""The local testbed: three KRaft nodes (broker + controller in one JVM each) on this machine.

Every node has its own data dir, ports and log file under the state folder (records.testbed), and runs
the Prometheus JMX exporter agent. In loopback mode the nodes listen on 127.0.0.1 with distinct ports; in
shaped mode each node runs in its own network namespace (testbed.netns) and load workers run in the
client namespaces. `up`, `down`, `kill`, `restart` and the rolling `set_overrides` keep the state file
true at every step, so another kafkatune process (or the next invocation) sees what runs.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cluster import admin as kadmin
from cluster import inventory, metrics
from cluster.target import node_running
from core import procs
from core.errors import EnvironmentProblem, UserError
from records.profile import PROFILE
from records.testbed import SCHEMA_VERSION, Node, TestbedState, load_state, node_dir, save_state, state_path
from testbed import netns, nodes, status, writeback
from testbed import profile as profiles
from testbed.dist import KafkaDist
from testbed.tls import SASL_USER, Security

NODES = 3
RUNNING = 3.0  # a broker's BrokerState when it serves
CLIENT_HOSTS = 2
Progress = Callable[[str], None]


class Testbed:
    """Start, stop and inspect the local 3-node cluster kept in `state_dir`."""

    __test__ = False

    def __init__(
        self,
        state_dir: Path,
        dist: KafkaDist,
        *,
        base_port: int = 29090,
        prefix: str = "kt",
        heap: str | None = None,
        jvm_extra: Sequence[str] | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.dist = dist
        self.base_port = base_port
        self.prefix = prefix
        asked = heap is not None or jvm_extra is not None
        self._jvm_asked = tuple(nodes.jvm_options(heap or nodes.HEAP, jvm_extra or ())) if asked else None
        self.security = Security(state_dir, dist.java)

    @property
    def jvm_options(self) -> list[str]:
        """What every start of a node, and the profile, use: `heap` and `jvm_extra` when given (nodes.jvm_options),
        else those the testbed was brought up with (a sweep restarting a node from its own process keeps its heap)."""
        kept = self.state().jvm_options if self._jvm_asked is None and self.state_file.exists() else ()
        return list(self._jvm_asked or kept) or nodes.jvm_options(nodes.HEAP)

    # ---- state -------------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return state_path(self.state_dir)

    @property
    def profile_file(self) -> Path:
        return self.state_dir / PROFILE

    def state(self) -> TestbedState:
        if not self.state_file.exists():
            raise UserError(f"no testbed in {self.state_dir}: run `kafkatune testbed up` first")
        return load_state(self.state_file)

    def _save(self, st: TestbedState) -> None:
        save_state(self.state_file, st)

    def node_dir(self, node_id: int) -> Path:
        return node_dir(self.state_dir, node_id)

    def network(self, st: TestbedState) -> netns.ShapedNetwork | None:
        return netns.of_state(st, NODES, CLIENT_HOSTS)

    def client_netns(self, st: TestbedState) -> list[str | None]:
        """Where load workers run: the client hosts' namespaces when shaped, this host (None) otherwise."""
        return list(st.client_netns) or [None]

    def client_security(self, mechanism: str = "SCRAM-SHA-512") -> inventory.Security:
        """An inventory's `security` block for the SASL_SSL listener (the password by file reference)."""
        return self.security.client_security(mechanism)

    @staticmethod
    def _node(st: TestbedState, node_id: int) -> Node:
        n = st.node(node_id)
        if n is None:
            raise UserError(f"no node {node_id}: the testbed has nodes {[n.id for n in st.nodes]}")
        return n

    # ---- layout ------------------------------------------------------------------------------------
    def _new_state(self, network: str, nic_mb_s: float | None, subnet: str, security: str) -> TestbedState:
        sasl = security == "sasl_ssl"
        if network == "shaped":
            net = netns.plan(self.prefix, subnet, NODES, CLIENT_HOSTS, 1.0)
            layout = tuple(
                Node(i, net.host(f"b{i}").ip, 9092, 9093, 9404, net.host(f"b{i}").netns, 9094 if sasl else None)
                for i in range(1, NODES + 1)
            )
            clients = tuple(h.netns for h in netns.host_names(net, "c"))
        else:
            b = self.base_port
            layout = tuple(
                Node(i, "127.0.0.1", b + i, b + 100 + i, b + 200 + i, None, b + 300 + i if sasl else None)
                for i in range(1, NODES + 1)
            )
            clients = ()
        shaped = network == "shaped"
        return TestbedState(
            SCHEMA_VERSION,
            network,
            nodes.kafka_uuid(),
            self.dist.version,
            layout,
            nic_mb_s if shaped else None,
            subnet if shaped else None,
            self.prefix,
            security=security,
            client_netns=clients,
        )

    # ---- processes ---------------------------------------------------------------------------------
    def _write_node_files(self, st: TestbedState, node: Node, overrides: Mapping[str, str] | None = None) -> None:
        props = nodes.properties(self.state_dir, st, node, st.overrides if overrides is None else overrides)
        if node.sasl_port:
            props.update(self.security.broker_props())
        nodes.write_files(self.state_dir, node, props)

    def _start(self, st: TestbedState, node: Node) -> TestbedState:
        """Start `node`; returns the state with its pid, saved."""
        st = st.with_pid(node.id, nodes.start(self.dist, self.state_dir, node, self.jvm_options))
        self._save(st)
        return st

    def _alive(self, st: TestbedState, node: Node) -> int | None:
        return st.pids.get(str(node.id)) if node_running(self.state_dir, st, node) else None

    def _wait_serving(self, st: TestbedState, ids: list[int], progress: Progress, timeout_s: float = 180) -> None:
        admin = kadmin.admin_client(st.bootstrap_servers)
        deadline = time.monotonic() + timeout_s
        want = set(ids)
        last = ""
        while time.monotonic() < deadline:
            for n in st.nodes:
                if n.id in want and self._alive(st, n) is None:
                    log = self.node_dir(n.id) / "server.log"
                    raise EnvironmentProblem(f"node {n.id} exited while starting: {nodes.why_exited(log)} ({log})")
            try:
                brokers = set(kadmin.live_brokers(admin, timeout_s=3))
            except Exception:
                brokers = set()
            # a node waited for serves once it says so itself; the others, while the cluster lists them
            serving = (brokers - want) | self._running(st, want & brokers)
            msg = f"brokers serving: {len(serving & {n.id for n in st.nodes})}/{NODES}"
            if msg != last:
                progress(msg)
                last = msg
            if want <= serving:
                return
            time.sleep(0.5)
        raise EnvironmentProblem(
            f"brokers {sorted(want)} not serving after {timeout_s:.0f} s; see {self.state_dir}/node*/server.log"
        )

    def _running(self, st: TestbedState, ids: set[int]) -> set[int]:
        """The nodes of `ids` that say their broker state is RUNNING. A node's exporter answers a second after its
        JVM starts, long before the broker registers; and the cluster's metadata still lists a node killed a moment
        ago as live until its session expires: neither says it serves."""
        out = set()
        for n in st.nodes:
            if n.id in ids:
                try:
                    if metrics.scrape(n.metrics_url, timeout_s=2).get("broker_state") == RUNNING:
                        out.add(n.id)
                except OSError:
                    continue
        return out

    def _stop_node(self, st: TestbedState, node: Node, timeout_s: float = 60) -> None:
        pid = self._alive(st, node)
        if pid is not None:
            procs.stop(pid, timeout_s=timeout_s)  # SIGTERM: a controlled shutdown moves leadership away first

    # ---- commands ----------------------------------------------------------------------------------
    def up(
        self,
        *,
        network: str = "loopback",
        nic_mb_s: float | None = None,
        subnet: str = "198.18.0",
        security: str | None = None,
        progress: Progress = print,
    ) -> TestbedState:
        """Start every node that is not running (a new cluster when there is none); measure the machine's profile
        (disk, and the links when shaped) for a new cluster or network, or when there is none yet.

        `security="sasl_ssl"`: each node also gets a SASL_SSL listener for clients (SCRAM-SHA-512 and PLAIN,
        a certificate made with keytool; brokers talk to each other over PLAINTEXT). None: what the existing
        testbed has (plaintext for a new one), so healing or restarting never drops the listener."""
        if security not in (None, "plaintext", "sasl_ssl"):
            raise UserError(f"--security must be plaintext or sasl_ssl (got {security!r})")
        if not self.dist.installed():
            raise EnvironmentProblem("Kafka jars not installed: run `kafkatune testbed install`")
        if network == "shaped":
            ok, why = netns.can_shape()
            if not ok:
                raise EnvironmentProblem(f"--network shaped needs root and iproute2 ({why}); use --network loopback")
            if not nic_mb_s or nic_mb_s <= 0:
                raise UserError("--nic-mbps must be a positive number of MB/s with --network shaped")
        st = self._existing(network, nic_mb_s, subnet, security, progress)
        if st is None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            st = self._new_state(network, nic_mb_s, subnet, security or "plaintext")
        if st.jvm_options != tuple(self.jvm_options):  # a new testbed, or options asked anew: the next starts use them
            st = st.replace(jvm_options=tuple(self.jvm_options))
        self._save(st)
        if st.security == "sasl_ssl":
            self.security.make_keystore(st)
        net = self.network(st)
        built = net is not None and not netns.exists(net)
        if net is not None and built:
            progress(f"building the shaped network: {len(net.hosts)} hosts at {net.rate_mb_s:g} MB/s each way")
            netns.create(net)
        to_start = [n for n in st.nodes if self._alive(st, n) is None]
        wb = writeback.apply(self.state_dir)
        if to_start:
            progress(f"host page-cache writeback: {wb if isinstance(wb, str) else 'continuous (testbed.writeback)'}")
        for n in to_start:
            self._write_node_files(st, n)
            nodes.format_storage(self.dist, self.state_dir, st, n)
            progress(f"starting node {n.id} on {n.listener}")
            st = self._start(st, n)
        self._wait_serving(st, [n.id for n in st.nodes], progress)
        if to_start and len(to_start) < NODES:
            kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), progress=progress)
        if st.security == "sasl_ssl":
            self.security.add_scram_user(st)
            where = self.security.dir
            progress(f"SASL_SSL listener: {st.sasl_bootstrap_servers} (user {SASL_USER}, password in {where})")
        # A new cluster or network is measured; not a node started again on the same disk and links (a heal): 384
        # MiB of fsynced writes, iperf3 between the namespaces when shaped
        if built or len(to_start) == NODES or not self.profile_file.exists():
            profiles.measure(self.state_dir, st, self.network(st), progress, jvm=self.jvm_options, writeback=wb)
        return st

    def _existing(
        self, network: str, nic_mb_s: float | None, subnet: str, security: str | None, progress: Progress
    ) -> TestbedState | None:
        """The testbed's state when one exists with this network and security; otherwise it is removed."""
        if not self.state_file.exists():
            return None
        st = self.state()
        if (
            st.network != network
            or (network == "shaped" and (st.nic_mb_s != nic_mb_s or st.subnet != subnet))
            or (security is not None and st.security != security)
        ):
            progress(f"network or security changed ({st.network}/{st.security} -> {network}/{security}): recreating")
            self.down(wipe=True, progress=progress)
            return None
        return st

    def down(self, *, wipe: bool = False, progress: Progress = print) -> None:
        """Stop every node cleanly (SIGTERM, up to 30 s); `wipe` kills them instead, since nothing they would flush
        is kept, and deletes the data, logs and state. All at once: one by one, the last nodes would wait for a
        controller quorum that has already gone."""
        if not self.state_file.exists():
            progress("no testbed running")
            return
        st = self.state()
        pids = {n.id: pid for n in st.nodes if (pid := self._alive(st, n)) is not None}
        for nid in pids:
            progress(f"{'killing' if wipe else 'stopping'} node {nid}")
        procs.stop_all(pids.values(), timeout_s=0 if wipe else 30)
        st = st.replace(pids={})
        self._save(st)
        net = self.network(st)
        if net is not None:
            netns.destroy(net)
        if (before := writeback.release(self.state_dir)) is not None:
            progress(f"host page-cache writeback put back as found: {before}")
        if wipe:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            progress(f"removed {self.state_dir}")

    def kill(self, node_id: int) -> int:
        st = self.state()
        pid = self._alive(st, self._node(st, node_id))
        if pid is None:
            raise UserError(f"node {node_id} is not running")
        procs.kill(pid)
        return pid

    def stop(self, node_id: int, *, hard: bool = False) -> None:
        """Stop one node and leave it down: SIGTERM, a controlled shutdown that moves its leaderships away
        first, or with `hard` SIGKILL, a crash. Returns once its process is gone."""
        st = self.state()
        node = self._node(st, node_id)
        if hard:
            self.kill(node_id)
        else:
            self._stop_node(st, node)

    def start(self, node_id: int, progress: Progress = print, timeout_s: float = 180) -> None:
        """Start one stopped node with the testbed's config; returns once its broker state is RUNNING (not waiting
        for its ISR)."""
        st = self.state()
        node = self._node(st, node_id)
        if self._alive(st, node) is not None:
            raise UserError(f"node {node_id} is already running")
        self._write_node_files(st, node)
        st = self._start(st, node)
        self._wait_serving(st, [node_id], progress, timeout_s)

    def restart(
        self,
        node_id: int,
        progress: Progress = print,
        overrides: Mapping[str, str] | None = None,
        *,
        keep_config: bool = False,
    ) -> None:
        """Clean restart of one node; returns once it serves and every partition has a full ISR.

        `overrides`: the restart-only configs it starts with (default: the testbed's current ones).
        `keep_config`: start it with its server.properties as it is on disk (edited by someone else, as a
        remote sweep does over SSH), instead of writing it from the testbed's state.
        """
        st = self.state()
        node = self._node(st, node_id)
        progress(f"stopping node {node_id}")
        self._stop_node(st, node)
        if not keep_config:
            self._write_node_files(st, node, overrides)
        progress(f"starting node {node_id}")
        st = self._start(st, node)
        self._wait_serving(st, [node_id], progress)
        kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), progress=progress)

    def set_overrides(self, overrides: Mapping[str, str], progress: Progress = print) -> int:
        """Make `overrides` the restart-only configs of every node; rolling restart if they changed.

        One node at a time, each back in full ISR before the next goes down, so a min.insync.replicas=2
        topic stays writable throughout. Returns the number of node restarts.
        """
        st = self.state()
        if st.overrides == overrides:
            return 0
        for n in st.nodes:
            self.restart(n.id, progress=progress, overrides=overrides)
        # Recorded only once every node runs them: after a failed roll the state still differs,
        # so the next call rolls all nodes again instead of trusting half-restarted brokers.
        self._save(self.state().replace(overrides=dict(overrides)))
        return len(st.nodes)

    def heal(self, progress: Progress = print) -> list[int]:
        """Start the nodes that are down and wait for full ISR; returns the ids that were restarted."""
        st = self.state()
        dead = [n for n in st.nodes if self._alive(st, n) is None]
        for n in dead:
            self._write_node_files(st, n)
            progress(f"healing: starting node {n.id}")
            st = self._start(st, n)
        if dead:
            self._wait_serving(st, [n.id for n in st.nodes], progress)
        kadmin.wait_full_isr(kadmin.admin_client(st.bootstrap_servers), timeout_s=180, progress=progress)
        return [n.id for n in dead]

    def status(self) -> status.ClusterStatus:
        """The cluster as it runs now: each node's row (testbed.status.node_row), the active controller and the
        under-replicated partitions (None when no node answers)."""
        st = self.state()
        rows, controller = [], None
        for n in st.nodes:
            row, is_controller = status.node_row(n, self._alive(st, n), self.node_dir(n.id) / "server.log")
            rows.append(row)
            controller = n.id if is_controller else controller
        alive = any(r.alive for r in rows)
        return status.ClusterStatus(
            st.bootstrap_servers,
            st.network,
            st.kafka_version,
            st.cluster_id,
            controller,
            status.under_replicated(st.bootstrap_servers) if alive else None,
            tuple(rows),
            str(self.profile_file),
        )
