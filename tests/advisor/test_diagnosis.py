"""Planted problems on the live testbed, each diagnosed by the advisor from real measurements."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from advisor.analysis import analyze
from advisor.rules import recommend
from brokerconf.apply import BrokerConfigs
from cluster import metrics
from records.analysis import load_table, rows
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune, kafkatune_popen, write_workload


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


def _planted(
    testbed: Testbed, spark: Any, tmp_path: Path, name: str, **workload: Any
) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """A short max-rate bench with `workload` (write_workload's fields), analysed: its trials row, the
    recommendations over it, and its record."""
    wl = write_workload(
        tmp_path / "w.yaml", name=name, warmupDurationMinutes=0.05, testDurationMinutes=0.15, **workload
    )
    out = tmp_path / "run"
    # the diagnosis of this very setup: bench would otherwise run a client-bound one again with more producers
    proc = kafkatune("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(out), "--no-scale-out")
    assert proc.returncode == 0, proc.stderr
    analyze(out, spark)
    (t,) = rows(load_table(out / "analysis", "trials"))
    recs = recommend(
        load_table(out / "analysis", "trials"), load_table(out / "analysis", "params"), {"brokers": 3, "rf": 3}
    )
    print(f"{name}: {t['mb_s']:.2f} MB/s, bound {t['bound']}: {t['bound_reason']}")
    print("  top recommendation:", recs[0].rule, recs[0].action, recs[0].evidence[:1])
    return t, recs, json.loads((out / "result.json").read_text())


def test_broker_level_fsync_per_message_is_diagnosed_as_forced_flush(
    configs: tuple[BrokerConfigs, dict[str, Any]], testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    bc, snap = configs
    bc.apply({"log.flush.interval.messages": "1"}, {}, snap)
    t, recs, res = _planted(
        testbed,
        spark,
        tmp_path,
        f"fsync-{unique}",
        partitionsPerTopic=3,
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    # the record says what the brokers ran with
    ran = {b: c["log.flush.interval.messages"] for b, c in res["brokerConfig"].items()}
    assert ran == {"1": "1", "2": "1", "3": "1"}
    # measured, not read from the config: the brokers flushed for (nearly) every produce request
    assert t["bound"] == "forced_flush", t["bound_reason"]
    assert t["log_flushes_per_request"] >= 0.5 and t["log_flush_ms"] is not None
    assert "broker log.flush.interval.messages=1" in t["bound_reason"]
    assert recs[0].rule == "fsync-per-message" and recs[0].severity == "high"
    assert recs[0].action == {"log.flush.interval.messages": "9223372036854775807"}


def test_topic_level_flush_messages_is_diagnosed_as_forced_flush(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    t, recs, _ = _planted(
        testbed,
        spark,
        tmp_path,
        f"tflush-{unique}",
        partitionsPerTopic=3,
        topicConfig={"flush.messages": "1"},
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    assert t["bound"] == "forced_flush", t["bound_reason"]
    assert "topic flush.messages=1" in t["bound_reason"] and t["log_flushes_per_request"] >= 0.5
    assert recs[0].rule == "fsync-per-message" and recs[0].action == {"flush.messages": "(delete the topic override)"}


def test_small_batches_are_diagnosed_as_small_batches_not_client(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """batch.size 1 KiB and linger.ms 0: one 1 KB record per batch. The producer's buffer fills at the maximum
    rate, which is the cluster's back-pressure, not a client limit."""
    t, recs, _ = _planted(
        testbed,
        spark,
        tmp_path,
        f"small-{unique}",
        partitionsPerTopic=6,
        producerConfig={"acks": "all", "batch.size": 1024, "linger.ms": 0},
    )
    assert t["bound"] == "small_batches", t["bound_reason"]
    assert t["bytes_per_request"] < 16384 and t["buffer_full_events"] > 0
    # the producer's own statistics (librdkafka's) say the same: batches of about one record
    assert t["batch_bytes"] is not None and t["batch_bytes"] < 2048 and t["batch_records"] < 2
    assert not t["client_bound"]
    assert recs[0].rule == "binding-resource", [r.rule for r in recs]
    # the workload's producer settings are keys of the configuration: both differ from Kafka's defaults
    best = next(r for r in recs if r.rule == "best-config")
    assert {"batch.size": "1024", "linger.ms": "0"}.items() <= best.action.items(), best.action
    assert best.severity == "info"  # no defaults trial measured beside it
    assert recs[0].action["batch.size"] == "131072" and recs[0].action["linger.ms"] == "5"


def test_a_slow_consumer_is_diagnosed_as_consumer_bound(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """One consumer whose application spends 1 ms per message (about 1,000 msg/s) on 3 partitions fed at
    2,000 msg/s: the backlog grows, the consumer's loop mostly sleeps, and the fix is a second consumer."""
    t, recs, res = _planted(
        testbed,
        spark,
        tmp_path,
        f"slowcons-{unique}",
        partitionsPerTopic=3,
        producerRate=2000,
        consumerWorkMicros=1000,
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    assert res["summary"]["lost"] == 0  # the backlog drained after the window
    assert t["bound"] == "consumer", t["bound_reason"]
    assert t["client_consume_mb_s"] < 0.7 * t["publish_mb_s"], (t["client_consume_mb_s"], t["publish_mb_s"])
    assert "backlog grew" in t["bound_reason"] and not t["client_bound"]
    # the p99 broke the default SLO too: either way the top advice is the consumer's fix
    assert recs[0].rule in ("latency-slo", "consumer-lag", "binding-resource"), [r.rule for r in recs]
    assert recs[0].action == {"consumers": "2"}, recs[0]
    if recs[0].rule == "latency-slo":
        assert "between the acknowledgement and the consumer's handler" in recs[0].title


def test_too_few_partitions_for_the_consumers_and_brokers_is_diagnosed(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """One partition, two producers and two consumers at the maximum rate: one consumer gets nothing and one
    broker leads every produce request. Measured, not read from the workload."""
    t, recs, _ = _planted(
        testbed,
        spark,
        tmp_path,
        f"onepart-{unique}",
        partitionsPerTopic=1,
        producersPerTopic=2,
        consumerPerSubscription=2,
        producerConfig={"acks": "all", "linger.ms": 5, "batch.size": 131072},
    )
    assert t["consumers_idle"] == 1
    assert t["leader_share"] > 0.9, t["leader_share"]  # one broker took (nearly) all the produce bytes
    assert t["bound"] == "partitions", t["bound_reason"]
    assert "1 of 2 consumers received nothing" in t["bound_reason"]
    # the binding fix, or the consumer-lag rule with the same fix ranked first by the gap it measured
    assert recs[0].rule in ("binding-resource", "consumer-lag"), [(r.rule, r.severity) for r in recs]
    assert recs[0].action == {"partitions": "3"}


def test_a_long_linger_that_breaks_the_slo_is_named_with_the_setting_that_moves_it(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """linger.ms 300 at 500 msg/s (batches far from full): a record waits up to 300 ms in the producer's queue,
    150 ms on average at a steady rate, which the producer's own statistics measure; the p99 breaks the
    default 100-ms SLO. The brokers' few flushes (the metadata log's) are not mistaken for forced ones."""
    t, recs, res = _planted(
        testbed,
        spark,
        tmp_path,
        f"linger-{unique}",
        partitionsPerTopic=3,
        producerRate=500,
        producerConfig={"acks": "all", "linger.ms": 300, "batch.size": 1048576},
    )
    stats = res["summary"]["client"]["producer_stats"]
    assert res["summary"]["client"]["producer_stats_samples"] >= 3
    assert 100 <= stats["queue_ms"] <= 300 and stats["rtt_ms"] < 100, stats
    assert t["rate_mode"] == "fixed-rate" and t["e2e_p99_ms"] > 100
    assert t["bound"] != "forced_flush", t["bound_reason"]
    assert recs[0].rule == "latency-slo", [(r.rule, r.title) for r in recs]
    assert "waiting in the producer's queue" in recs[0].title and recs[0].action == {"linger.ms": "30"}


def test_one_producer_of_100_byte_records_is_diagnosed_as_client_bound(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """One producer process at the maximum rate with 100-B records: the brokers take everything it makes (its
    buffer does not fill, records do not queue beyond the linger), so the client is the limit, whether or not
    its loop reaches 85 % of a core on cores it shares with the brokers (both are named when both hold)."""
    t, recs, _ = _planted(
        testbed,
        spark,
        tmp_path,
        f"client-{unique}",
        partitionsPerTopic=6,
        messageSize=20,
        consumerPerSubscription=2,
        # a client that times every acknowledgement (a callback per message): counting them instead, one
        # process made more than two consumers could take on these two cores (diagnosed as consumer-bound)
        publishLatencyAtMaxRate=True,
        producerConfig={"acks": "all", "linger.ms": 5, "batch.size": 131072},
    )
    assert t["bound"] == "client", t["bound_reason"]
    assert "never waited for the cluster" in t["bound_reason"]
    assert recs[0].rule == "binding-resource", [(r.rule, r.action) for r in recs]
    assert recs[0].action == {"producers": "2"}


def test_a_topic_that_acknowledges_on_one_replica_and_recompresses_is_flagged(
    testbed: Testbed, spark: Any, tmp_path: Path, unique: str
) -> None:
    """Topic overrides shape the result as much as the brokers' configs: min.insync.replicas=1 is not synchronous
    replication, and a topic codec other than the producer's makes the brokers recompress. The run also carries
    the replica fetchers' lag and the controller's health, read from the exporters."""
    t, recs, res = _planted(
        testbed,
        spark,
        tmp_path,
        f"topic-{unique}",
        partitionsPerTopic=3,
        topicConfig={"min.insync.replicas": "1", "compression.type": "gzip"},
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    # the brokers' value is read back into the record (and the trial's params); the topic's override wins
    assert {c["min.insync.replicas"] for c in res["brokerConfig"].values()} == {"2"}
    assert t["params"]["min.insync.replicas"] == "2"
    assert recs[0].rule == "min-insync-replicas", [(r.rule, r.action) for r in recs]
    assert recs[0].action == {"min.insync.replicas": "2 (topic config)"}
    assert "topic min.insync.replicas=1 with RF 3" in recs[0].evidence[0]
    gz = next(r for r in recs if r.rule == "topic-recompression")
    assert "topic compression.type=gzip, producer compression.type=none" in gz.evidence[0]
    assert t["replica_lag_max"] is not None and t["replica_lag_max"] >= 0
    assert t["controller_bad_seconds"] == 0  # one of the testbed's combined nodes leads the quorum throughout


def test_brokers_report_counter_based_idle_and_the_produce_time_split(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path, unique: str
) -> None:
    """The exporter publishes what the diagnosis reads; a run's broker rows carry it per second."""
    page = metrics.scrape(healthy.nodes[0].metrics_url)
    keys = ("request_handler_idle_ns", "produce_total_ms", "produce_remote_ms", "produce_requests", "isr_shrinks",
            "follower_fetch_queue_ms", "follower_fetches", "log_flushes", "replica_max_lag",
            "active_controller")  # fmt: skip
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
    assert any("active controller: exactly one in" in e for r in before for e in r["evidence"]), before
    bc.apply({"num.replica.fetchers": "3"}, {}, snap)
    after = _advise_live(testbed, healthy.bootstrap_servers)
    flag = next(r for r in after if r["rule"] == "replica-fetchers-multiple")
    assert flag["action"] == {"num.replica.fetchers": "4"}
    assert set(flag["trials"]) == {"broker 1", "broker 2", "broker 3"}
    assert "multiple of the broker count 3" in flag["evidence"][0]


def test_advise_on_the_live_testbed_names_forced_flushes_under_load(
    configs: tuple[BrokerConfigs, dict[str, Any]], testbed: Testbed, healthy: TestbedState, tmp_path: Path,
    unique: str,
) -> None:  # fmt: skip
    """`advise --bootstrap` samples the testbed's exporters (found from its state, no --metrics-url) while a
    bench runs, and names the flushes it measures, with the broker setting that forces them."""
    bc, snap = configs
    bc.apply({"log.flush.interval.messages": "1"}, {}, snap)
    wl = write_workload(tmp_path / "w.yaml", name=f"live-{unique}", partitionsPerTopic=3, warmupDurationMinutes=0.05,
                        testDurationMinutes=0.4, producerConfig={"acks": "all", "linger.ms": 5})  # fmt: skip
    load = kafkatune_popen("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(tmp_path / "run"))
    try:
        time.sleep(12)  # the topic, the workers and the warm-up
        recs = _advise_live(testbed, healthy.bootstrap_servers)
    finally:
        assert load.wait(timeout=300) == 0
    live = next(r for r in recs if r["rule"] == "live-binding")
    assert "forced_flush" in live["title"] and "log flushes per produce request" in live["title"], live
    assert live["action"] == {"log.flush.interval.messages": "9223372036854775807"}
