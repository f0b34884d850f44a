"""`kafkatune compare`: spec validation, the trimmed median, and short comparisons against every real server."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.fixed_rate import _measured
from compare.harness import trimmed_median
from compare.spec import Sizes
from core.typed import from_json, to_json
from records.comparison import FixedRateRow
from records.result import Latency, RunSummary
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.conftest import ensure_healthy
from tests.helpers import cli, kafkatune


def _spec(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_sizes_are_powers_of_two_from_8_bytes_to_1_mib() -> None:
    v = Sizes().values()
    assert v[0] == 8 and v[-1] == 1024 * 1024 and len(v) == 18
    assert all(b == 2 * a for a, b in itertools.pairwise(v))
    assert Sizes(min=10, max=100).values() == [10, 16, 32, 64, 100]


def test_trimmed_median_drops_samples_beyond_the_percentiles() -> None:
    samples = [100.0] * 98 + [1.0, 1_000_000.0]
    med, kept, p25, p75 = trimmed_median(samples, 1, 99)
    assert med == 100.0 and kept == 98 and p25 == p75 == 100.0
    assert trimmed_median(samples, 0, 100)[1] == 100
    assert trimmed_median([], 1, 99)[1] == 0


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({}, r"systems: Field required"),
        ({"systems": []}, r"systems: List should have at least 1 item"),
        ({"systems": [{"name": "a", "driver": "nosuch"}]}, r"systems\.0\.driver: unknown driver 'nosuch'"),
        ({"systems": [{"name": "a b", "driver": "mqtt"}]}, r"systems\.0\.name"),
        ({"systems": [{"name": "a", "driver": "mqtt"}] * 2}, r"system names must be unique \(repeated: a\)"),
        ({"systems": [{"name": "tcp", "driver": "mqtt"}]}, r"'tcp' is the name of the baseline"),
        ({"systems": [{"name": "a", "driver": "mqtt", "server": "x"}]}, r"systems\.0\.server"),
        ({"systems": [{"name": "a", "driver": "mqtt"}], "throughput": {"sizes": {"min": 4}}}, r"throughput\.sizes"),
        ({"systems": [{"name": "a", "driver": "mqtt"}], "throughput": {"repeats": 0}}, r"throughput\.repeats"),
        ({"systems": [{"name": "a", "driver": "mqtt"}], "pingpong": {"sizes": 3}}, r"pingpong\.sizes: unknown field"),
        (  # a key the client does not have: caught by the driver before any server starts
            {"systems": [{"name": "k", "driver": "kafka", "producerConfig": {"max.request.size": 2097152}}]},
            r"systems\.k \(kafka\): producerConfig: .*max\.request\.size",
        ),
        (
            {
                "systems": [{"name": "a", "driver": "mqtt"}],
                "iot": {"sporadic": {"burstStartSeconds": 9, "seconds": 10}},
            },
            r"iot\.sporadic: burstStartSeconds \+ burstSeconds must end within seconds",
        ),
    ],
)
def test_bad_specs_name_the_field_and_start_nothing(tmp_path: Path, doc: dict[str, Any], needle: str) -> None:
    r = cli("compare", str(_spec(tmp_path / "s.yaml", doc)), "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2, r.stderr
    assert re.search(needle, r.stderr), r.stderr
    assert not (tmp_path / "runs").exists()


def test_dry_run_prints_the_plan(tmp_path: Path) -> None:
    doc = {"name": "plan", "systems": [{"name": "m", "driver": "mqtt"}], "throughput": {"repeats": 2}}
    r = cli("compare", str(_spec(tmp_path / "s.yaml", doc)), "--dry-run", "--runs-dir", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    assert "m, tcp" in r.stderr and "8, 16, 32" in r.stderr and "1048576 B" in r.stderr
    # 18 sizes x 2 repeats x 2 systems + 3 ping-pong repeats x 2 systems
    assert "78 runs" in r.stderr
    assert not (tmp_path / "r").exists()


def test_system_option_plans_only_those_systems_and_refuses_unknown_names(tmp_path: Path) -> None:
    doc = {
        "name": "plan-only",
        "systems": [{"name": "k", "driver": "kafka"}, {"name": "m", "driver": "mqtt"}],
        "throughput": None,
        "pingpong": None,
        "native": None,
        "fixedRate": {"size": 100, "rate": 500, "partitions": [1, 6, 16]},
    }
    spec, runs = str(_spec(tmp_path / "s.yaml", doc)), str(tmp_path / "r")
    r = cli("compare", spec, "--system", "m", "--dry-run", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    assert "compare plan-only: m; fixedRate; 1 runs" in r.stderr  # not k's 3 partition counts, nor tcp's
    r = cli("compare", spec, "--system", "nosuch", "--dry-run", "--runs-dir", runs)
    assert r.returncode == 2 and "--system: nosuch not in the spec (systems: k, m, tcp)" in r.stderr, r.stderr
    assert not (tmp_path / "r").exists()


def _run_compare(tmp_path: Path, doc: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    spec = _spec(tmp_path / "compare.yaml", doc)
    env = {"KAFKATUNE_HOME": str(tmp_path / "home")}
    r = kafkatune("compare", str(spec), "--runs-dir", str(tmp_path / "runs"), "--json", env=env, timeout=1500)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout), tmp_path / "runs" / doc["name"]


SIZES = [8, 1048576]  # the smallest (no latency header) and the largest (Kafka's defaults refuse it)


@pytest.fixture(scope="module")
def every_system(
    testbed: Testbed,
    servers: tuple[object, dict[str, str]],
    pulsar: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], Path, list[str]]:
    """One short comparison over every system and both message sizes: its output, its run folder and the names."""
    boot = ensure_healthy(testbed).bootstrap_servers
    systems = [
        # Kafka's defaults cannot carry 1 MiB (max.request.size = 1 MiB counts the record overhead too);
        # both Kafka clients report it
        {
            "name": "kafka",
            "driver": "kafka",
            "common": {"bootstrap.servers": boot},
            "producerConfig": {"acks": "all", "linger.ms": 1},
            "pingpongProducerConfig": {"linger.ms": 0},
        },
        {
            "name": "kafka-python",
            "driver": "kafka-python",
            "common": {"bootstrap.servers": boot},
            "producerConfig": {"acks": "all"},
        },
        {
            "name": "mqtt-qos1",
            "driver": "mqtt",
            "common": {"bootstrap.servers": servers[1]["mosquitto"]},
            # the client's queue bounded as Kafka's buffer.memory bounds its: at its default (100,000 messages) the
            # 8-B run queued 66,000 in its 2 s and drained them for 13 s at the broker's QoS 1 rate
            "producerConfig": {"qos": 1, "max.queued": 5000},
            "consumerConfig": {"qos": 1},
        },
        {
            "name": "zenoh-block",
            "driver": "zenoh",
            "common": {"bootstrap.servers": servers[1]["zenoh"], "zenoh.mode": "client"},
            "producerConfig": {"congestion_control": "BLOCK"},
        },
        {
            "name": "dds-reliable",
            "driver": "dds",
            "common": {"dds.domain": 150 + os.getpid() % 50},
            "producerConfig": {"reliability": "RELIABLE", "history": "KEEP_ALL"},
            "consumerConfig": {"reliability": "RELIABLE", "history": "KEEP_ALL"},
        },
        {"name": "pulsar", "driver": "pulsar", "common": pulsar, "pingpongProducerConfig": {"batching": "false"}},
    ]
    doc = {
        "name": "all-systems",
        "systems": systems,
        "throughput": {"sizes": SIZES, "repeats": 1, "seconds": 1, "warmupSeconds": 1, "drainTimeoutSeconds": 20},
        "pingpong": {"messages": 50, "warmupMessages": 5, "repeats": 1},
        "native": {"seconds": 1},
    }
    out, d = _run_compare(tmp_path_factory.mktemp("every"), doc)
    return out, d, [s["name"] for s in systems] + ["tcp"]


def test_short_compare_over_every_system(every_system: tuple[dict[str, Any], Path, list[str]]) -> None:
    """Every system at both sizes has a row: a figure with nothing lost, or the client's error (never dropped)."""
    out, d, names = every_system
    rows = {(r["system"], r["size"]): r for r in out["throughput"]}
    assert set(rows) == {(n, s) for n in names for s in SIZES}  # nothing dropped
    for client in ("kafka", "kafka-python"):  # reported with the client's error, not dropped
        big = rows[(client, 1048576)]
        assert big["error"] and re.search(r"too ?large|larger than", big["error"], re.I), big
    for (name, size), r in rows.items():
        if name.startswith("kafka") and size == 1048576:
            continue
        assert r["error"] is None, r
        assert r["msg_s"] > 0 and r["bit_s"] == pytest.approx(r["msg_s"] * size * 8)
        assert r["lost"] == 0, r
        rec = json.loads((d / name / "throughput" / f"{size}B-r0" / "result.json").read_text())
        assert rec["summary"]["consumed"] > 0 and rec["messageSize"] == size
        assert rec["summary"]["latency_measured"] is (size >= 16)


