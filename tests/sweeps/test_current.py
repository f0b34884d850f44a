"""The `current` baseline (sweeps.current): what the cluster and its clients run now, read from the users' client
files, the pre-sweep snapshot and a topic; checked when the spec is read; compared with the chosen configuration in
the confirmation's family of tests. Kafka's defaults set the swept dynamic broker keys to Kafka's default."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import UserError
from records.snapshot import BrokerSnapshot
from sweeps import confirm, current, space
from sweeps.spec import load_spec, parse_spec
from tests.sweeps.test_confirm import reps

SPEC: dict[str, Any] = {
    "name": "cur",
    "cluster": {"testbed": True},
    "workload": {"partitionsPerTopic": 3, "producerConfig": {"linger.ms": 2}},
    "plan": "staged",
    "fixed": {"partitions": 6},
    "stages": [
        {"name": "s", "params": {"batch.size": {"choices": [65536]}, "num.io.threads": {"choices": [4]}}, "trials": 1}
    ],
    "baselines": ["kafka-defaults", "current"],
}


def _snapshot(**per_key: tuple[list[str | None], str]) -> BrokerSnapshot:
    """A snapshot as brokerconf.apply.Configs.snapshot writes it: per broker, per dynamic key, value and source."""
    brokers: dict[str, dict[str, Any]] = {"1": {}, "2": {}, "3": {}}
    for key, (values, source) in per_key.items():
        for b, v in zip(brokers, values, strict=True):
            brokers[b][key.replace("_", ".")] = {"value": v, "source": source}
    doc = {
        "schema_version": 1,
        "taken_ns": 0,
        "brokers": brokers,
        "restart_overrides": {"replica.fetch.max.bytes": "2097152"},
    }
    return BrokerSnapshot.from_json(doc)  # as records.snapshot reads the file


def _spec_in(tmp: Path, producer: str, consumer: str = "", **extra: Any) -> Path:
    (tmp / "producer.properties").write_text(producer)
    (tmp / "consumer.properties").write_text(consumer)
    cur = {"producer": "producer.properties", "consumer": "consumer.properties", **extra}
    path = tmp / "spec.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "current": cur}))
    return path


def test_the_client_files_swept_keys_are_applied_and_the_rest_named_without_values(tmp_path: Path) -> None:
    producer = (
        "# ours\nbatch.size=131072\nlinger.ms: 20\ncompression.type=lz4\nsasl.jaas.config=secret-pw\nclient.id=x\n"
    )
    spec = load_spec(_spec_in(tmp_path, producer, "fetch.min.bytes=1024\nkey.deserializer=Foo\n"))
    assert spec.current is not None and Path(spec.current.producer or "").is_absolute()  # read from the spec's folder
    cfg, left_out = current.client_config(spec.current)
    assert cfg == {"batch.size": 131072, "linger.ms": 20, "compression.type": "lz4", "fetch.min.bytes": 1024}
    assert left_out == ["client.id", "key.deserializer", "sasl.jaas.config"]
    assert "secret-pw" not in repr((cfg, left_out))


@pytest.mark.parametrize(
    ("producer", "consumer", "said"),
    [
        ("batch.size=-4\n", "", "current.producer"),
        ("linger.ms=soon\n", "", "linger.ms='soon': must be an integer"),
        ("compression.type=brotli\n", "", "compression.type='brotli': must be one of"),
        ("fetch.min.bytes=1\n", "", "fetch.min.bytes is a consumer setting: put it in current.consumer"),
        ("batch.size 1\n", "", "expected key=value"),
    ],
)
def test_a_bad_client_file_is_refused_naming_the_file_and_key(
    tmp_path: Path, producer: str, consumer: str, said: str
) -> None:
    with pytest.raises(UserError) as e:
        load_spec(_spec_in(tmp_path, producer, consumer))
    assert said in str(e.value) and "producer.properties" in str(e.value)


def test_current_is_measured_only_when_asked_for_and_its_files_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="current: add current to baselines"):
        parse_spec({**SPEC, "baselines": ["kafka-defaults"], "current": {"topic": "orders"}})
    with pytest.raises(UserError, match="cannot read it"):
        parse_spec({**SPEC, "current": {"producer": "missing.properties"}}, "s.yaml", tmp_path)
    with pytest.raises(UserError, match=r"current\.colour: unknown field"):
        parse_spec({**SPEC, "current": {"colour": "red"}})


def test_the_brokers_keys_are_the_ones_every_broker_runs_at_other_than_the_default() -> None:
    snap = _snapshot(
        num_io_threads=(["16", "16", "16"], "DYNAMIC_BROKER_CONFIG"),
        num_network_threads=(["3", "3", "3"], "DEFAULT_CONFIG"),  # Kafka's default, as the broker reports it
        num_replica_fetchers=(["2", "4", "2"], "DYNAMIC_BROKER_CONFIG"),  # the brokers disagree: each keeps its own
        log_flush_interval_ms=(["1000", "1000", "1000"], "STATIC_BROKER_CONFIG"),
        log_flush_interval_messages=(["9223372036854775807"] * 3, "STATIC_BROKER_CONFIG"),  # set, to the default
    )
    assert current.broker_config(snap) == {
        "num.io.threads": 16,
        "log.flush.interval.ms": 1000,
        "replica.fetch.max.bytes": 2097152,
    }


def test_a_remote_clusters_restart_only_keys_count_when_every_broker_sets_one_value() -> None:
    per_host = {
        "1": {"replica.fetch.max.bytes": "4194304", "replica.fetch.response.max.bytes": "20971520"},
        "2": {"replica.fetch.max.bytes": "4194304", "replica.fetch.response.max.bytes": None},  # not in its file
        "3": {"replica.fetch.max.bytes": "4194304", "replica.fetch.response.max.bytes": "20971520"},
    }
    snap = replace(_snapshot(), restart_overrides=per_host)  # brokerconf.restarts.RemoteRestarts.snapshot's shape
    assert current.broker_config(snap) == {"replica.fetch.max.bytes": 4194304}


def test_the_current_baseline_layers_files_brokers_and_topic_over_the_spec(tmp_path: Path) -> None:
    spec = load_spec(_spec_in(tmp_path, "linger.ms=20\n", "", topic="orders"))
    snap = _snapshot(num_io_threads=(["16", "16", "16"], "DYNAMIC_BROKER_CONFIG"))
    cfg, _ = space.current_baseline(spec, snap, partitions=12)
    assert cfg["linger.ms"] == 20 and cfg["batch.size"] == 16384  # the file over the workload's 2; else defaults
    assert cfg["num.io.threads"] == 16 and cfg["replica.fetch.max.bytes"] == 2097152
    assert cfg["partitions"] == 12  # the topic's, over the spec's fixed 6
    assert space.current_baseline(spec, snap, partitions=None)[0]["partitions"] == 6


def test_kafkas_defaults_set_the_swept_dynamic_broker_keys_to_kafkas_default() -> None:
    spec = parse_spec(SPEC)
    dflt = space.baseline(spec, "kafka-defaults")
    assert dflt["num.io.threads"] == 8  # swept: at Kafka's default, not at what the cluster runs
    assert "num.network.threads" not in dflt  # not swept: the cluster's own
    assert space.baseline(spec, "omb-throughput")["num.io.threads"] == 8


def test_the_chosen_configuration_is_compared_with_current_in_the_same_family() -> None:
    runs = {
        confirm.DEFAULTS: reps("d", [5.0, 5.2, 4.9, 5.1]),
        confirm.CURRENT: reps("c", [6.0, 6.1, 5.9, 6.2]),
        "a": reps("a", [7.0, 7.2, 6.9, 7.1]),
        "b": reps("b", [4.0, 4.1, 3.9, 4.2]),
    }
    s = confirm.summary(runs)
    assert s.chosen == "a" and s.runner_up and s.runner_up.label == confirm.CURRENT  # the runner-up: one test
    assert s.vs_current and s.vs_current.label == confirm.CURRENT and s.vs_current.ratio
    assert s.vs_current.ratio.estimate > 1
    assert s.vs_defaults and s.vs_defaults.alpha in (pytest.approx(0.05), pytest.approx(0.025))  # two tests
    far = confirm.summary({**runs, "b": reps("b", [6.9, 7.1, 7.0, 6.8])})
    alphas = sorted(c.alpha or 0 for c in (far.runner_up, far.vs_defaults, far.vs_current) if c)
    assert alphas[0] == pytest.approx(0.05 / 3)  # three tests: Holm's first level is alpha / 3
