"""Malformed sweep specs: each is refused with one line naming the field, before any cluster is touched."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeps.spec import parse_spec
from testbed.lifecycle import Testbed
from tests.helpers import cli, kafkatune

VALID: dict[str, Any] = {
    "name": "spec-test",
    "cluster": {"testbed": True},
    "workload": {"messageSize": 1024, "partitionsPerTopic": 3},
    "plan": "staged",
    "stages": [
        {
            "name": "producer",
            "fixed": {"acks": "all"},
            "params": {
                "batch.size": {"low": 16384, "high": 262144, "log": True},
                "num.io.threads": {"choices": [8, 16]},
            },
            "trials": 2,
        }
    ],
}


def _with(path: str, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(VALID)
    cur: Any = d
    *head, last = path.split("/")
    for p in head:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    if value is KeyError:
        del cur[last]
    else:
        cur[last] = value
    return d


S = "stages/0/params"
BAD = [
    ("unknown-field", _with("plann", "staged"), "plann: unknown field"),
    ("unknown-key", _with(f"{S}/batch.sise", {"low": 1, "high": 2}), "unknown key 'batch.sise'"),
    ("out-of-range", _with(f"{S}/batch.size", {"low": 0, "high": 65536}), "batch.size: 0 is out of range"),
    ("wrong-type", _with(f"{S}/linger.ms", {"low": "ten", "high": 5}), "low"),
    ("bad-choice", _with(f"{S}/acks", {"choices": ["2"]}), "acks: choice '2' is not allowed"),
    ("range-on-choice-key", _with(f"{S}/compression.type", {"low": 1, "high": 2}), "compression.type: takes choices"),
    ("low-above-high", _with(f"{S}/batch.size", {"low": 65536, "high": 16384}), "low (65536) is above high"),
    ("bad-fixed", _with("stages/0/fixed", {"acks": 2}), "acks: 2 is not allowed"),
    (
        "rule-buffer",
        _with("stages/0/fixed", {"buffer.memory": 8192}),
        "buffer.memory ≥ batch.size can never hold",
    ),
    (
        "rule-fetch",
        _with("fixed", {"fetch.max.bytes": 1000000, "max.partition.fetch.bytes": 4194304}),
        "fetch.max.bytes ≥ max.partition.fetch.bytes",
    ),
    (
        "rule-replica-fetch",
        _with(f"{S}/replica.fetch.max.bytes", {"choices": [104857600]}),
        "replica.fetch.response.max.bytes ≥ replica.fetch.max.bytes",
    ),
    (
        "restart-key-on-bootstrap",
        {**_with(f"{S}/replica.fetch.max.bytes", {"choices": [5242880]}), "cluster": {"bootstrap": "127.0.0.1:9092"}},
        "restart-only broker configs need a broker restart",
    ),
    (
        "testbed-and-inventory",
        _with("cluster", {"testbed": True, "inventory": "hosts.yaml"}),
        "give one of testbed: true, bootstrap or inventory, not testbed and inventory",
    ),
    ("staged-without-stages", _with("stages", []), "plan staged needs a non-empty `stages`"),
    ("joint-without-trials", {**_with("stages", []), "plan": "joint", "params": {"linger.ms": 5}}, "plan joint needs"),
    ("swept-and-fixed", _with("stages/0/fixed", {"batch.size": 16384}), "both swept and fixed"),
    ("workload-field", _with("workload/messageSizee", 10), "workload: messageSizee: unknown field"),
    ("workload-rate", _with("workload/producerRate", 1000), "workload.producerRate"),
    ("windows-zero", _with("measurement", {"windows": 0}), "measurement.windows"),
    ("objective", _with("objectives", ["p99_e2e_ms"]), "first objective must be sustainable_mb_s or throughput_mb_s"),
    ("slo-empty", _with("slo", {"p99_e2e_ms": None}), "slo: give p99_e2e_ms and/or p99_publish_ms"),
    ("search-steps", _with("search", {"min_step_s": 20, "max_step_s": 10}), "min_step_s (20) must not exceed"),
    ("ramp-gone", _with("ramp", {"low": 0.5}), "ramp: replaced by search"),
    ("confirm-one-repeat", _with("confirm", {"repeats": 1}), "confirm.repeats"),
    ("hold-short", _with("hold", {"run_s": 1}), "hold.run_s"),
    ("hold-headroom", _with("hold", {"headroom": 1.5}), "hold.headroom"),
    ("hold-step", _with("hold", {"step": 0}), "hold.step"),
    ("confirm-top-renamed", _with("confirm_top", 3), "confirm_top: replaced by confirm: {top: 3, repeats: 3}"),
    ("storage", _with("storage", "mysql://x"), "storage: a sqlite:///"),
    ("bootstrap-no-port", _with("cluster", {"bootstrap": "localhost"}), "'localhost' is not host:port"),
    ("trials-zero", _with("stages/0/trials", 0), "stages.0.trials"),
    ("no-cluster", _with("cluster", {"testbed": False}), "testbed: false needs bootstrap"),
]


@pytest.mark.parametrize(("name", "data", "needle"), BAD, ids=[b[0] for b in BAD])
def test_malformed_spec_is_one_clear_line(name: str, data: dict[str, Any], needle: str, tmp_path: Path) -> None:
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(data, allow_unicode=True))
    p = cli("sweep", str(f), "--runs-dir", str(tmp_path / "runs"))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"error: {f}:") and needle in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()  # nothing was created, nothing touched


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("name: [unclosed\n")
    p = cli("sweep", str(f))
    assert p.returncode == 2 and "not valid YAML" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = cli("sweep", str(tmp_path / "nope.yaml"))
    assert p.returncode == 2 and "cannot read" in p.stderr


def test_valid_spec_and_examples_parse() -> None:
    s = parse_spec(VALID)
    assert [st.name for st in s.stage_list] == ["producer"]
    from tests.helpers import REPO

    for ex in ("staged-sync-replication.yaml", "latency-slo.yaml"):
        p = cli("sweep", str(REPO / "examples" / ex), "--dry-run")
        assert p.returncode == 0, p.stderr
        assert "budget:" in p.stdout and "baselines: kafka-defaults" in p.stdout


def test_the_tuning_benchmarks_scenarios_are_valid_specs_of_at_most_30_search_trials() -> None:
    """benchmarks/tuning/: each scenario merged onto common.yaml (as its run.py merges them) is a spec the sweep
    accepts, its `current` files read, with at most 30 search trials (issue 38's bound)."""
    from tests.helpers import REPO

    here = REPO / "benchmarks" / "tuning"
    common = yaml.safe_load((here / "common.yaml").read_text())
    scenarios = sorted(p for p in here.glob("*.yaml") if p.name != "common.yaml")
    assert len(scenarios) >= 5, scenarios
    for p in scenarios:
        spec = parse_spec({**common, **yaml.safe_load(p.read_text())}, str(p), here)
        assert spec.planned[1] <= 30 and list(spec.objectives) == ["sustainable_mb_s"], p
        assert spec.current is None or "current" in spec.baselines, p


def test_bad_specs_leave_the_cluster_untouched(testbed: Testbed, tmp_path: Path) -> None:
    """Runs against the real testbed: configs before == after every refused spec and the unreachable one."""
    from brokerconf.apply import BrokerConfigs

    bc = BrokerConfigs.connect(testbed.state().bootstrap_servers, testbed=testbed)
    before = bc.snapshot()
    calls = []
    for name, data, _ in BAD[:6]:
        f = tmp_path / f"{name}.yaml"
        f.write_text(yaml.safe_dump(data, allow_unicode=True))
        calls.append(("sweep", str(f), "--state-dir", str(testbed.state_dir)))
    unreachable = {**copy.deepcopy(VALID), "cluster": {"bootstrap": "127.0.0.1:9"}}
    unreachable["stages"][0]["params"] = {"batch.size": {"low": 16384, "high": 65536}}
    f = tmp_path / "unreachable.yaml"
    f.write_text(yaml.safe_dump(unreachable))
    calls.append(("sweep", str(f), "--runs-dir", str(tmp_path / "runs")))
    # at once: each refusal is its own process, and the snapshot after them sees all they could have changed
    with ThreadPoolExecutor(len(calls)) as pool:
        *bad, p = pool.map(lambda args: kafkatune(*args, timeout=180), calls)
    assert [b.returncode for b in bad] == [2] * 6, [b.stderr[-500:] for b in bad]
    assert p.returncode == 3, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "cluster.bootstrap: no broker at 127.0.0.1:9 answered" in p.stderr
    after = bc.snapshot()
    assert before.brokers == after.brokers and before.restart_overrides == after.restart_overrides


def test_an_omb_workload_file_is_a_sweeps_workload(tmp_path: Path) -> None:
    """`workload: FILE` (relative to the spec) takes an OMB workload file as it is: its topology and payload;
    its rate and durations are the sweep's to set. The study's spec copy holds the workload it read."""
    from sweeps.spec import load_spec, redacted_text
    from tests.helpers import REPO

    omb = REPO / "tests" / "fixtures" / "omb" / "workloads"
    (tmp_path / "specs").mkdir()
    f = tmp_path / "specs" / "s.yaml"
    rel = Path("..") / "omb" / "1-topic-16-partitions-1kb.yaml"
    (tmp_path / "omb").mkdir()
    (tmp_path / "omb" / rel.name).write_bytes((omb / rel.name).read_bytes())
    (tmp_path / "payload").mkdir()
    (tmp_path / "payload" / "payload-1Kb.data").write_bytes((omb.parent / "payload" / "payload-1Kb.data").read_bytes())
    f.write_text(yaml.safe_dump({**VALID, "workload": str(rel)}))
    s = load_spec(f)
    assert s.base_workload().partitionsPerTopic == 16 and s.base_workload().messageSize == 1024
    assert Path(s.workload["payloadFile"]) == (tmp_path / "payload" / "payload-1Kb.data").resolve()
    assert "producerRate" not in s.workload and "testDurationMinutes" not in s.workload  # the sweep's to set
    copy_text = yaml.safe_load(redacted_text(f))
    assert copy_text["workload"]["partitionsPerTopic"] == 16
    p = cli("sweep", str(f), "--dry-run")
    assert p.returncode == 0, p.stderr
    backlog = tmp_path / "specs" / "b.yaml"
    back = omb / "1-topic-100-partitions-1kb-4p-4c-200k-backlog.yaml"
    backlog.write_text(yaml.safe_dump({**VALID, "workload": str(back)}))
    p = cli("sweep", str(backlog), "--dry-run")
    assert p.returncode == 2 and "backlog runs are bench runs" in p.stderr, p.stderr
