"""Measured runs on the real testbed: RF/ISR of driver topics, exact loss accounting, faults."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cluster import admin
from cluster.metrics import BrokerSample
from drivers import api
from loadgen import brokerside, clientside, result, runner, search, sustainable, warmup
from loadgen.channel import Timing
from loadgen.worker import FULL_WAIT_S
from loadgen.workload import parse_workload
from records.result import RunSummary
from records.seconds import BrokerSecond
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import cli, kafkatune, write_workload


def test_driver_topic_has_rf3_and_full_isr(healthy: TestbedState, unique: str) -> None:
    drv = api.load_driver("kafka")({"bootstrap.servers": healthy.bootstrap_servers})
    name = f"kt-rf-{unique}"
    drv.create_topics([api.TopicSpec(name, 6)])
    try:
        a = admin.admin_client(healthy.bootstrap_servers)
        deadline = time.monotonic() + 30
        while True:
            parts = admin.partitions(a, name)
            if (len(parts) == 6 and all(len(p.isr) == 3 for p in parts)) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert len(parts) == 6
        assert all(len(p.replicas) == 3 and len(p.isr) == 3 for p in parts), parts
    finally:
        drv.delete_topics([name])


def test_acks_all_run_writes_a_complete_record(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path, unique: str
) -> None:
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"acks-{unique}",
        partitionsPerTopic=3,
        producersPerTopic=2,
        consumerPerSubscription=2,
        warmupDurationMinutes=0.03,
        testDurationMinutes=0.12,
        publishLatencyAtMaxRate=True,  # the max-rate default counts acknowledgements without timing them
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    out = tmp_path / "run"
    proc = kafkatune("bench", str(wl), "--state-dir", str(testbed.state_dir), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "result.json").read_text())
    s = res["summary"]
    assert res["schema_version"] == 1
    assert s["acknowledged"] > 1000
    assert res["driver_info"]["client"] == "confluent-kafka" and res["driver_info"]["librdkafka"], res["driver_info"]
    assert s["consumed"] == s["acknowledged"] and s["lost"] == 0 and s["duplicated"] == 0
    for key in ("publish_latency_ms", "end_to_end_latency_ms"):
        lat = s[key]
        vals = [lat[k] for k in ("min", "p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max")]
        assert lat["count"] > 0 and vals == sorted(vals) and vals[-1] > 0, (key, lat)
    # OMB's field names, aggregated and per second
    for f in (
        "publishRate",
        "consumeRate",
        "aggregatedPublishLatency50pct",
        "aggregatedPublishLatency99pct",
        "aggregatedEndToEndLatency99pct",
        "aggregatedPublishLatencyQuantiles",
        "endToEndLatency99pct",
    ):
        assert f in res, f
    assert res["aggregatedPublishLatency50pct"] <= res["aggregatedPublishLatency99pct"]
    # produce, replicate and consume rates come apart from the brokers' own metrics
    b = s["broker_rates"]
    assert b and b["produce_mb_s"] > 0 and b["consume_mb_s"] > 0
    assert 1.5 < b["replicate_mb_s"] / b["produce_mb_s"] < 2.5  # RF 3: two follower copies
    # the brokers' JIT compilers' CPU over the window, from the exporter's JVM collector (a warm JVM: near 0)
    assert b["jit_compile_cores"] is not None and 0 <= b["jit_compile_cores"] < 3 * (os.cpu_count() or 1)
    samples = pq.read_table(out / "samples.parquet").to_pylist()
    assert {r["role"] for r in samples} == {"producer", "consumer"}
    assert sum(r["msgs"] for r in samples if r["role"] == "consumer") == s["consumed"]
    brokers = pq.read_table(out / "broker_metrics.parquet").to_pylist()
    assert {r["broker_id"] for r in brokers} == {1, 2, 3}
    assert json.loads(proc.stdout)["out"] == str(out)


def _max_rate_100b(
    healthy: TestbedState, name: str, producers: int, config: dict[str, Any]
) -> tuple[runner.RawRun, RunSummary]:
    """A short max-rate run of 100-B records (acks=all, linger 5 ms, `config`) whose every message is accounted
    for exactly; its raw run and summary."""
    w = parse_workload(
        {
            "name": name,
            "partitionsPerTopic": 3,
            "messageSize": 100,
            "producersPerTopic": producers,
            "warmupDurationMinutes": 0.03,
            "testDurationMinutes": 0.1,
            "producerConfig": {"acks": "all", "linger.ms": 5, **config},
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": healthy.bootstrap_servers}))
    s = result.build(raw).result.summary
    assert s.lost == 0 and s.duplicated == 0 and s.consumed == s.acknowledged, s
    # every message sent is accounted for: acknowledged, dropped unsent at the end, failed or abandoned
    assert s.sent == (s.acknowledged + s.dropped_unsent_at_end + s.publish_errors + s.unacknowledged_at_end), s
    # the per-second counts add up to the exact total: nothing counted twice or missed between seconds
    assert sum(t.msgs for t in raw.ticks if t.role == "producer") == s.acknowledged
    return raw, s


def test_max_rate_counts_every_acknowledgement_exactly_without_a_callback_each(
    healthy: TestbedState, unique: str
) -> None:
    """The max-rate path: failures reported one by one, acknowledgements counted (drivers/kafka counting mode)."""
    raw, s = _max_rate_100b(healthy, f"count-{unique}", 2, {"batch.size": 131072})
    assert all(p.acks_counted for p in raw.producers.values())
    assert s.acknowledged > 10000
    # no figure stands in for the publish latency that was not timed; the consumers' end-to-end latency is
    assert s.publish_latency_ms.count == 0 and "publishLatencyAtMaxRate" in (s.publish_latency_ms.missing or "")
    assert s.end_to_end_latency_ms.count > 0


def test_max_rate_hands_batches_and_resends_what_a_full_queue_refused_exactly_once(
    healthy: TestbedState, unique: str
) -> None:
    """Keyless max-rate records go to librdkafka in batches (loadgen.worker._blast); a queue of 300 messages
    refuses parts of batches again and again, and every refused record goes again: nothing lost, nothing twice,
    every sequence number accounted for."""
    _, s = _max_rate_100b(healthy, f"batch-{unique}", 1, {"queue.buffering.max.messages": 300})
    assert s.client.records_per_send_call == 64
    # the consumers take what one client call returned in one handler call (accounts.ConsumerState.on_batch)
    assert s.client.records_per_receive_call > 1
    assert s.client.buffer_full_events > 0  # the queue did refuse batches
    assert s.acknowledged > 5000


def test_a_max_rate_run_whose_send_loop_was_the_limit_scales_out_and_says_so(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path, unique: str
) -> None:
    """20-B records with every acknowledgement timed (a Python callback each): one producer makes less than the
    cluster takes (its buffer never fills; test_diagnosis finds the same setup client-bound). bench runs again
    with 2 processes (this machine's cores), says so and keeps both runs; --no-scale-out keeps the workload's one.

    The buffer holds a million records (librdkafka's default 100,000 is under a second of this producer): with
    the default, a brokers' pause while they still compile (1.1-2.1 cores of JIT in the window here) filled it
    21-70 times in 2 of 3 runs and the run was rightly not the client's limit (CI failed so). Records' time in
    the queue still tells a cluster that could not keep up."""
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"scale-{unique}",
        partitionsPerTopic=6,
        messageSize=20,
        consumerPerSubscription=2,
        publishLatencyAtMaxRate=True,
        warmupDurationMinutes=0.03,
        testDurationMinutes=0.1,
        producerConfig={
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 131072,
            "queue.buffering.max.messages": 1000000,  # see the docstring
        },
    )
    common = ("--state-dir", str(testbed.state_dir), "--json")
    proc = kafkatune("bench", str(wl), "--out", str(tmp_path / "a"), *common)
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "a" / "result.json").read_text())
    if res.get("scaled_out") is None:  # the cluster held this producer back (brokers still compiling on a busy machine)
        assert_the_cluster_was_the_limit(res["summary"])
    else:
        check_scaled_out(res, proc)
    proc = kafkatune("bench", str(wl), "--out", str(tmp_path / "b"), "--no-scale-out", *common)
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "b" / "result.json").read_text())
    assert res.get("scaled_out") is None and len(res["summary"]["per_producer"]) == 1


def assert_the_cluster_was_the_limit(s: dict[str, Any]) -> None:
    """A max-rate run not scaled out: by loadgen.scaleout's rule, on the figures its record shows, its one producer
    was not the limit (its loop under LOOP_HOT, and the cluster pushed back: a full buffer or records queued beyond
    the linger)."""
    c = s["client"]
    loop, queue_ms = c["loop_cpu_util"]["producer"][0], c["producer_stats"].get("queue_ms")
    never = clientside.never_waited(c["buffer_full_events"], s["window_s"], queue_ms, 5.0)
    assert loop < clientside.LOOP_HOT and never is None, (c, s["warnings"])


def check_scaled_out(res: dict[str, Any], proc: subprocess.CompletedProcess[str]) -> None:
    """A max-rate run whose producer was the limit: run again with 2 processes, said, and both runs kept."""
    grown = res["scaled_out"]
    assert grown["from_producers"] == 1 and grown["to_producers"] == min(2, os.cpu_count() or 1) == 2, grown
    first, last = grown["steps"][0], grown["steps"][-1]
    # its loop took a core, or (on cores shared with the brokers) the cluster never pushed back on it
    assert "producer 0" in grown["why"] and "the load generator, not the cluster, was the limit" in grown["why"]
    held = first["buffer_full_events"] * FULL_WAIT_S  # at most, in a 5-s window
    assert first["loop_cpu_util"][0] >= clientside.LOOP_HOT or held <= clientside.HELD_SHARE * 5, first
    assert len(last["loop_cpu_util"]) == 2 and last["publish_mb_s"] > 0
    assert "scaling out to 2 producer processes per topic" in proc.stderr
    assert json.loads(proc.stdout)["scaled_out"] == grown
    s = res["summary"]
    assert len(s["per_producer"]) == 2 and s["lost"] == 0 and s["consumed"] == s["acknowledged"]  # the last run's


def test_fixed_rate_mode_holds_the_rate_and_records_publish_delay(healthy: TestbedState, unique: str) -> None:
    w = parse_workload(
        {
            "name": f"rate-{unique}",
            "partitionsPerTopic": 3,
            "messageSize": 200,
            "producersPerTopic": 2,
            "producerRate": 2000,
            "testDurationMinutes": 0.1,
            "warmupDurationMinutes": 0.05,
            "producerConfig": {"acks": "all"},
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": healthy.bootstrap_servers}))
    res = result.build(raw).result
    s = res.summary
    assert s.mode == "fixed-rate"
    # The limiter's own rate: what was handed to the client per second of the window. (Acks per second
    # follow the cluster, which on a cold 2-core testbed can lag by seconds.)
    assert 1800 <= s.send_msg_s <= 2200, (s.send_msg_s, s.client)
    assert s.acknowledged >= 0.95 * 2000 * (w.warmup_seconds + w.test_seconds)
    assert s.publish_delay_ms.count > 0
    assert s.lost == 0 and s.consumed == s.acknowledged
    # every acknowledged record arrived: the drain ended on the consumers' counts (how soon is the machine's, not
    # the code's: tests/loadgen/test_collect.py checks that counts alone end it, without a tick)
    print("run phases, s:", raw.phases_s)
    assert raw.drain_ended == "arrived", (raw.drain_ended, raw.phases_s)


def test_a_search_steers_the_producers_rate_step_by_step(healthy: TestbedState, unique: str) -> None:
    """An SLO no step can hold (p99 end-to-end within 1 µs): every step misses and the next goes `grow` lower. The
    producers follow each published step (each judged second sent its rate), the run keeps the steps in its
    schedule, and nothing acknowledged is lost."""
    w = parse_workload(
        {
            "name": f"steer-{unique}",
            "partitionsPerTopic": 3,
            "messageSize": 200,
            "producerRate": 0,
            "producersPerTopic": 2,
            "producerConfig": {"acks": "all"},
        }
    )
    how = sustainable.Search(warmup_s=1, probe_s=2, min_step_s=2, max_step_s=2, max_steps=3)
    said: list[str] = []
    slo = sustainable.Slo(p99_e2e_ms=0.001)
    # a probe of 5,000 msg/s: steps of 3,500 msg/s and less, 1,750 a producer (at 14,000 a step, CI's brokers
    # still compiling after a fault test's restart held the producers back and they caught up in the judged seconds)
    at = runner.RunSettings({"bootstrap.servers": healthy.bootstrap_servers}, say=said.append)
    run, sr = search.search_run(w, at, 5_000, how, slo)
    found = search.conclude(sustainable.Sustainable(slo, how, 200, 5_000, 4.0), sr)
    assert [st.rate_msg_s for st in found.steps] == pytest.approx([3_500 / 1.25**i for i in range(3)])
    for st in found.steps:
        assert not st.held and st.why and len(st.judged_s) == 2
        # the producers kept the published rate, and never ran ahead of it: a late send goes as soon as it can
        # (no coordinated omission), so the judged seconds hold at most what the step scheduled up to their end
        ahead = st.rate_msg_s * (st.judged_s[-1] + 1 - st.start_s)
        assert 0.9 * st.rate_msg_s * 2 <= st.sent <= ahead + 2, st
    assert [r for _, r in run.schedule] == pytest.approx([st.rate_msg_s for st in found.steps])
    assert found.rate_msg_s is None and "no step held" in found.note, found.note
    assert sum(1 for m in said if m.startswith("step ")) == 3, said
    s = result.build(run).result.summary
    assert s.acknowledged > 0 and s.lost == 0, s
    # stopped before its planned end, the run drained until every acknowledged record had arrived (not 10 s idle)
    assert s.drain_ended == "arrived" and s.drain_s < 5, s


def test_a_run_without_drain_stops_its_consumers_with_the_producers(healthy: TestbedState, unique: str) -> None:
    """A warm-up's run (drain=False, loadgen.warmup): a consumer that takes 1 ms per message falls behind a
    3,000 msg/s producer, and the run ends with the producers instead of reading that backlog."""
    w = parse_workload(
        {
            "name": f"nodrain-{unique}",
            "partitionsPerTopic": 3,
            "messageSize": 200,
            "producerRate": 3000,
            "consumerWorkMicros": 1000,
            "testDurationMinutes": 0.05,
            "producerConfig": {"acks": "all"},
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": healthy.bootstrap_servers}), drain=False)
    acked = sum(p.acked for p in raw.producers.values())
    received = sum(c.received for c in raw.consumers.values())
    print(f"acknowledged {acked}, received {received}, phases {raw.phases_s}")
    # at 1,000 msg/s the backlog left (acked - received) would take seconds to read; the run waited at most for
    # the client batch the consumer was in (up to 1,000 messages: 1 s)
    assert acked >= 8000 and received < acked - 3000
    assert raw.phases_s["after_produce_end"] < (acked - received) / 1000 / 2, raw.phases_s
    assert raw.drain_ended == "not-drained"


def test_a_run_whose_consumers_received_nothing_says_where_they_waited(healthy: TestbedState, unique: str) -> None:
    """A consumer that asks the brokers to hold each fetch until 100 MB are there (or 30 s passed) receives nothing
    of a short run: the record says so and gives what the client's statistics said of each partition (a sweep
    trial once read 111,392 records as lost this way, after a rolling restart, with nothing to say why)."""
    w = parse_workload(
        {
            "name": f"nothing-{unique}",
            "partitionsPerTopic": 3,
            "messageSize": 200,
            "producerRate": 2000,
            "testDurationMinutes": 0.05,
            "drainIdleSeconds": 3,  # nothing will come: 3 quiet seconds end the drain (10 by default)
            "producerConfig": {"acks": "all"},
            "consumerConfig": {"fetch.min.bytes": 100_000_000, "fetch.wait.max.ms": 30_000},
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": healthy.bootstrap_servers}))
    acked = sum(p.acked for p in raw.producers.values())
    assert acked > 0 and sum(c.received for c in raw.consumers.values()) == 0
    assert raw.drain_ended == "idle"  # drainIdleSeconds of quiet, long before drainTimeoutSeconds
    (said,) = [x for x in result.build(raw).result.summary.warnings if x.startswith("no consumer received")]
    print(said)
    assert f"of the {acked:,} acknowledged records: consumer 0: group " in said, said
    assert "3 partition(s) assigned" in said and all(f"{p} (leader " in said for p in range(3)), said


def test_a_consumers_statistics_in_words_group_each_partition_by_its_fetch_state() -> None:
    from drivers.kafka import consumer_state

    doc = {
        "cgrp": {"state": "up", "join_state": "steady", "assignment_size": 3, "rebalance_cnt": 1},
        "topics": {
            "t": {
                "partitions": {
                    "-1": {"fetch_state": "none"},  # librdkafka's internal unassigned partition: not one of them
                    "1": {"fetch_state": "offset-wait", "leader": 3, "next_offset": -1001, "hi_offset": -1001},
                    "0": {"fetch_state": "active", "leader": 2, "next_offset": 120, "hi_offset": 4000},
                    "2": {"fetch_state": "offset-wait", "leader": 1, "next_offset": -1001, "hi_offset": 77},
                }
            }
        },
    }
    assert consumer_state(doc, "t") == (
        "group up/steady, 3 partition(s) assigned, rebalances 1; fetch state per partition: "
        "active: 0 (leader 2, next offset 120, high watermark 4000); offset-wait: 1 (leader 3, next offset not "
        "known, high watermark not known), 2 (leader 1, next offset not known, high watermark 77)"
    )


def test_a_warm_up_given_the_brokers_metrics_ends_once_their_jit_is_quiet(healthy: TestbedState) -> None:
    """loadgen.warmup with the metrics endpoints reads the brokers' JIT compile time while it loads them and ends
    each shape of load (small batches, then 1-MiB ones, then a fixed rate) at the first whole window under the
    threshold, not at its share of the cap. The threshold here is one no broker exceeds (10 cores each on 2 cores),
    so each shape ends at its first whole window (4 s here): the first's cap is 60 s."""
    urls = healthy.metrics_urls
    got = warmup.warm_up(healthy.bootstrap_servers, 180, say=print, metrics_urls=urls, quiet_cores=10, window_s=4)
    assert got.quiet is True and got.jit_cores is not None and 0 <= got.jit_cores < 10, got
    assert [s.producer for s in got.shapes] == [*(dict(s) for s in warmup.SHAPES), {}], got
    # the fixed-rate shape: PACED of the rate the first shape measured over the seconds it ran (whether the brokers
    # kept it depends on the machine: on CI's, still compiling after a restart, they took 14,929 of 19,890 msg/s)
    paced = got.shapes[-1]
    assert paced.rate_msg_s == round(warmup.PACED * got.shapes[0].msg_s), got
    assert paced.msg_s > 0, got
    for shape in got.shapes:
        assert shape.quiet is True and 4 <= shape.s < 45, got
    assert got.s + 0.05 * (len(got.shapes) + 1) >= sum(s.s for s in got.shapes), got  # each rounded to 0.1 s
    # without the endpoints each shape runs its share and says nothing about the JIT (3 s for the first: in a 1-s
    # share it once had nothing acknowledged yet, and a fixed rate of 0 is no shape)
    fixed = warmup.warm_up(healthy.bootstrap_servers, 9, say=print)
    assert fixed.quiet is None and fixed.jit_cores is None and fixed.s >= 9, fixed
    assert [s.s >= 1 and s.quiet is None for s in fixed.shapes] == [True, True, True], fixed
    # each shape is given an equal share of what the ones before it left (their start-up counts), not of the whole
    for i, shape in enumerate(fixed.shapes):
        left = 9 - sum(s.s for s in fixed.shapes[:i])
        assert shape.cap_s is not None and shape.cap_s <= max(warmup.MIN_SHAPE_S, left / (3 - i)) + 0.1, fixed


def test_the_jit_is_quiet_only_over_a_whole_window_of_every_brokers_samples() -> None:
    """JitWatch's decision on the compile-time series measured after a rolling restart, as the run's broker
    sampler records it (cumulative seconds, one sample a broker a second): busy at 0.5 core per broker, quiet at
    0.05; a broker that stopped answering, or a counter that went back (a restart), makes no window."""
    w = warmup.JitWatch([1, 2])
    samples: list[BrokerSample] = []
    now, total = [0.0], {1: 0.0, 2: 0.0}

    def feed(rates: dict[int, float], seconds: int) -> None:
        for _ in range(seconds):
            now[0] += 1
            for b, r in rates.items():
                total[b] += r
                samples.append(BrokerSample(b, int(now[0] * 1e9), {"jit_compile_s": total[b]}))

    feed({1: 0.5, 2: 0.6}, 5)
    assert w.cores(samples) is None  # not a whole window yet
    assert w.cores(samples, whole=False) == pytest.approx(0.55)  # a warm-up's closing figure
    feed({1: 0.5, 2: 0.6}, 10)
    assert w.cores(samples) == pytest.approx(0.55)
    feed({1: 0.05, 2: 0.05}, 10)
    assert w.cores(samples) == pytest.approx(0.05) and w.cores(samples) <= warmup.JIT_QUIET_CORES
    assert warmup.JitWatch([1, 3]).cores(samples) is None  # broker 3 has no samples
    feed({1: 0.05}, 4)  # broker 2 not answering
    assert w.cores(samples) is None
    feed({1: 0.05, 2: 0.05}, 10)
    assert w.cores(samples) == pytest.approx((0.05 + 0.5 / 14) / 2)  # broker 2's window spans its silence
    samples.append(BrokerSample(2, int((now[0] + 1) * 1e9), {"jit_compile_s": 0.1}))  # restarted: began again
    assert w.cores(samples) is None


def test_a_max_rate_run_stops_once_its_window_can_no_longer_stand_for_a_compiling_jit() -> None:
    """JitBusyWatch (a sweep trial's stop_when): once a broker's compile time since the window began reaches
    JIT_BUSY_CORES times the whole window, the window's mean is over the threshold whatever follows, and the run
    stops. Broker 2 at 0.75 core (the first minute after a restart here) reaches it a third of the way into a 30-s
    window; broker 1 at 0.1 never does; the warm-up's compiling does not count, nor a counter that went back."""
    w = parse_workload({"name": "w", "warmupDurationMinutes": 5 / 60, "testDurationMinutes": 0.5})
    raw = runner.RawRun(w, [], Timing(measure_start_ns=int(5e9)), 0)
    total = {1: 100.0, 2: 100.0}

    def feed(rates: dict[int, float], second: int) -> None:
        for b, r in rates.items():
            total[b] += r
            raw.broker_samples.append(BrokerSample(b, int(second * 1e9), {"jit_compile_s": total[b]}))

    watch = warmup.JitBusyWatch()
    need = brokerside.JIT_BUSY_CORES * 30
    for sec in range(5):  # the warm-up: all compiling, none of it counts
        feed({1: 2.0, 2: 2.0}, sec)
    stopped = None
    for sec in range(5, 36):
        feed({1: 0.1, 2: 0.75}, sec)
        if watch(raw):
            stopped = sec
            break
    assert stopped == 5 + need / 0.75, stopped  # the first second broker 2's 0.75 a second adds up to `need`
    assert set(watch.busy) == {2} and watch.busy[2] == pytest.approx(0.75), watch.busy
    quiet = warmup.JitBusyWatch()
    raw.broker_samples = [s for s in raw.broker_samples if s.broker_id == 1]
    assert not quiet(raw) and not quiet.busy
    raw.broker_samples.append(BrokerSample(1, int(40e9), {"jit_compile_s": 50.0}))  # restarted: went back
    assert not quiet(raw)


def test_a_run_measured_while_brokers_still_compiled_says_so_and_names_them() -> None:
    """The measure window's JIT cores per broker (the exporter's compile-time rate, one row a broker a second):
    broker 2 at 0.5 core, as in the first minute after a restart here, is named; broker 1 at 0.05 and the
    warm-up's seconds are not; a warm cluster, or an exporter with no JVM collector, gets no warning."""

    def rows(jit: dict[int, float], phase: str = "measure") -> list[BrokerSecond]:
        return [BrokerSecond(b, s, phase, jit_compile_s_per_s=c) for s in range(5) for b, c in jit.items()]

    said = brokerside.jit_warning(rows({1: 0.05, 2: 0.5}) + rows({1: 2.0, 2: 2.0}, "warmup"))
    assert said is not None and "broker 2 0.50" in said and "broker 1" not in said and "--warm-up" in said
    assert brokerside.jit_warning(rows({1: 0.05, 2: brokerside.JIT_BUSY_CORES * 0.9})) is None
    assert brokerside.jit_warning([BrokerSecond(1, 0, "measure")]) is None


def test_a_bootstrap_where_no_broker_answers_is_exit_3_before_any_work(tmp_path: Path) -> None:
    from tests.conftest import free_port

    wl = write_workload(tmp_path / "w.yaml", name="nobody", warmupDurationMinutes=0.05, testDurationMinutes=0.1)
    addr = f"127.0.0.1:{free_port()}"  # nothing listens there
    p = cli("bench", str(wl), "--bootstrap", addr, "--out", str(tmp_path / "run"))
    assert p.returncode == 3, p.stderr[-2000:]
    assert f"no broker at {addr} answered" in p.stderr and not (tmp_path / "run").exists()
