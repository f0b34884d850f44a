"""OpenMessaging Benchmark's own workload files, unchanged (tests/fixtures/omb/, copied from
openmessaging/benchmark with their licence headers; its LICENSE beside them): validated, and the small ones run."""

from __future__ import annotations

import json
import math
import re
import zlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, ConfigResource

from core.typed import from_json
from records.omb import problems
from records.result import BacklogParts
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import FIXTURES, cli, kafkatune, write_workload

OMB = FIXTURES / "omb"
RUNNABLE = (
    "1-topic-1-partition-100b",
    "1-topic-6-partition-100b",
    "1-topic-16-partitions-1kb",
    "1-topic-3-partition-100b-3producers",
    "1-topic-100-partitions-1kb-4p-4c-200k",
    "1-topic-10000-partitions-1kb-4p-4c-200k",
)
REFUSED = {
    # too large for this machine's disk: refused before anything is created (the backlog itself runs: below)
    "1-topic-100-partitions-1kb-4p-4c-200k-backlog": "consumerBacklogSizeGB: 512 GiB × replication factor 3",
    "10k-topic-1kb-4p-4c-100k": "topics",
}


@pytest.mark.parametrize("name", RUNNABLE)
def test_omb_workload_files_validate_unchanged_with_a_dry_run(name: str, tmp_path: Path) -> None:
    """--dry-run contacts nothing: the state dir names no testbed, and the file is OMB's, byte for byte."""
    proc = cli("bench", str(OMB / "workloads" / f"{name}.yaml"), "--dry-run", "--state-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "valid:" in proc.stdout and "not contacted: --dry-run" in proc.stderr + proc.stdout
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_omb_workloads_this_tool_cannot_run_are_refused_with_the_field(name: str, tmp_path: Path) -> None:
    proc = cli("bench", str(OMB / "workloads" / f"{name}.yaml"), "--dry-run", "--state-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert REFUSED[name] in proc.stderr


def _java_fields() -> set[str]:
    """The fields of OMB's TestResult, read from OMB's own source."""
    return set(re.findall(r"public\s+[\w<>, ]+?\s+(\w+)\s*(?:=|;)", (OMB / "TestResult.java").read_text()))


def _records(bootstrap: str, prefix: str, n: int = 200) -> list[bytes]:
    """Up to `n` record values from the one topic whose name starts with `prefix`."""
    (topic,) = [
        t for t in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics if t.startswith(prefix)
    ]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[bytes] = []
    try:
        for _ in range(60):
            for m in c.consume(num_messages=n, timeout=1.0):
                if m.error() is None and m.value() is not None:
                    out.append(m.value())
            if len(out) >= n:
                break
    finally:
        c.close()
    return out[:n]


def _run(testbed: Testbed, tmp_path: Path, name: str) -> dict[str, Any]:
    proc = kafkatune(
        "bench",
        str(OMB / "workloads" / f"{name}.yaml"),
        "--no-scale-out",
        "--test-minutes",
        "0.1",
        "--warmup-minutes",
        "0",
        "--keep-topics",
        "--json",
        "--state-dir",
        str(testbed.state_dir),
        "--out",
        str(tmp_path / "run"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_an_omb_payload_file_is_what_is_sent(testbed: Testbed, healthy: TestbedState, tmp_path: Path) -> None:
    """1-topic-1-partition-100b: every record carries payload/payload-100b.data after kafkatune's 20-byte header."""
    res = _run(testbed, tmp_path, "1-topic-1-partition-100b")
    assert res["acknowledged"] > 0 and res["lost"] == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["workload"] == "1 topic / 1 partition / 100b"  # OMB's name, as written
    body = (OMB / "payload" / "payload-100b.data").read_bytes()
    values = _records(healthy.bootstrap_servers, "kt-1-topic-1-partition-100b-")
    assert values and all(len(v) == 100 and v[20:] == body[20:] for v in values)


def test_omb_randomized_payloads_compress_by_their_random_bytes_ratio(
    testbed: Testbed, healthy: TestbedState, tmp_path: Path
) -> None:
    """The 4-producer, 4-consumer, 100-partition workload with randomBytesRatio 0.5: the records sent compress
    to about half (zlib, measured on the records read back), and come from a pool of distinct bodies."""
    _run(testbed, tmp_path, "1-topic-100-partitions-1kb-4p-4c-200k")
    values = _records(healthy.bootstrap_servers, "kt-200k-rate-4-producers-and-4-consumers-on-1-topic-100-partition-")
    assert len(values) >= 100 and all(len(v) == 1024 for v in values)
    ratio = sum(len(zlib.compress(v, 9)) for v in values) / sum(len(v) for v in values)
    print(f"randomized payloads, randomBytesRatio 0.5: zlib ratio {ratio:.3f} over {len(values)} records")
    assert 0.45 <= ratio <= 0.6
    assert len({v[20:] for v in values}) > 1  # a pool, not one body


# ---- OMB driver files -------------------------------------------------------------------------------------
DRIVER_FILES = sorted(p.relative_to(OMB).as_posix() for p in OMB.glob("driver-*/*.yaml"))


@pytest.mark.parametrize("driver", DRIVER_FILES)
def test_omb_driver_files_validate_unchanged_and_say_what_they_do_not_apply(driver: str, tmp_path: Path) -> None:
    proc = cli(
        "bench",
        str(OMB / "workloads" / "1-topic-1-partition-100b.yaml"),
        "--driver",
        str(OMB / driver),
        "--dry-run",
        "--state-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    # the file's own address is never used, and saying so is the first note
    assert "replaces it" in proc.stderr and "localhost" in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir())


def test_a_field_omb_does_not_know_and_a_driver_kafkatune_lacks_are_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load((OMB / "driver-kafka" / "kafka-latency.yaml").read_text())
    wl = str(OMB / "workloads" / "1-topic-1-partition-100b.yaml")
    for name, change, expect in (
        ("typo", {"producerConfg": "acks=1"}, "producerConfg: not a field of OMB's Kafka driver"),
        (
            "rocketmq",
            {"driverClass": "io.openmessaging.benchmark.driver.rocketmq.RocketMQBenchmarkDriver"},
            "driverClass 'io.openmessaging.benchmark.driver.rocketmq.RocketMQBenchmarkDriver'",
        ),
        ("badkey", {"producerConfig": "acks=all\nlinger.msec=1"}, 'No such configuration property: "linger.msec"'),
    ):
        f = tmp_path / f"{name}.yaml"
        f.write_text(yaml.safe_dump({**doc, **change}))
        proc = cli("bench", wl, "--driver", str(f), "--dry-run", "--state-dir", str(tmp_path / "s"))
        assert proc.returncode == 2 and expect in proc.stderr, (name, proc.stderr)


def test_a_kafka_driver_file_shapes_the_topic_and_the_clients(
    testbed: Testbed, healthy: TestbedState, tmp_path: Path
) -> None:
    """1-topic-1-partition-100b with driver-kafka/kafka-sync.yaml: the topic is created with the file's
    replicationFactor and topicConfig (flush.messages=1 is OMB's fsync per message), the producers send with
    its producerConfig, and omb-result.json names the driver as the file does."""
    out = tmp_path / "run"
    proc = kafkatune(
        "bench",
        str(OMB / "workloads" / "1-topic-1-partition-100b.yaml"),
        "--no-scale-out",
        "--driver",
        str(OMB / "driver-kafka" / "kafka-sync.yaml"),
        "--test-minutes",
        "0.1",
        "--keep-topics",
        "--state-dir",
        str(testbed.state_dir),
        "--out",
        str(out),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "result.json").read_text())
    assert res["producerConfig"] == {"acks": "all", "linger.ms": "1", "batch.size": "1048576"}
    assert res["topicConfig"] == {"min.insync.replicas": "2", "flush.messages": "1", "flush.ms": "0"}
    assert res["driver_file"]["name"] == "Kafka" and res["summary"]["lost"] == 0
    admin = AdminClient({"bootstrap.servers": healthy.bootstrap_servers})
    (topic,) = res["topics_used"]
    md = admin.list_topics(topic, timeout=10).topics[topic]
    assert all(len(p.replicas) == 3 for p in md.partitions.values())
    cfg = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    values = {k: v.value for k, v in next(iter(cfg.values())).result().items()}
    assert values["flush.messages"] == "1" and values["min.insync.replicas"] == "2"
    admin.delete_topics([topic])
    omb = json.loads((out / "omb-result.json").read_text())
    assert omb["driver"] == "Kafka" and problems(omb) == []


def test_omb_backlog_workload_builds_its_backlog_with_consumers_paused_then_drains_it(
    testbed: Testbed, tmp_path: Path
) -> None:
    """OMB's 200k-backlog workload, unchanged but for its size and durations from the command line: the
    consumers pause after the warm-up until they owe 0.2 GiB (receiving nothing meanwhile), resume and drain it
    to 1,000 messages (OMB's floor: backlogDrainRatio is 1 by default), then the run goes on for the test
    duration; nothing is lost."""
    out = tmp_path / "run"
    proc = kafkatune(
        "bench",
        str(OMB / "workloads" / "1-topic-100-partitions-1kb-4p-4c-200k-backlog.yaml"),
        "--backlog-gb",
        "0.2",
        "--test-minutes",
        "0.1",
        "--warmup-minutes",
        "0.05",
        "--state-dir",
        str(testbed.state_dir),
        "--out",
        str(out),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "result.json").read_text())
    b = res["backlog"]
    print("backlog:", b)
    target = b["target_msgs"]
    assert target == math.ceil(0.2 * 1024**3 / 1024) and b["drained_to_msgs"] == 1000
    assert b["peak_msgs"] >= target and b["build_s"] >= 2 and b["drain_s"] > 0 and b["test_s"] >= 6
    # paused: in the whole seconds of the build the consumers received (next to) nothing, the producers went on
    st = b["started_s"]
    build = range(math.ceil(st["build"]) + 1, math.floor(st["drain"]))
    rows = pq.read_table(out / "samples.parquet").to_pylist()
    got = sum(r["msgs"] for r in rows if r["role"] == "consumer" and r["second"] in build)
    sent = sum(r["msgs"] for r in rows if r["role"] == "producer" and r["second"] in build)
    assert len(build) >= 1 and sent > 0 and got <= 0.02 * sent, (list(build), got, sent)
    assert b["drain_msg_s"] > 0 and res["summary"]["lost"] == 0
    assert from_json(BacklogParts, b).peak_msgs == b["peak_msgs"]  # the record's backlog part, typed
    omb = json.loads((out / "omb-result.json").read_text())
    # OMB's own backlog series: one value per 10-s window, at its end (as OMB samples it)
    assert problems(omb) == [] and len(omb["backlog"]) == len(omb["publishRate"]) >= 1
    # the measured phase is the build, the drain and the test together, as OMB's windows are
    assert res["summary"]["window_s"] >= b["build_s"] + b["drain_s"] + b["test_s"] - 2


def test_omb_result_has_every_field_of_omb_and_round_trips_through_import_and_diff(
    testbed: Testbed, tmp_path: Path
) -> None:
    """A fixed-rate run's omb-result.json: every field of OMB's TestResult.java (tests/fixtures/omb), of its
    type, in OMB's units (the same p99 as result.json's, in ms; publish delay in µs). Imported with
    `import-omb`, it reads back as the same run; `diff` puts the two side by side (one run each: shown, not
    judged). OMB's own result file (made by OMB 0.0.1 against this testbed) imports and diffs too."""
    out = tmp_path / "run"
    wl = write_workload(
        tmp_path / "w.yaml",
        name="omb result / 2 windows",
        producerRate=2000,
        partitionsPerTopic=3,
        warmupDurationMinutes=0.05,
        testDurationMinutes=12 / 60,
    )
    proc = kafkatune("bench", str(wl), "--no-scale-out", "--state-dir", str(testbed.state_dir), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    res, omb = (json.loads((out / f).read_text()) for f in ("result.json", "omb-result.json"))
    assert problems(omb) == [] and set(omb) == set(_java_fields())
    assert len(omb["publishRate"]) == 2 and 1800 <= omb["publishRate"][0] <= 2200  # msg/s over 10-s windows
    s = res["summary"]
    assert omb["aggregatedEndToEndLatency99pct"] == pytest.approx(s["end_to_end_latency_ms"]["p99"])  # ms
    assert omb["aggregatedPublishDelayLatency50pct"] == pytest.approx(1000 * s["publish_delay_ms"]["p50"], abs=1)  # µs
    imported = tmp_path / "imported"
    proc = kafkatune("import-omb", str(out / "omb-result.json"), "--out", str(imported), "--json")
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout)
    assert again["publish_msg_s"] == pytest.approx(sum(omb["publishRate"]) / 2)
    assert again["end_to_end_latency_ms"]["p99"] == pytest.approx(s["end_to_end_latency_ms"]["p99"])
    assert json.loads((imported / "omb-result.json").read_text()) == omb
    proc = kafkatune("diff", str(out), str(imported), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    e2e = next(m for m in d["metrics"] if m["metric"] == "e2e_p99_ms")
    assert e2e["change"]["estimate"] == pytest.approx(0, abs=1e-6) and e2e["verdict"].startswith("not judged")
    real = OMB / "results" / "omb-kafka-1-topic-1-partition-100b.json"  # written by OMB itself
    proc = kafkatune("import-omb", str(real), "--out", str(tmp_path / "real"), "--json")
    assert proc.returncode == 0, proc.stderr
    proc = kafkatune("diff", str(real), str(tmp_path / "real"))
    assert proc.returncode == 0 and "not judged" in proc.stdout, proc.stdout + proc.stderr