def test_every_system_pings_and_the_native_floor_is_measured(
    every_system: tuple[dict[str, Any], Path, list[str]],
) -> None:
    out, _, names = every_system
    pp = {r["system"]: r for r in out["pingpong"]}
    assert set(pp) == set(names)
    for r in pp.values():
        assert r["error"] is None and r["round_trips"] == 50, r
        assert 0 < r["p50_us"] <= r["p99_us"] <= r["max_us"]
    assert out["native"]["iperf3"]["bit_s"] > 1e8, out["native"]
    assert out["native"]["sockperf"]["p50_us"] > 0, out["native"]


def test_the_comparisons_report_has_its_charts_and_tables(every_system: tuple[dict[str, Any], Path, list[str]]) -> None:
    out, _, names = every_system
    assert {"throughput-msgs", "throughput-bits", "pingpong"} <= set(out["charts"])
    html = Path(out["html"]).read_text()
    for key in ("throughput-msgs", "throughput-bits", "pingpong"):
        assert re.search(rf'id="chart-{key}"[^>]*><svg', html)
    assert "<script" not in html
    md = Path(out["markdown"]).read_text()
    assert "## Throughput (back-to-back)" in md and "## Ping-pong latency (RTT/2)" in md
    table = md.split("## Throughput (back-to-back)")[1].split("##")[0]
    assert "| 8B |" in table and "| 1MB |" in table and "error:" in table
    assert all(f"{n} msg/s" in table for n in names)
    assert "iperf3 TCP stream" in md and "harness over raw TCP" in md


