"""Workload files are validated at the edge: bad ones exit 2, name the field, and create nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster import admin
from core.errors import UserError
from loadgen.workload import load_workload, parse_workload
from records.testbed import TestbedState
from tests.helpers import kafkatune, write_workload


def test_omb_fields_and_config_maps_parse() -> None:
    w = parse_workload(
        {
            "topics": 2,
            "partitionsPerTopic": 16,
            "messageSize": 100,
            "producersPerTopic": 4,
            "consumerPerSubscription": 2,
            "producerRate": 50000,
            "testDurationMinutes": 15,
            "warmupDurationMinutes": 1,
            "producerConfig": {"acks": "all", "linger.ms": 1, "enable.idempotence": True},
            "topicConfig": {"min.insync.replicas": 2},
        }
    )
    assert w.test_seconds == 900 and w.warmup_seconds == 60
    assert w.str_map("producerConfig") == {"acks": "all", "linger.ms": "1", "enable.idempotence": "true"}
    assert w.str_map("topicConfig") == {"min.insync.replicas": "2"}


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"partitionsPerTopics": 3}, "partitionsPerTopics: unknown field"),
        ({"messageSize": -5}, "messageSize"),
        ({"messageSize": 4}, "messageSize"),
        ({"producersPerTopic": "four"}, "producersPerTopic"),
        ({"testDurationMinutes": 0}, "testDurationMinutes"),
        ({"producerRate": -1}, "producerRate"),
        ({"keyDistributor": "ZIPF"}, "keyDistributor"),
        ({"producerConfig": {"bootstrap.servers": "x:1"}}, "producerConfig"),
        ({"producerConfig": ["acks=all"]}, "producerConfig"),
    ],
)
def test_bad_fields_name_the_field(fields: dict[str, object], named: str) -> None:
    with pytest.raises(UserError) as e:
        parse_workload({"name": "x", **fields}, "w.yaml")
    assert f"w.yaml: {named}" in str(e.value)


def test_not_a_mapping_and_not_yaml(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(UserError, match="expected a mapping"):
        load_workload(p)
    p.write_text("name: [unclosed\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_workload(p)
    with pytest.raises(UserError, match="cannot read"):
        load_workload(tmp_path / "missing.yaml")


def _topics(st: TestbedState) -> set[str]:
    return {p.topic for p in admin.partitions(admin.admin_client(st.bootstrap_servers))}


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"bogusField": 1}, "bogusField: unknown field"),
        ({"messageSize": -100}, "messageSize"),
        ({"partitionsPerTopic": "many"}, "partitionsPerTopic"),
        ({"producerConfig": {"acks": "all", "linger.mss": 5}}, "linger.mss"),
        ({"producerConfig": {"acks": "sometimes"}}, "acks"),
        ({"topicConfig": {"retention.msx": 5}}, "retention.msx"),
    ],
)
def test_bench_rejects_bad_workload_exit_2_no_topic(
    healthy: TestbedState, testbed: object, tmp_path: Path, unique: str, fields: dict[str, object], named: str
) -> None:
    name = f"bad-{unique}"
    wl = write_workload(tmp_path / "w.yaml", name=name, **fields)
    before = _topics(healthy)
    proc = kafkatune(
        "bench",
        str(wl),
        "--state-dir",
        str(testbed.state_dir),  # type: ignore[attr-defined]
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert "Traceback" not in proc.stderr
    after = _topics(healthy)
    assert not [t for t in after - before if name in t]
    assert not (tmp_path / "runs").exists()
