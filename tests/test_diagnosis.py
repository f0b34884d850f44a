"""Planted problems on the live testbed, each diagnosed by the advisor from real measurements."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.analysis import analyze
from advisor.rules import recommend
from brokerconf.apply import BrokerConfigs
from records.analysis import load_table, rows
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune, write_workload


@pytest.fixture()
def configs(healthy: TestbedState, testbed: Testbed) -> Iterator[tuple[BrokerConfigs, dict[str, Any]]]:
    """The brokers' configs, restored to what they were after the test whatever happens."""
    bc = BrokerConfigs.connect(healthy.bootstrap_servers, testbed=testbed, progress=print)
    snap = bc.snapshot()
    try:
        yield bc, snap
    finally:
        bc.restore(snap)
        after = bc.snapshot()
        assert after["brokers"] == snap["brokers"]


def test_fsync_per_message_is_diagnosed_as_disk_bound(
    configs: tuple[BrokerConfigs, dict[str, Any]], testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    bc, snap = configs
    bc.apply({"log.flush.interval.messages": "1"}, {}, snap)
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"fsync-{unique}",
        partitionsPerTopic=3,
        warmupDurationMinutes=0.05,
        testDurationMinutes=0.15,
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    out = tmp_path / "run"
    proc = kafkatune("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "result.json").read_text())
    # the record says what the brokers ran with
    assert {b: c["log.flush.interval.messages"] for b, c in res["brokerConfig"].items()} == {
        "1": "1",
        "2": "1",
        "3": "1",
    }
    analyze(out, spark)
    (t,) = rows(load_table(out / "analysis", "trials"))
    assert t["bound"] == "disk", t["bound_reason"]
    assert "log.flush.interval.messages=1" in t["bound_reason"]
    recs = recommend(
        load_table(out / "analysis", "trials"), load_table(out / "analysis", "params"), {"brokers": 3, "rf": 3}
    )
    fs = next(r for r in recs if r.rule == "fsync-per-message")
    assert fs.severity == "high" and out.name in fs.trials


def _advise_live(testbed: Testbed, bootstrap: str) -> list[dict[str, Any]]:
    proc = kafkatune(
        "advise", "--bootstrap", bootstrap, "--state-dir", str(testbed.state_dir), "--seconds", "3", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout)["recommendations"])


def test_replica_fetchers_equal_to_the_broker_count_are_flagged_live(
    configs: tuple[BrokerConfigs, dict[str, Any]], testbed: Testbed, healthy: TestbedState
) -> None:
    bc, snap = configs
    before = _advise_live(testbed, healthy.bootstrap_servers)
    assert "replica-fetchers-multiple" not in {r["rule"] for r in before}  # the default, 1, is fine
    # metrics were sampled from the brokers' JMX exporters (the testbed's), not only configs read
    assert any(r["rule"].startswith("live-") for r in before)
    bc.apply({"num.replica.fetchers": "3"}, {}, snap)
    after = _advise_live(testbed, healthy.bootstrap_servers)
    flag = next(r for r in after if r["rule"] == "replica-fetchers-multiple")
    assert flag["action"] == {"num.replica.fetchers": "4"}
    assert set(flag["trials"]) == {"broker 1", "broker 2", "broker 3"}
    assert "multiple of the broker count 3" in flag["evidence"][0]
