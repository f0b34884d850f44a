"""Each rule and bound of the advisor over trial rows whose measurements are given: the judgement alone.

The planted-bottleneck suite (test_diagnosis.py, test_shaped.py) shows the measurements reach these rules on
the real testbed; the cases here are the ones that cannot be planted on this machine (a starved request
handler pool, a client loop at a full core, followers dropping out of the ISR) and the rules' own arithmetic
(legal values, cross-key rules). Each test fails when its rule or bound is removed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from advisor import diagnose
from advisor.context import Context
from advisor.fixes import binding_fix, consumer_fix, replication_fix, round_trips_advice
from advisor.live import LiveSample, live_config_rules, live_metric_rules
from advisor.noise import effects
from advisor.rules import (
    recommend,
    rule_compression,
    rule_consumers,
    rule_latency,
    rule_params,
    rule_producer_buffer,
    rule_replication,
)
from advisor.setup import rule_controller, rule_durability, rule_recompression
from brokerconf import catalogue
from records.analysis import TRIAL_FIELDS
from records.profile import ClusterProfile
from records.summary import Summary
from records.trialrow import TrialRow

PROFILE = ClusterProfile.from_json(
    {"brokers": [{"id": 1}, {"id": 2}, {"id": 3}], "network": {"nic_mb_s_measured": 100.0}}
)
STUDY = Context(brokers=3, rf=3)


def trial(tid: str = "t1", **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {k: None for k, _ in TRIAL_FIELDS}
    row.update(trial_id=tid, stage="bench", state="complete", mb_s=20.0, started_ns=1, params={"acks": "all"})
    row.update(kw)
    return row


def row(tid: str = "t1", **kw: Any) -> TrialRow:
    """trial(), typed: what the diagnosis and the fixes read."""
    return TrialRow.of(trial(tid, **kw))


def frame(*ts: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(ts))


def bound(**kw: Any) -> diagnose.Diagnosis:
    return diagnose.binding(row(**kw), PROFILE)


# ---- bounds ---------------------------------------------------------------------------------------------
def test_an_imported_omb_result_names_no_bound_and_a_fixed_rate_is_not_called_round_trips() -> None:
    d = bound(rate_mode="omb-import", broker_in_max_mb_s=99.0)  # whatever it holds, OMB recorded no evidence
    assert d.bound == "unknown" and "imported OpenMessaging Benchmark result" in d.reason
    recs = recommend(
        frame(trial(rate_mode="omb-import", bound="unknown", bound_reason=d.reason)), pd.DataFrame(), STUDY
    )
    r = next(r for r in recs if r.rule == "binding-resource")
    assert "Nothing can be named" in r.title and r.severity == "info" and not r.action
    assert "the workload's fixed rate" in bound(rate_mode="fixed-rate").reason
    assert "round trips" in bound(rate_mode="max-rate").reason


def test_a_link_at_its_measured_rate_is_network_bound_either_way() -> None:
    assert bound(broker_in_max_mb_s=95.0).bound == "network_in"
    assert bound(broker_out_max_mb_s=92.0).bound == "network_out"
    assert bound(broker_in_max_mb_s=50.0, broker_out_max_mb_s=50.0).bound == "none"


def test_a_disk_at_its_measured_rate_binds() -> None:
    prof = replace(PROFILE, network={"nic_mb_s_measured": 1000.0}, disk={"write_mb_s_measured": 60.0})
    d = diagnose.binding(row(broker_in_max_mb_s=58.0), prof)
    assert d.bound == "disk" and "60 MB/s" in d.reason


def test_starved_request_handlers_and_network_threads_are_named_from_their_idle_time() -> None:
    d = bound(request_handler_idle=0.05, produce_queue_ms=12.0)
    assert d.bound == "request_handlers" and "waits 12.0 ms" in d.reason
    assert binding_fix("request_handlers", row(params={"num.io.threads": "4"})) == {"num.io.threads": "8"}
    assert bound(request_handler_idle=0.6, network_processor_idle=0.1).bound == "network_threads"
    assert binding_fix("network_threads", row(params={})) == {"num.network.threads": "6"}  # default 3, doubled


def test_a_client_loop_at_a_full_core_is_client_bound_and_a_full_buffer_alone_is_not() -> None:
    assert bound(client_loop_cpu_max=0.97).bound == "client"
    assert binding_fix("client", row(client_loop_cpu_max=0.97, params={"producers": "2"})) == {"producers": "4"}
    hot_consumer = trial(client_loop_cpu_max=0.95, consumer_loop_cpu_max=0.95, params={"consumers": "3"})
    assert binding_fix("client", TrialRow.of(hot_consumer)) == {"consumers": "6"}
    # back-pressure: the buffer filled, requests were large, no loop was hot
    d = bound(buffer_full_events=900, bytes_per_request=200_000.0, client_loop_cpu_max=0.4)
    assert d.bound == "none" and "back-pressure" in d.reason


def test_a_producer_the_cluster_never_pushed_back_on_is_the_limit_at_the_maximum_rate() -> None:
    calm = {
        "rate_mode": "max-rate",
        "measure_seconds": 9,
        "buffer_full_events": 0,
        "client_queue_ms": 1.9,
        "client_loop_cpu_max": 0.73,
        "machine_cpu_percent": 78.0,
        "params": {"linger.ms": "5", "producers": "1"},
    }
    d = bound(**calm)
    assert d.bound == "client" and "never waited for the cluster" in d.reason and "73% of a core" in d.reason
    assert bound(**{**calm, "buffer_full_events": 400}).bound != "client"  # pushed back: the cluster's limit
    assert bound(**{**calm, "client_queue_ms": 900.0}).bound != "client"  # records queued behind the cluster
    assert bound(**{**calm, "rate_mode": "fixed-rate"}).bound != "client"  # it made only the load it was asked
    hot = bound(**{**calm, "client_loop_cpu_max": 0.88})  # both pieces of evidence are named
    assert hot.bound == "client" and "88% of a core" in hot.reason and "never waited for the cluster" in hot.reason


def test_a_shared_machine_at_full_cpu_is_named_as_such() -> None:
    d = bound(machine_cpu_percent=97.0, broker_cpu=0.3, client_loop_cpu_max=0.5)
    assert d.bound == "cpu" and "97 %" in d.reason


def test_forced_flushes_need_both_the_rate_and_the_time() -> None:
    planted = bound(
        log_flushes_per_request=3.1,
        log_flush_ms=6.0,
        produce_requests_per_s=70.0,
        broker={"log.flush.interval.messages": "1"},
    )
    assert planted.bound == "forced_flush" and "43% of each broker's time" in planted.reason
    assert "broker log.flush.interval.messages=1" in planted.reason
    # a trickle of requests beside the metadata log's own flushes: 1.8 per request, 0.1 % of the time
    trickle = bound(log_flushes_per_request=1.8, log_flush_ms=0.65, produce_requests_per_s=3.3)
    assert trickle.bound == "none"


def test_isr_shrinks_are_a_replication_bound() -> None:
    d = bound(isr_shrinks=4.0, under_replicated_seconds=3, replication_ratio=1.4)
    assert d.bound == "replication" and "shrank 4 times" in d.reason and "1.40×" in d.reason


def test_consumers_behind_and_consumers_without_partitions_are_told_apart() -> None:
    behind = bound(
        publish_mb_s=10.0,
        client_consume_mb_s=4.0,
        consumer_loop_cpu_max=0.1,
        params={"partitions": "6", "consumers": "2"},
    )
    assert behind.bound == "consumer" and "backlog grew" in behind.reason
    idle = bound(
        publish_mb_s=10.0, client_consume_mb_s=4.0, consumers_idle=2, params={"partitions": "2", "consumers": "4"}
    )
    assert idle.bound == "partitions" and "2 of 4 consumers received nothing" in idle.reason
    heavy = bound(leader_share=0.98, params={"partitions": "1", "consumers": "1"})
    assert heavy.bound == "partitions" and "98%" in heavy.reason
    assert bound(leader_share=0.35, params={"partitions": "6", "consumers": "1"}).bound == "none"


# ---- fixes that respect the catalogue ---------------------------------------------------------------------
def test_replication_fix_raises_fetchers_past_multiples_and_keeps_fetches_within_the_response() -> None:
    assert replication_fix({}, 3)["num.replica.fetchers"] == "2"
    assert replication_fix({"num.replica.fetchers": "2"}, 3)["num.replica.fetchers"] == "4"  # never 3
    assert replication_fix({"num.replica.fetchers": "8"}, 3)["num.replica.fetchers"] == "10"  # never lower
    big = replication_fix({"batch.size": "8388608"}, 3)
    assert int(big["replica.fetch.max.bytes"]) >= 2 * 8388608
    assert not catalogue.broken_rules({k: int(v) for k, v in big.items() if k != "num.replica.fetchers"})
    small = replication_fix({"batch.size": "131072"}, 3)
    assert small["replica.fetch.max.bytes"] == "2097152" and "replica.fetch.response.max.bytes" not in small


def test_consumer_fix_adds_consumers_then_partitions_in_multiples_of_the_brokers() -> None:
    assert consumer_fix("consumer", {"partitions": "6", "consumers": "2"}, 3) == {"consumers": "4"}
    assert consumer_fix("consumer", {"partitions": "3", "consumers": "3"}, 3) == {"partitions": "6", "consumers": "6"}
    assert consumer_fix("partitions", {"partitions": "1", "consumers": "2", "producers": "1"}, 3) == {"partitions": "3"}
    assert consumer_fix("partitions", {"partitions": "2", "consumers": "4"}, 3) == {"partitions": "6"}


# ---- study rules --------------------------------------------------------------------------------------------
def test_replication_lag_rule_names_the_trials_and_a_legal_fix() -> None:
    ok = trial("ok", replication_ratio=2.0, under_replicated_seconds=0)
    lag = trial(
        "lag", replication_ratio=1.2, under_replicated_seconds=5, params={"acks": "all", "num.replica.fetchers": "2"}
    )
    (r,) = rule_replication(frame(ok, lag), STUDY)
    assert r.rule == "replication-lag" and r.trials == ["lag"] and r.severity == "high"
    assert r.action["num.replica.fetchers"] == "4"
    assert rule_replication(frame(ok), STUDY) == []


def test_consumer_lag_rule_reads_client_or_broker_counts() -> None:
    lag = trial("c", publish_mb_s=10.0, client_consume_mb_s=3.0, params={"partitions": "6", "consumers": "1"})
    (r,) = rule_consumers(frame(lag, trial("ok", publish_mb_s=10.0, client_consume_mb_s=9.9)), STUDY)
    assert r.rule == "consumer-lag" and r.trials == ["c"] and r.action == {"consumers": "2"}
    assert r.expected_gain_mb_s == 7.0
    brokers_saw = trial("b", produce_mb_s=10.0, consume_mb_s=2.0, params={"partitions": "3", "consumers": "3"})
    (r,) = rule_consumers(frame(brokers_saw), STUDY)
    assert r.action == {"partitions": "6", "consumers": "6"}


def test_producer_buffer_rule_caps_the_rate_when_latency_explodes() -> None:
    full = trial("full", mb_s=30.0, buffer_full_events=40, e2e_p99_ms=14_000.0)
    calm = trial("calm", mb_s=22.0, buffer_full_events=0, e2e_p99_ms=40.0)
    (r,) = rule_producer_buffer(frame(full, calm), STUDY)
    assert r.rule == "producer-buffer-saturation" and r.severity == "high" and r.trials == ["full"]
    assert "24.0 MB/s" in r.action["target rate"] and any("calm" in e for e in r.evidence)
    assert rule_producer_buffer(frame(calm), STUDY) == []
    # a sustainable-rate sweep's operating point is the rate to run at; the latency belongs to the max rate
    swept = {**full, "mb_s": 18.0, "sustainable_mb_s": 18.0, "throughput_mb_s": 30.0}
    op = {
        "held": True,
        "rate_msg_s": 14764.6,
        "mb_s": 15.12,
        "tries": [{"rate_msg_s": 14764.6, "trial_id": "hold-001", "held": True}],
    }
    (r,) = rule_producer_buffer(
        frame(swept, calm), Context(sweep=Summary.from_json({"study": "s", "operating_point": op}))
    )
    assert r.action == {"target rate": "14,765 msg/s (15.12 MB/s): held the SLO (hold-001)"}
    assert "e2e p99 14.0 s at 30.00 MB/s (the maximum rate)" in r.evidence[0]


def test_compression_rule_flags_trials_whose_wire_bytes_are_a_fraction_of_the_payload() -> None:
    squeezed = trial("lz4", publish_mb_s=30.0, produce_mb_s=3.0)
    (r,) = rule_compression(frame(squeezed, trial("none", publish_mb_s=30.0, produce_mb_s=29.0)), STUDY)
    assert r.rule == "compressible-payload" and r.trials == ["lz4"]


def test_recommend_puts_the_binding_fix_of_the_best_trial_first() -> None:
    t = trial(request_handler_idle=0.05, produce_queue_ms=9.0, params={"acks": "all", "num.io.threads": "2"})
    t.update(diagnose.binding(TrialRow.of(t), PROFILE).__dict__)
    (first, *_) = recommend(frame(t), pd.DataFrame(), STUDY)
    assert first.rule == "binding-resource" and first.action == {"num.io.threads": "4"}


def test_the_best_measured_configuration_never_reapplies_what_a_rule_names_as_its_limit() -> None:
    """The better of two runs had num.io.threads=1 and was bound by its request handlers: applying it would re-apply
    the limit, so that key leaves the best-config action (said in its evidence); the binding fix stays."""
    t = trial(request_handler_idle=0.05, produce_queue_ms=9.0, params={"acks": "all", "num.io.threads": "1"})
    t.update(diagnose.binding(TrialRow.of(t), PROFILE).__dict__)
    dflt = trial("d", mb_s=8.0, baseline="kafka-defaults", params={"acks": "all", "num.io.threads": "8"})
    recs = {r.rule: r for r in recommend(frame(t, dflt), pd.DataFrame(), STUDY)}
    assert recs["binding-resource"].action == {"num.io.threads": "2"}
    best = recs["best-config"]
    assert (
        best.action == {}
        and best.title.startswith("Nothing to apply: num.io.threads there is")
        and best.severity == "info"
    )
    assert any("num.io.threads=1 (the binding-resource rule advises 2)" in e for e in best.evidence), best.evidence


def test_a_run_where_no_rate_held_still_gets_its_binding_fix() -> None:
    """A search where no step held has no rate (mb_s None) but a diagnosis of its lowest step (advisor.limit):
    the advice is not silent."""
    why = "no step held, down to 800 msg/s (p99 700.0 ms): the request handler pool was 5% idle (num.io.threads)"
    t = trial(mb_s=None, bound="request_handlers", bound_reason=why, params={"acks": "all", "num.io.threads": "1"})
    (first, *_) = recommend(frame(t), pd.DataFrame(), STUDY)
    assert first.rule == "binding-resource" and first.action == {"num.io.threads": "2"}, first
    assert first.evidence == [f"t1: bound by request_handlers: {why}"], first.evidence
    failed = recommend(frame(trial(mb_s=None, state="failed", bound="none")), pd.DataFrame(), STUDY)
    assert "binding-resource" not in {r.rule for r in failed}, failed


def test_latency_rule_names_where_a_fixed_rate_run_spent_its_time_and_the_setting_that_moves_it() -> None:
    lingering = trial(
        "linger",
        rate_mode="fixed-rate",
        e2e_p99_ms=420.0,
        e2e_p50_ms=310.0,
        publish_p50_ms=305.0,
        client_queue_ms=300.0,
        client_rtt_ms=4.0,
        produce_total_ms=3.0,
        produce_remote_ms=2.0,
        params={"acks": "all", "linger.ms": "300"},
    )
    (r,) = rule_latency(frame(lingering), STUDY)
    # 420 ms less the 300-ms linger leaves 120 ms of the record's tail that is not the linger: past the SLO alone
    assert r.rule == "latency-slo" and r.severity == "high" and r.action == {"linger.ms": "0"}
    assert "p99 end-to-end 420.0 ms > the SLO's 100 ms" in r.evidence[0]
    assert "waiting in the producer's queue" in r.title
    # the followers' wait: more fetchers; the consumer's side: a shorter fetch wait
    followers = trial(
        "remote",
        rate_mode="fixed-rate",
        e2e_p99_ms=150.0,
        e2e_p50_ms=80.0,
        publish_p50_ms=78.0,
        client_queue_ms=1.0,
        client_rtt_ms=77.0,
        produce_total_ms=76.0,
        produce_remote_ms=70.0,
    )
    (r,) = rule_latency(frame(followers), STUDY)
    assert r.action == {"num.replica.fetchers": "2"} and "waiting for the followers" in r.title
    fetch = trial(
        "cons",
        rate_mode="fixed-rate",
        e2e_p99_ms=900.0,
        e2e_p50_ms=500.0,
        publish_p50_ms=5.0,
        client_queue_ms=1.0,
        client_rtt_ms=4.0,
        produce_total_ms=3.0,
    )
    # fetches answered at once (fetch.min.bytes 1, Kafka's default): the consumer's own wait, more consumers
    assert rule_latency(frame(fetch), STUDY)[0].action == {"partitions": "3", "consumers": "2"}
    # a study's own SLO wins; a max-rate run's latency is not judged against any
    assert rule_latency(frame(lingering), Context(sweep=Summary("s", slo={"p99_e2e_ms": 500}))) == []
    assert rule_latency(frame({**lingering, "rate_mode": "max-rate"}), STUDY) == []
    # a sweep's ramp goes past its SLO on purpose, and its operating-point runs are the sweep's own search
    assert rule_latency(frame({**lingering, "sustainable_mb_s": 12.0}), STUDY) == []
    assert rule_latency(frame({**lingering, "stage": "hold"}), STUDY) == []


def test_min_insync_replicas_must_leave_one_broker_to_fail_and_two_copies_of_each_write() -> None:
    one = trial("one", topic_config={"min.insync.replicas": "1"}, params={"acks": "all", "min.insync.replicas": "2"})
    (r,) = rule_durability(frame(one), STUDY)
    assert r.severity == "high" and r.action == {"min.insync.replicas": "2 (topic config)"}
    assert "topic min.insync.replicas=1 with RF 3" in r.evidence[0]
    three = trial("three", params={"acks": "all", "min.insync.replicas": "3"})  # the brokers' read-back value
    (r,) = rule_durability(frame(three), STUDY)
    assert "NotEnoughReplicas" in r.evidence[0] and r.action == {"min.insync.replicas": "2 (broker config)"}
    assert rule_durability(frame(trial("ok", params={"acks": "all", "min.insync.replicas": "2"})), STUDY) == []
    assert rule_durability(frame(trial("unknown")), STUDY) == []  # not read back: nothing is claimed


def test_a_topic_codec_other_than_the_producers_is_flagged_as_recompression() -> None:
    (r,) = rule_recompression(frame(trial("gz", topic_config={"compression.type": "gzip"}, broker_cpu=0.4)), STUDY)
    assert r.action == {"compression.type": "producer (topic config)"}
    assert "topic compression.type=gzip, producer compression.type=none" in r.evidence[0] and "40%" in r.evidence[0]
    same = trial("lz4", topic_config={"compression.type": "lz4"}, params={"acks": "all", "compression.type": "lz4"})
    assert rule_recompression(frame(same, trial("p", topic_config={"compression.type": "producer"})), STUDY) == []


def test_trials_measured_without_exactly_one_active_controller_are_flagged() -> None:
    (r,) = rule_controller(frame(trial("q", controller_bad_seconds=2, measure_seconds=9), trial("ok")), STUDY)
    assert r.trials == ["q"] and "2 of 9 measured seconds" in r.evidence[0]
    assert rule_controller(frame(trial("ok", controller_bad_seconds=0)), STUDY) == []


def test_recommend_runs_every_study_rule() -> None:
    """One trial that triggers each rule: recommend() must say every one (a rule left out of the wiring fails)."""
    ts = [
        trial("fetch3", params={"acks": "all", "num.replica.fetchers": "3"}),
        trial("fsync", log_flushes_per_request=3.1, log_flush_ms=6.0, produce_requests_per_s=70.0),
        trial("isr", isr_shrinks=2.0, replication_ratio=1.2),
        trial("lag", publish_mb_s=10.0, client_consume_mb_s=3.0, params={"acks": "all", "consumers": "1"}),
        trial("full", buffer_full_events=40, e2e_p99_ms=14_000.0),
        trial("lz4", publish_mb_s=30.0, produce_mb_s=3.0),
        trial(
            "slo",
            rate_mode="fixed-rate",
            e2e_p99_ms=420.0,
            client_queue_ms=300.0,
            params={"acks": "all", "linger.ms": "300"},
        ),
        trial("isr1", topic_config={"min.insync.replicas": "1"}),
        trial("gzip", topic_config={"compression.type": "gzip"}),
        trial("quorum", controller_bad_seconds=3, measure_seconds=9),
    ]
    for t in ts:
        t.update(bound=diagnose.binding(TrialRow.of(t), PROFILE).bound)
    got = {r.rule for r in recommend(frame(*ts), pd.DataFrame(), STUDY)}
    want = {
        "binding-resource",
        "best-config",
        "replica-fetchers-multiple",
        "fsync-per-message",
        "replication-lag",
        "consumer-lag",
        "producer-buffer-saturation",
        "compressible-payload",
        "latency-slo",
        "min-insync-replicas",
        "topic-recompression",
        "controller-unstable",
    }
    assert want <= got, want - got


# ---- live rules -----------------------------------------------------------------------------------------------
def test_live_config_rules_flag_small_replica_fetches_and_forced_flushes() -> None:
    configs: dict[str, dict[str, str | None]] = {
        "1": {"replica.fetch.max.bytes": "65536", "log.flush.interval.messages": "1"},
        "2": {"replica.fetch.max.bytes": "1048576", "log.flush.interval.messages": "9223372036854775807"},
    }
    configs["2"]["min.insync.replicas"] = "1"
    assert "min-insync-replicas" not in {r.rule for r in live_config_rules(configs, 3)}  # no RF read: no judgement
    for c in configs.values():
        c["default.replication.factor"] = "3"
    recs = {r.rule: r for r in live_config_rules(configs, 3)}
    assert recs["replica-fetch-small"].trials == ["broker 1"]
    assert recs["fsync-per-message"].trials == ["broker 1"]
    assert recs["min-insync-replicas"].trials == ["broker 2"]
    assert "min.insync.replicas=1 with RF 3" in recs["min-insync-replicas"].evidence[0]


def test_live_metric_rules_name_under_replication_and_say_when_nothing_binds() -> None:
    isr = live_metric_rules(LiveSample(TrialRow(produce_mb_s=5.0), 3, under_replicated_max=2), PROFILE)
    assert [r.rule for r in isr] == ["live-isr"] and "2 partition(s)" in isr[0].title
    calm = live_metric_rules(LiveSample(TrialRow(produce_mb_s=5.0, request_handler_idle=0.9), 3), PROFILE)
    assert [r.rule for r in calm] == ["live-ok"]
    quorum = live_metric_rules(LiveSample(TrialRow(produce_mb_s=5.0, controller_bad_seconds=2), 5), PROFILE)
    assert [r.rule for r in quorum] == ["live-controller"] and "For 2 s of 5" in quorum[0].title
    lag = live_metric_rules(LiveSample(TrialRow(replica_lag_max=5200.0), 3, under_replicated_max=1), PROFILE)
    assert "up to 5,200 messages" in lag[0].title


def _params(stage: str, param: str, *values: tuple[float, float]) -> list[dict[str, Any]]:
    """params.parquet rows (spark.tables): one per value, its mean MB/s over the trials that ran it."""
    return [
        {
            "stage": stage,
            "param": param,
            "value": str(v),
            "value_num": v,
            "mean_mb_s": mb_s,
            "trials": 2,
            "trial_ids": [f"{stage}-{i:03d}", f"{stage}-{i + 10:03d}"],
        }
        for i, (v, mb_s) in enumerate(values)
    ]


def test_a_swept_parameter_is_judged_against_its_stages_window_spread_and_its_tested_range() -> None:
    """The best value of each swept parameter, its difference to the worst against twice the spread between the
    windows of one run (advisor.noise), the top of the tested range flagged; after ablations, information only."""
    trials = frame(trial("p-1", stage="p", window_cv=0.01, mb_s=20.0), trial("p-2", stage="p", window_cv=0.01))
    params = pd.DataFrame(
        _params("p", "batch.size", (16384, 10.0), (65536, 15.0), (262144, 20.0))  # 10 MB/s ≫ 2 × 0.2: beyond
        + _params("p", "linger.ms", (0, 19.9), (5, 20.1))  # 0.2 MB/s < 2 × 0.2: within the window spread
    )
    found = {r.action and next(iter(r.action)): r for r in rule_params(effects(trials, params))}
    batch, linger = found["batch.size"], found["linger.ms"]
    assert batch.action == {"batch.size": "262144"} and batch.severity == "medium" and batch.expected_gain_mb_s == 10
    assert "the range may be too narrow" in batch.title and batch.trials == ["p-002", "p-012"]
    assert linger.severity == "info" and "within noise, re-measure" in linger.evidence[-1]
    after = rule_params(effects(trials, params), confirmed=True)
    assert all(r.severity == "info" and "search marginal" in r.evidence[-1] for r in after)
    flat = pd.DataFrame(_params("p", "acks", (1, 20.0), (2, 20.0)))
    assert rule_params(effects(trials, flat)) == []  # no difference: nothing to say


def test_a_clients_configured_wait_is_sized_to_the_budget_the_slo_leaves() -> None:
    """A 1-s linger and a consumer holding fetches for 10 MB (up to 500 ms), each against a 100-ms SLO: the fix
    gives the wait half of what the SLO leaves after the rest of the record's p99 (advisor.fixes.slo_budget_ms),
    not a constant that still breaks it (linger ÷ 10 was 100 ms; fetch.wait.max.ms=100 left the 10-MB hold)."""
    slow = dict(rate_mode="fixed-rate", client_rtt_ms=4.0, produce_total_ms=3.0, client_queue_ms=1.0)
    linger = trial(
        "linger", **{**slow, "client_queue_ms": 600.0}, e2e_p99_ms=1030.0, e2e_p50_ms=620.0, publish_p50_ms=615.0
    )
    linger["params"] = {"acks": "all", "linger.ms": "1000"}
    (r,) = rule_latency(frame(linger), STUDY)
    assert r.action == {"linger.ms": "35"}  # (100 - (1030 - 1000)) / 2
    assert rule_latency(frame(linger), Context(sweep=Summary("s", slo={"p99_e2e_ms": 500})))[0].action == {
        "linger.ms": "235"
    }
    held = trial("held", **slow, e2e_p99_ms=520.0, e2e_p50_ms=505.0, publish_p50_ms=6.0)
    held["params"] = {"acks": "all", "fetch.min.bytes": str(10_000_000), "fetch.wait.max.ms": "500"}
    (r,) = rule_latency(frame(held), STUDY)
    assert r.action == {"fetch.min.bytes": "1", "fetch.wait.max.ms": "40"}, r.action  # (100 - (520 - 500)) / 2
    # a wait already within the budget (none at all) is left alone: only fetch.min.bytes goes back
    held["params"] = {**held["params"], "fetch.wait.max.ms": "0"}
    assert rule_latency(frame(held), STUDY)[0].action == {"fetch.min.bytes": "1"}


def test_a_small_batch_fix_never_repeats_the_configuration() -> None:
    """Batches that stay small with batch.size and linger.ms already at the rule's values: the linger doubles
    (the batches do not fill within it); only keys that change are written."""
    assert binding_fix("small_batches", row(params={"batch.size": "1024", "linger.ms": "0"})) == {
        "batch.size": "131072",
        "linger.ms": "5",
    }
    assert binding_fix("small_batches", row(params={"batch.size": "262144", "linger.ms": "0"})) == {"linger.ms": "5"}
    big = {"batch.size": "262144", "linger.ms": "20"}
    assert binding_fix("small_batches", row(params=big)) == {"linger.ms": "40"}
    assert binding_fix("small_batches", row(params={"batch.size": "16384"})) == {"batch.size": "131072"}


def test_each_bounds_fix_is_a_legal_configuration_of_the_setting_that_moves_it() -> None:
    """What a fix writes must be applicable as it stands: within the catalogue's rules (buffer.memory holds a
    batch), a topic override removed rather than set to a broker's value, a broker flush setting back to
    Kafka's."""
    small = binding_fix("small_batches", row(params={"batch.size": "1024", "buffer.memory": "65536"}))
    assert int(small["buffer.memory"]) >= int(small["batch.size"]) >= 131072
    assert not catalogue.broken_rules({k: int(v) for k, v in small.items()})
    flushed = trial(topic_config={"flush.messages": "1"}, broker={"log.flush.interval.ms": "10"})
    fix = binding_fix("forced_flush", TrialRow.of(flushed))
    assert fix["flush.messages"] == "(delete the topic override)"
    assert catalogue.param("log.flush.interval.ms").default is None  # Kafka leaves it unset: said so, no value made up
    assert fix["log.flush.interval.ms"] == "(unset: Kafka's default)"
    lagging = trial(params={"num.replica.fetchers": "3"})
    assert binding_fix("replication", TrialRow.of(lagging)) == replication_fix({"num.replica.fetchers": "3"}, 3)
    assert binding_fix("partitions", row(params={})) == consumer_fix("partitions", {}, 3)
    assert binding_fix("unknown-bound", row()) == {}