def test_fixed_rate_and_iot_patterns(
    tmp_path: Path, healthy: TestbedState, servers: tuple[object, dict[str, str]]
) -> None:
    doc = {
        "name": "omb-iot",
        "systems": [
            {
                "name": "kafka",
                "driver": "kafka",
                "common": {"bootstrap.servers": healthy.bootstrap_servers},
                "producerConfig": {"acks": "all", "linger.ms": 1},
            },
            {
                "name": "mqtt-qos1",
                "driver": "mqtt",
                "common": {"bootstrap.servers": servers[1]["mosquitto"]},
                "producerConfig": {"qos": 1},
                "consumerConfig": {"qos": 1},
            },
        ],
        "baseline": False,
        "throughput": None,
        "pingpong": None,
        "native": None,
        "fixedRate": {"size": 100, "rate": 500, "partitions": [1, 6], "seconds": 2, "warmupSeconds": 1},
        "iot": {
            "periodic": {"rates": [20, 200], "seconds": 2, "warmupSeconds": 1},
            "sporadic": {
                "periodicRate": 50,
                "burstSize": 16384,
                "burstRate": 500,
                "burstStartSeconds": 2,
                "burstSeconds": 2,
                "seconds": 6,
            },
        },
    }
    out, d = _run_compare(tmp_path, doc)
    fixed = [(r["system"], r["partitions"]) for r in out["fixed_rate"]]
    assert fixed == [("kafka", 1), ("kafka", 6), ("mqtt-qos1", None)]  # MQTT has no partitions
    for r in out["fixed_rate"]:
        assert r["error"] is None and r["lost"] == 0 and r["publish_msg_s"] > 0, r
        # `sustained` is measured, not assumed: the row says whether the system kept the rate
        assert r["sustained"] is (r["publish_msg_s"] >= 0.95 * 500)
        assert 0 < r["e2e_p50_ms"] <= r["e2e_p99_ms"] <= r["e2e_p99.9_ms"] <= r["e2e_max_ms"]
    assert (d / "kafka" / "fixed-rate" / "p6" / "result.json").exists()
    per = {(r["system"], r["rate"]): r for r in out["iot_periodic"]}
    assert set(per) == {(s, r) for s in ("kafka", "mqtt-qos1") for r in (20, 200)}
    for (_s, rate), r in per.items():
        assert r["error"] is None and r["delivered_msg_s"] == pytest.approx(rate, rel=0.2)
        assert 0 < r["e2e_p50_ms"] <= r["e2e_p90_ms"]
    for r in out["iot_sporadic"]:
        assert r["error"] is None, r
        assert r["periodic_p90_before_ms"] > 0 and r["periodic_p90_during_ms"] > 0
        assert 0 < r["burst_msg_s"] <= 500 * 1.05 and r["periodic_lost"] == r["burst_lost"] == 0
    assert {"fixed-rate", "iot-periodic", "iot-sporadic"} <= set(out["charts"])
    md = Path(out["markdown"]).read_text()
    assert (
        "## Fixed rate (OpenMessaging Benchmark method)" in md and "| kafka | 6 |" in md and "| mqtt-qos1 | n/a |" in md
    )


