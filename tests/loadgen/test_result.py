"""Aggregation of worker reports into the run record: exact loss/dup accounting, phases, histograms."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from loadgen import recorder
from loadgen.channel import Timing
from loadgen.rawrun import ConsumerEnd, ProducerEnd
from loadgen.result import build
from loadgen.runner import RawRun, Tick, measured_seconds, phase_of
from loadgen.workload import parse_workload
from records.omb import FIELDS, problems
from records.result import ProducerLoss
from records.run import read_result, write_run
from tests.helpers import FIXTURES


def _raw(subs: int = 1) -> RawRun:
    w = parse_workload({"name": "u", "testDurationMinutes": 0.05, "subscriptionsPerTopic": subs})
    return RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=3_000_000_000), 0)


def _producer(acked: list[int]) -> ProducerEnd:
    return ProducerEnd(
        sent=len(acked),
        acked=sum(acked),
        errors=len(acked) - sum(acked),
        acked_map=bytes(acked),
    )


def _consumer(seen: dict[int, list[int]]) -> ConsumerEnd:
    return ConsumerEnd(received=sum(sum(v) for v in seen.values()), seen={p: bytes(v) for p, v in seen.items()})


def test_lost_and_duplicated_are_counted_per_producer() -> None:
    raw = _raw()
    raw.producers = {0: _producer([1, 1, 1, 1, 0]), 1: _producer([1, 1])}
    # producer 0: seq 2 never consumed (lost), seq 3 consumed twice by two consumers (duplicate),
    # seq 4 not acknowledged but consumed (allowed: the ack was lost, not the message)
    raw.consumers = {0: _consumer({0: [1, 1, 0, 1, 1], 1: [1]}), 1: _consumer({0: [0, 0, 0, 1], 1: [0, 1]})}
    s = build(raw).result.summary
    assert s.lost == 1
    assert s.duplicated == 1
    assert s.unacked_but_received == 1
    # and which: the lost sequence numbers as [first, last] ranges (the run fails naming them)
    assert s.per_producer["0"] == ProducerLoss(acked=4, lost=1, duplicated=1, lost_seqs=((2, 2),))
    # the log was not read again here (loadgen.verify): nothing counted as not consumed in time
    assert s.per_producer["1"] == ProducerLoss(acked=2)


def test_two_subscriptions_each_owe_every_message() -> None:
    raw = _raw(subs=2)
    raw.producers = {0: _producer([1, 1, 1])}
    raw.consumers = {0: _consumer({0: [1, 1, 1]}), 1: _consumer({0: [1, 1, 0]})}
    s = build(raw).result.summary
    assert s.lost == 1 and s.duplicated == 0


def test_only_whole_seconds_inside_the_window_are_measured() -> None:
    assert [phase_of(s, 1.2, 6) for s in range(9)] == ["warmup"] * 2 + ["measure"] * 5 + ["drain"] * 2
    assert measured_seconds(1.2, 6) == 5
    assert measured_seconds(0, 6) == 6
    assert phase_of(0, 0, 6) == "measure"


def test_rates_come_from_measured_seconds_and_histograms_merge_exactly() -> None:
    raw = _raw()
    h1, h2 = recorder.new_histogram(), recorder.new_histogram()
    for v in range(1, 1001):
        recorder.record_ns(h1, v * 1000_000)  # 1..1000 ms
        recorder.record_ns(h2, (v + 1000) * 1000_000)  # 1001..2000 ms
    raw.ticks = [Tick("producer", 0, s, 100, 100_000, 0, h1.encode(), 0.0, 0.0, 0, 100) for s in range(3)]
    raw.ticks += [Tick("producer", 1, s, 50, 50_000, 0, h2.encode(), 0.0, 0.0, 0, 50) for s in range(3)]
    raw.ticks.append(Tick("producer", 0, 3, 999, 999, 0, None, 0.0, 0.0, 0, 0))  # drain: not measured
    rec = build(raw)
    assert rec.result.summary.publish_msg_s == 150
    assert abs((rec.result.summary.publish_mb_s or 0) - 0.15) < 1e-9
    assert rec.omb_fields["publishRate"][:3] == [150.0, 150.0, 150.0]
    merged = recorder.merge([h1.encode(), h2.encode()])
    assert abs(merged.get_value_at_percentile(50) / 1000 - 1000) < 2  # the median of both, not an average
    assert rec.omb_fields["publishLatency50pct"][0] == merged.get_value_at_percentile(50) / 1000
    assert rec.result.publish_p50_ms == rec.omb_fields["aggregatedPublishLatency50pct"]  # one figure, one value


def test_the_record_written_is_the_record_read_back_with_omb_s_series_beside_it(tmp_path: Path) -> None:
    """One typed record for the writer and the readers: result.json reads back as the RunResult that was built,
    field for field, and keeps OMB's per-second series beside it for OMB's tools."""
    raw = _raw()
    h = recorder.new_histogram()
    recorder.record_ns(h, 5_000_000)
    raw.producers = {0: _producer([1, 1, 0])}
    raw.consumers = {0: _consumer({0: [1, 1]})}
    raw.ticks = [Tick("producer", 0, s, 10, 10_000, 0, h.encode(), 0.0, 0.0, 0, 10) for s in range(3)]
    rec = build(raw, driver_info={"client": "confluent-kafka"})
    write_run(tmp_path, rec)
    assert read_result(tmp_path) == rec.result
    assert rec.result.summary.per_producer["0"] == ProducerLoss(acked=2)
    doc = json.loads((tmp_path / "result.json").read_text())
    assert doc["schema_version"] == 1 and doc["publishRate"][:3] == [10.0, 10.0, 10.0]
    assert (
        doc["aggregatedPublishLatency99pct"]
        == rec.result.publish_p99_ms
        == rec.omb_fields["aggregatedPublishLatency99pct"]
    )


def _java_fields() -> dict[str, str]:
    """OMB's TestResult fields and their Java types, read from OMB's own source (tests/fixtures/omb)."""
    src = (FIXTURES / "omb" / "TestResult.java").read_text()
    return dict((name, typ) for typ, name in re.findall(r"public\s+([\w<>, ]+?)\s+(\w+)\s*(?:=|;)", src))


def test_the_omb_document_has_every_field_of_omb_test_result_with_its_type_and_unit() -> None:
    """12 measured seconds at a fixed rate: two OMB windows (10 s and 2 s), rates per second of each window,
    latencies in OMB's units (publish and end-to-end ms, publish delay whole µs), backlog in messages."""
    w = parse_workload({"name": "1 topic / 2 windows", "testDurationMinutes": 0.2, "producerRate": 100})
    raw = RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=12_000_000_000), 0)
    pub, e2e, delay = recorder.new_histogram(), recorder.new_histogram(), recorder.new_histogram()
    for v in range(1, 101):
        recorder.record_ns(pub, v * 1_000_000)  # 1..100 ms
        recorder.record_ns(e2e, 2 * v * 1_000_000)  # 2..200 ms
        recorder.record_ns(delay, v * 1_000)  # 1..100 µs
    for s in range(12):
        raw.ticks.append(Tick("producer", 0, s, 100, 102_400, 1, pub.encode(), 0.0, 0.0, 0, 100, delay.encode()))
        raw.ticks.append(Tick("consumer", 0, s, 90, 92_160, 0, e2e.encode(), 0.0, 0.0, 0, 0))
    raw.producers = {0: replace(_producer([1] * 1200), publish_hist=pub.encode())}
    raw.consumers = {0: replace(_consumer({0: [1] * 1080}), e2e_hist=e2e.encode())}
    doc = build(raw).omb
    assert doc is not None and problems(doc) == []
    java = _java_fields()
    assert set(java) == set(FIELDS) == set(doc)  # every field of OMB's TestResult, and no other
    for name, typ in java.items():  # the kinds follow the Java types
        kind = FIELDS[name]
        assert typ.startswith("List<") == kind.startswith("list[") and typ.startswith("Map<") == kind.startswith("map[")
        whole = typ in ("int", "long") or typ.endswith("Long>")
        assert whole == (kind in ("int", "list[int]", "map[int]")) and (typ == "String") == (kind == "str"), name
    assert doc["workload"] == "1 topic / 2 windows" and doc["messageSize"] == 1024
    assert doc["publishRate"] == [100.0, 100.0] and doc["consumeRate"] == [90.0, 90.0]
    assert doc["publishErrorRate"] == [1.0, 1.0]
    assert doc["backlog"] == [100, 120]  # 10 × (100 − 90) acknowledged but not yet received, then 12 × 10
    assert 49 <= doc["publishLatency50pct"][0] <= 51 and 98 <= doc["endToEndLatency50pct"][1] <= 101  # ms
    assert doc["publishDelayLatency50pct"][0] == 50 and isinstance(doc["publishDelayLatency99pct"][0], int)  # µs
    assert 49 <= doc["aggregatedPublishDelayLatency50pct"] <= 51  # µs, over the measured seconds
    assert 98 <= doc["aggregatedEndToEndLatency50pct"] <= 101 and doc["aggregatedPublishLatencyQuantiles"]
    assert doc["aggregatedEndToEndLatencyQuantiles"]["100.0"] == doc["aggregatedEndToEndLatencyMax"]