def test_round_trip_advice_leaves_out_what_the_ablations_found_without_effect() -> None:
    assert "a larger batch.size and linger.ms" in round_trips_advice(set(), TrialRow())
    got = round_trips_advice({"batch.size"}, TrialRow())
    assert "a larger linger.ms" in got and "batch.size: measured without effect here" in got
    assert "a larger batch.size" not in got
    # a producer capped below Kafka's 5 requests in flight is named, with the fix that moves it
    capped = trial(params={"max.in.flight.requests.per.connection": "2"}, client_inflight=1.8)
    said = round_trips_advice(set(), TrialRow.of(capped))
    assert "max.in.flight.requests.per.connection=2" in said and "1.8 in flight" in said and "raise it to 5" in said
    assert binding_fix("none", TrialRow.of(capped)) == {"max.in.flight.requests.per.connection": "5"}
    # at Kafka's default: twice the producer processes, each with its own connections; a run held at a fixed rate
    # asked for no more, so it gets no fix
    at_default = {"max.in.flight.requests.per.connection": "5", "producers": "3"}
    assert binding_fix("none", row(params=at_default, rate_mode="max-rate")) == {"producers": "6"}
    assert binding_fix("none", row(params=at_default, rate_mode="fixed-rate", objective="sustainable_mb_s")) == {
        "producers": "6"
    }
    assert binding_fix("none", row(params=at_default, rate_mode="fixed-rate", objective="throughput_mb_s")) == {}
    # a study that measured producers without effect is not told to add more
    assert binding_fix("none", row(params=at_default, rate_mode="max-rate"), no_effect={"producers"}) == {}
    said = round_trips_advice({"producers"}, row(params=at_default))
    assert "more partitions keep more requests in flight" in said and "partitions and producers" not in said
