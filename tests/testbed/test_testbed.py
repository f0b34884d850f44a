"""The real 3-node testbed: status, metrics, kcat, restart."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster import admin, metrics
from records.testbed import Node, TestbedState, load_state, save_state
from testbed import cds, netns, nodes, writeback
from testbed.dist import KafkaDist
from testbed.lifecycle import RUNNING, Testbed
from testbed.nodes import HEAP, jvm_options
from tests.helpers import REPO, kafkatune


def test_status_json_lists_three_live_nodes(healthy: TestbedState, testbed: Testbed) -> None:
    proc = kafkatune("testbed", "status", "--json", "--state-dir", str(testbed.state_dir))
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    assert st["bootstrap_servers"] == healthy.bootstrap_servers
    assert [n["id"] for n in st["nodes"]] == [1, 2, 3]
    assert all(n["alive"] and n["pid"] for n in st["nodes"])
    assert st["controller"] in (1, 2, 3)
    assert st["under_replicated_partitions"] == []


def test_every_broker_exports_jmx_metrics(healthy: TestbedState) -> None:
    for n in healthy.nodes:
        m = metrics.scrape(n.metrics_url)
        for k in ("bytes_in", "replication_bytes_in", "bytes_out", "under_replicated"):
            assert k in m, f"node {n.id} lacks {k}"


def test_broker_defaults_are_synchronous_replication(healthy: TestbedState, testbed: Testbed) -> None:
    props = (testbed.node_dir(1) / "server.properties").read_text()
    assert "default.replication.factor=3" in props
    assert "min.insync.replicas=2" in props


def test_profile_written(healthy: TestbedState, testbed: Testbed) -> None:
    prof = json.loads(testbed.profile_file.read_text())
    assert prof["kafka_version"] == healthy.kafka_version
    assert len(prof["brokers"]) == 3
    assert prof["network"]["mode"] == "loopback" and prof["network"]["shaped"] is False
    disk = prof["disk"]  # the probe ran at `up`: all three log dirs written at once
    assert disk["write_mb_s_measured"] > 0 and disk["fsync_per_s"] > 0
    assert len(disk["log_dirs"]) == 3 and disk["write_mb_s_total"] >= disk["write_mb_s_measured"]
    machine = prof["machine"]  # the CPU's speed at `up`, and the host's writeback the brokers ran with
    lo, hi = machine["cpu_probe_ms_range"]
    assert 0 < lo <= machine["cpu_probe_ms"] <= hi
    wb = machine["writeback"]
    assert wb == writeback.read() if isinstance(wb, dict) else "needs root" in wb, wb
    if isinstance(wb, dict):  # continuous while a testbed is up
        assert wb["dirty_expire_centisecs"] == writeback.SMOOTH["dirty_expire_centisecs"], wb


def test_up_on_a_serving_testbed_measures_nothing_again(healthy: TestbedState, testbed: Testbed) -> None:
    """`up` again is idempotent: no node started, so no 384 MiB of disk writes before the next measurement."""
    before = testbed.profile_file.stat().st_mtime_ns
    said: list[str] = []
    testbed.up(progress=said.append)
    assert testbed.profile_file.stat().st_mtime_ns == before, said
    assert not any("measuring" in m for m in said), said


def test_a_formatted_log_dir_is_not_formatted_again(tmp_path: Path) -> None:
    """A node whose log dir holds meta.properties (a restart, a heal) starts no format JVM: here one with no Kafka
    install to run, and no Java may start in the fast tests either."""
    data = tmp_path / "node1" / "data"
    data.mkdir(parents=True)
    (data / "meta.properties").write_text("version=1\n")
    node = Node(1, "127.0.0.1", 24091, 24191, 24291, None, None)
    st = TestbedState(1, "loopback", "id", "4.3.1", (node,))
    nodes.format_storage(KafkaDist(tmp_path / "no-kafka"), tmp_path, st, node)
    assert (data / "meta.properties").read_text() == "version=1\n"


def test_up_after_a_crash_starts_the_node_and_keeps_the_profile(healthy: TestbedState, testbed: Testbed) -> None:
    """A node killed and started again by `up` runs on the same disk and links: the profile stays as measured."""
    before = testbed.profile_file.stat().st_mtime_ns
    testbed.kill(2)
    said: list[str] = []
    testbed.up(progress=said.append)
    assert "starting node 2 on " + healthy.nodes[1].listener in said, said
    assert all(n.alive for n in testbed.status().nodes)
    assert testbed.profile_file.stat().st_mtime_ns == before, said
    assert not any("measuring" in m for m in said), said


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed (make installs it)")
def test_kcat_lists_brokers_and_round_trips(healthy: TestbedState, unique: str) -> None:
    boot = healthy.bootstrap_servers
    md = subprocess.run(["kcat", "-b", boot, "-L", "-J"], capture_output=True, text=True, timeout=60, check=True)
    assert len(json.loads(md.stdout)["brokers"]) == 3
    topic = f"kt-kcat-{unique}"
    subprocess.run(
        ["kcat", "-b", boot, "-P", "-t", topic, "-X", "acks=all"],
        input=f"hello-{unique}\n",
        text=True,
        timeout=60,
        check=True,
    )
    out = subprocess.run(
        ["kcat", "-b", boot, "-C", "-t", topic, "-o", "beginning", "-c", "1", "-e"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == f"hello-{unique}"
    a = admin.admin_client(boot)
    parts = admin.partitions(a, topic)
    assert parts and all(len(p.replicas) == 3 for p in parts)  # auto-created with the testbed default
    a.delete_topics([topic])


def _class_archive(testbed: Testbed) -> Path:
    """The brokers' class archive (testbed.cds), made first when there is none yet: the node whose JVM was asked to
    write it is restarted (its clean stop writes it, its next start moves it into place)."""
    final = cds.archive(testbed.dist)
    if not final.exists():
        node = {n.pid: n.id for n in testbed.status().nodes}.get(cds.dumper(final))
        if node is None:  # the JVM asked was killed: the next start is asked
            testbed.restart(2, progress=print)
            node = 2
        testbed.restart(node, progress=print)
    assert final.exists()
    return final


def test_restart_waits_for_full_isr(healthy: TestbedState, testbed: Testbed) -> None:
    """And the node restarted maps the brokers' class archive (testbed.cds)."""
    archive = _class_archive(testbed)
    old = testbed.status().nodes[1].pid
    proc = kafkatune("testbed", "restart", "2", "--state-dir", str(testbed.state_dir), timeout=300)
    assert proc.returncode == 0, proc.stderr
    st = testbed.status()
    assert st.nodes[1].alive and st.nodes[1].pid != old
    assert admin.under_replicated(admin.admin_client(healthy.bootstrap_servers)) == []
    assert str(archive) in Path(f"/proc/{st.nodes[1].pid}/maps").read_text()


