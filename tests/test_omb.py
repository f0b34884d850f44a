"""OpenMessaging Benchmark's own workload files, unchanged (tests/fixtures/omb/, copied from
openmessaging/benchmark with their licence headers; its LICENSE beside them): validated, and the small ones run."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune

OMB = Path(__file__).parent / "fixtures" / "omb"
RUNNABLE = ("1-topic-1-partition-100b", "1-topic-6-partition-100b", "1-topic-16-partitions-1kb",
            "1-topic-3-partition-100b-3producers", "1-topic-100-partitions-1kb-4p-4c-200k",
            "1-topic-10000-partitions-1kb-4p-4c-200k")  # fmt: skip
REFUSED = {
    "1-topic-100-partitions-1kb-4p-4c-200k-backlog": "consumerBacklogSizeGB: 512 GB: backlog build-and-drain runs",
    "10k-topic-1kb-4p-4c-100k": "topics",
}


@pytest.mark.parametrize("name", RUNNABLE)
def test_omb_workload_files_validate_unchanged_with_a_dry_run(name: str, tmp_path: Path) -> None:
    """--dry-run contacts nothing: the state dir names no testbed, and the file is OMB's, byte for byte."""
    proc = kafkatune("bench", str(OMB / "workloads" / f"{name}.yaml"), "--dry-run", "--state-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "valid:" in proc.stdout and "not contacted: --dry-run" in proc.stderr + proc.stdout
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_omb_workloads_this_tool_cannot_run_are_refused_with_the_field(name: str, tmp_path: Path) -> None:
    proc = kafkatune("bench", str(OMB / "workloads" / f"{name}.yaml"), "--dry-run", "--state-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert REFUSED[name] in proc.stderr


def _records(bootstrap: str, prefix: str, n: int = 200) -> list[bytes]:
    """Up to `n` record values from the one topic whose name starts with `prefix`."""
    (topic,) = [t for t in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
                if t.startswith(prefix)]  # fmt: skip
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
    proc = kafkatune("bench", str(OMB / "workloads" / f"{name}.yaml"), "--test-minutes", "0.1", "--warmup-minutes",
                     "0", "--keep-topics", "--json", "--state-dir", str(testbed.state_dir), "--out",
                     str(tmp_path / "run"), timeout=600)  # fmt: skip
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