def test_what_was_not_measured_is_null_in_the_omb_document() -> None:
    """Max rate: no schedule, so no publish delay; 8-B payloads: no send time, so no latency at all."""
    w = parse_workload({"name": "tiny", "testDurationMinutes": 0.05, "messageSize": 8})
    raw = RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=3_000_000_000), 0)
    raw.ticks = [Tick("producer", 0, s, 10, 80, 0, None, 0.0, 0.0, 0, 10) for s in range(3)]
    raw.producers = {0: _producer([1] * 30)}
    doc = build(raw).omb
    assert doc is not None and problems(doc) == []
    assert doc["publishRate"] == [10.0] and doc["publishLatency99pct"] == [None]
    assert doc["publishDelayLatency99pct"] == [None] and doc["aggregatedEndToEndLatency99pct"] is None
    assert doc["aggregatedPublishLatencyQuantiles"] == {}


def test_what_was_not_measured_is_null_in_the_record_too() -> None:
    """The same run's result.json: its OMB-named latencies and their per-second series are None, not 0.0 (RunResult:
    None is not measured); a run with latencies has them."""
    w = parse_workload({"name": "tiny", "testDurationMinutes": 0.05, "messageSize": 8})
    raw = RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=3_000_000_000), 0)
    raw.ticks = [Tick("producer", 0, s, 10, 80, 0, None, 0.0, 0.0, 0, 10) for s in range(3)]
    raw.producers = {0: _producer([1] * 30)}
    rec = build(raw)
    r = rec.result
    assert r.publish_p50_ms is r.publish_p99_ms is r.publish_max_ms is r.e2e_p99_ms is r.e2e_max_ms is None
    assert rec.omb_fields["aggregatedPublishLatencyAvg"] is None and rec.omb_fields["publishLatency99pct"][0] is None