def test_heal_after_a_crash_returns_once_the_node_itself_serves(healthy: TestbedState, testbed: Testbed) -> None:
    """A node killed a moment ago is still listed as live until its session expires, and its exporter answers a
    second after its JVM starts: heal returns only once the node says its broker is RUNNING (a sweep's next trial
    ran against a broker still registering)."""
    testbed.kill(3)
    said: list[str] = []
    assert testbed.heal(progress=said.append) == [3]
    node = next(n for n in testbed.state().nodes if n.id == 3)
    assert metrics.scrape(node.metrics_url).get("broker_state") == RUNNING
    # its progress counts the healed node once it serves, not while the cluster still lists it: "3/3" only last
    counts = [x for x in said if x.startswith("brokers serving:")]
    assert counts[-1] == "brokers serving: 3/3" and "brokers serving: 3/3" not in counts[:-1], said


def test_shaped_tests_skip_with_the_reason_where_cap_net_admin_is_missing(tmp_path: Path) -> None:
    # The same suite, run with CAP_NET_ADMIN dropped from the bounding set (as a container would): every shaped
    # test is skipped with the missing capability named, before any namespace or testbed is touched.
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) not installed")
    proc = subprocess.run(
        [
            "setpriv",
            "--bounding-set",
            "-net_admin",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "tests/e2e/test_shaped.py",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" not in proc.stdout and " failed" not in proc.stdout and " error" not in proc.stdout
    assert re.search(r"\d+ skipped", proc.stdout), proc.stdout[-2000:]
    assert "shaped mode: needs CAP_NET_ADMIN" in proc.stdout, proc.stdout[-2000:]
    assert netns.missing_capabilities("CapEff:\t000001fffeffefff\n") == ["CAP_NET_ADMIN"]
    assert netns.missing_capabilities("CapEff:\t0000000000000000\n") == ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"]


def test_a_node_that_exited_while_starting_is_reported_with_its_last_error(tmp_path: Path) -> None:
    """CI once met "node 1 exited while starting" after a hard bounce, and the testbed's wipe took the log with
    it: the message carries the log's last error line."""
    from testbed.nodes import why_exited

    log = tmp_path / "server.log"
    log.write_text(
        "[2026-11-26 06:20:01,000] INFO starting (kafka.Kafka$)\n"
        "[2026-11-26 06:20:02,000] ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)\n"
        "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:24091: Address already "
        "in use.\n"
        "[2026-11-26 06:20:02,100] INFO shut down completed (kafka.server.KafkaRaftServer)\n"
    )
    assert why_exited(log).startswith("org.apache.kafka.common.KafkaException: Socket server failed to bind")
    assert why_exited(tmp_path / "none.log") == "no server.log"


def test_a_node_another_process_starts_gets_the_jvm_options_the_testbed_was_brought_up_with(tmp_path: Path) -> None:
    """A sweep restarts nodes from its own process, which asks for no heap: the nodes keep the testbed's JVM options
    (the suite's 768-MiB brokers once came back from a rolling restart with 1 GiB)."""
    kafka = KafkaDist(tmp_path / "kafka")
    assert Testbed(tmp_path / "none", kafka).jvm_options == jvm_options(HEAP)  # no testbed yet: the defaults
    asked = Testbed(tmp_path / "tb", kafka, heap="512m", jvm_extra=["-XX:+AlwaysPreTouch"])
    assert asked.jvm_options[:2] == ["-Xms512m", "-Xmx512m"] and asked.jvm_options[-1] == "-XX:+AlwaysPreTouch"
    node = Node(1, "127.0.0.1", 24091, 24191, 24291, None, None)
    st = TestbedState(1, "loopback", "id", "4.3.1", (node,), jvm_options=tuple(asked.jvm_options))
    asked.state_dir.mkdir()
    save_state(asked.state_file, st)
    assert load_state(asked.state_file) == st
    assert Testbed(asked.state_dir, kafka).jvm_options == asked.jvm_options  # another process, asking nothing
    assert Testbed(asked.state_dir, kafka, heap="2g").jvm_options[:2] == ["-Xms2g", "-Xmx2g"]  # asked anew