def test_system_option_needs_only_that_systems_server(tmp_path: Path) -> None:
    """`--system dds` runs with no testbed and no Pulsar: the systems left out are not resolved or started."""
    doc = {
        "name": "only-dds",
        "systems": [
            {"name": "kafka", "driver": "kafka"},  # the testbed, which is not running under this --state-dir
            {"name": "pulsar", "driver": "pulsar"},
            {"name": "dds", "driver": "dds", "common": {"dds.domain": 100 + os.getpid() % 50}},
        ],
        "baseline": False,
        "throughput": {"sizes": [64], "repeats": 1, "seconds": 1, "warmupSeconds": 1},
        "pingpong": None,
        "native": None,
    }
    spec = _spec(tmp_path / "s.yaml", doc)
    env = {"KAFKATUNE_HOME": str(tmp_path / "home")}
    runs, state = str(tmp_path / "runs"), str(tmp_path / "no-testbed")
    r = kafkatune("compare", str(spec), "--system", "dds", "--state-dir", state, "--runs-dir", runs, "--json", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert [s["name"] for s in out["systems"]] == ["dds"]
    assert [(t["system"], t["error"], t["lost"]) for t in out["throughput"]] == [("dds", None, 0)]
    assert not (tmp_path / "home" / "servers" / "pulsar").exists()


def test_a_fixed_rate_row_keeps_each_measured_percentile_under_its_json_name() -> None:
    """compare.fixed_rate's row from a run's summary: rates, whether the rate was sustained (95 % of it published),
    and each percentile of both latencies; one the run did not measure is None, never a number."""
    pub = from_json(Latency, {"p50": 1.0, "p75": 2.0, "p95": 3.0, "p99": 4.0, "p99.9": 5.0, "max": 6.0, "count": 10})
    s = RunSummary(publish_msg_s=950.0, consume_msg_s=949.0, lost=0, publish_latency_ms=pub)
    row = _measured(FixedRateRow(system="k", size=1024, target_msg_s=1000, partitions=6), s, 1000)
    doc = to_json(row)
    assert row.sustained and doc["publish_p99.9_ms"] == 5.0 and doc["publish_p75_ms"] == 2.0
    assert doc["e2e_p99_ms"] is None and doc["partitions"] == 6 and doc["consume_msg_s"] == 949.0
    assert not _measured(row, RunSummary(publish_msg_s=949.0), 1000).sustained
