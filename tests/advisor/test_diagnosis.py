"""Planted problems on the live testbed, each diagnosed by the advisor from real measurements: the brokers' own
settings applied and read back into the record, the exporters' figures the diagnosis reads, and `advise` sampling
a live cluster. The diagnosis of the other planted problems (topic overrides, small batches, a slow consumer, one
partition, a long linger, a client-bound producer) is judged on their runs recorded once on this testbed:
tests/advisor/test_recorded_diagnosis.py."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from brokerconf.apply import BrokerConfigs
from cluster import metrics
from records.snapshot import BrokerSnapshot
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune, kafkatune_popen, wait_for_line, write_workload


@pytest.fixture()
def configs(healthy: TestbedState, testbed: Testbed) -> Iterator[tuple[BrokerConfigs, BrokerSnapshot]]:
    """The brokers' configs, restored to what they were after the test whatever happens."""
    bc = BrokerConfigs.connect(healthy.bootstrap_servers, testbed=testbed, progress=print)
    snap = bc.snapshot()
    try:
        yield bc, snap
    finally:
        bc.restore(snap)
        after = bc.snapshot()
        assert after.brokers == snap.brokers


def _advise_live(testbed: Testbed, bootstrap: str) -> list[dict[str, Any]]:
    proc = kafkatune(
        "advise", "--bootstrap", bootstrap, "--state-dir", str(testbed.state_dir), "--seconds", "3", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout)["recommendations"])


def test_fsync_per_message_is_named_live_by_advise(
    configs: tuple[BrokerConfigs, BrokerSnapshot], testbed: Testbed, healthy: TestbedState, tmp_path: Path, unique: str
) -> None:
    """log.flush.interval.messages=1 on every broker, one bench under it: `advise --bootstrap` samples the testbed's
    exporters (found from its state, no --metrics-url) while the bench runs and names the flushes it measures. The
    bench's window outlasts any start-up and is interrupted once advise is done (the CLI's exit 130, though started
    with SIGINT ignored, as cron starts it), so advise samples load however slowly either starts. The analysis of
    such a run is judged on one recorded at the maximum rate (tests/advisor/test_recorded_diagnosis.py,
    broker-flush)."""
    bc, snap = configs
    bc.apply({"log.flush.interval.messages": "1"}, {}, snap)
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"fsync-{unique}",
        partitionsPerTopic=3,
        warmupDurationMinutes=0.05,
        testDurationMinutes=2.0,  # interrupted below once advise has sampled it (about 15 s here)
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    log = tmp_path / "bench.log"  # --no-scale-out: else a client-bound run would run again with more producers
    args = ("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(tmp_path / "run"), "--no-scale-out")
    load = kafkatune_popen(*args, log=log)
    try:
        # advise samples 3 s: after the topic, the workers and the warm-up, however long they take
        wait_for_line(load, log, r"^t=\s*\d+s/\d+ measure ", timeout_s=180)
        recs = _advise_live(testbed, healthy.bootstrap_servers)
        still = load.poll() is None
    finally:
        if load.poll() is None:
            load.send_signal(signal.SIGINT)
        try:
            rc = load.wait(timeout=120)
        except subprocess.TimeoutExpired:
            load.kill()  # not past the test: at its maximum rate the bench fills the disk in minutes
            raise
    assert still, f"the bench ended before advise sampled it: {recs}"
    assert rc == 130, log.read_text()[-3000:]  # interrupted, and said so
    live = next((r for r in recs if r["rule"] == "live-binding"), None)
    assert live is not None, recs
    assert "forced_flush" in live["title"] and "log flushes per produce request" in live["title"], live
    assert live["action"] == {"log.flush.interval.messages": "9223372036854775807"}


def test_brokers_report_counter_based_idle_and_the_produce_time_split(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path, unique: str
) -> None:
    """The exporter publishes what the diagnosis reads; a run's broker rows carry it per second."""
    page = metrics.scrape(healthy.nodes[0].metrics_url)
    keys = (
        "request_handler_idle_ns",
        "produce_total_ms",
        "produce_remote_ms",
        "produce_requests",
        "isr_shrinks",
        "follower_fetch_queue_ms",
        "follower_fetches",
        "log_flushes",
        "replica_max_lag",
        "active_controller",
    )
    for key in keys:
        assert key in page, (key, sorted(page))
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"split-{unique}",
        partitionsPerTopic=3,
        warmupDurationMinutes=0.05,
        testDurationMinutes=0.1,
        producerConfig={"acks": "all"},
    )
    out = tmp_path / "run"
    # the diagnosis of this very setup: bench would otherwise run a client-bound one again with more producers
    proc = kafkatune("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(out), "--no-scale-out")
    assert proc.returncode == 0, proc.stderr
    b = pq.read_table(out / "broker_metrics.parquet").to_pylist()
    meas = [r for r in b if r["phase"] == "measure" and r.get("produce_requests_per_s")]
    idle = [r["request_handler_idle"] for r in meas]
    assert meas and all(0 <= x <= 1 for x in idle) and sum(idle) / len(idle) < 1, idle
    req = sum(r["produce_requests_per_s"] for r in meas)
    parts = sum(r[f"{k}_per_s"] for r in meas for k in metrics.PRODUCE_TIMES if k != "produce_total_ms")
    total = sum(r["produce_total_ms_per_s"] for r in meas)
    # the parts add up to the total (ThrottleTimeMs, not read, is 0 without quotas)
    assert parts == pytest.approx(total, rel=0.1) and total / req > 0


def test_replica_fetchers_equal_to_the_broker_count_are_flagged_live(
    configs: tuple[BrokerConfigs, BrokerSnapshot], testbed: Testbed, healthy: TestbedState
) -> None:
    bc, snap = configs
    before = _advise_live(testbed, healthy.bootstrap_servers)
    assert "replica-fetchers-multiple" not in {r["rule"] for r in before}  # the default, 1, is fine
    # metrics were sampled from the brokers' JMX exporters (the testbed's), not only configs read
    assert any(r["rule"].startswith("live-") for r in before)
    assert any("active controller: exactly one in" in e for r in before for e in r["evidence"]), before
    bc.apply({"num.replica.fetchers": "3"}, {}, snap)
    after = _advise_live(testbed, healthy.bootstrap_servers)
    flag = next(r for r in after if r["rule"] == "replica-fetchers-multiple")
    assert flag["action"] == {"num.replica.fetchers": "4"}
    assert set(flag["trials"]) == {"broker 1", "broker 2", "broker 3"}
    assert "multiple of the broker count 3" in flag["evidence"][0]
