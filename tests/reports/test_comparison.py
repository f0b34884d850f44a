"""The comparison report (reports.comparison) from a real comparison recorded once (tests/fixtures/recorded/
comparison): every table and chart from comparison.json's typed rows, an error row kept with its error."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from records.comparison import read_comparison
from reports import comparison
from tests.helpers import FIXTURES

RECORDED = FIXTURES / "recorded" / "comparison"


def test_the_recorded_comparison_reads_typed_with_every_table() -> None:
    doc = read_comparison(RECORDED)
    assert doc.names == ["kafka", "tcp"] and doc.finished is not None
    assert {(r.system, r.size) for r in doc.throughput} == {(s, b) for s in doc.names for b in (64, 65536, 1048576)}
    big = next(r for r in doc.throughput if (r.system, r.size) == ("kafka", 1048576))
    assert big.error and big.msg_s is None  # Kafka's defaults cannot carry 1 MiB: its row says why
    assert all(r.p50_us and r.p999_us and r.p50_us <= r.p999_us for r in doc.pingpong)
    assert doc.native.iperf3 and doc.native.iperf3.bit_s and doc.native.sockperf and doc.native.sockperf.p50_us
    assert [(r.system, r.partitions) for r in doc.fixed_rate] == [("kafka", 1), ("kafka", 6), ("tcp", None)]
    assert all(r.e2e_p999_ms for r in doc.fixed_rate)
    assert [(r.system, r.rate) for r in doc.iot_periodic] == [(s, rate) for s in doc.names for rate in (10, 100)]
    assert [r.system for r in doc.iot_sporadic] == doc.names
    assert all(r.periodic_p90_before_ms is not None and len(r.burst_window_s or ()) == 2 for r in doc.iot_sporadic)


def test_the_report_has_every_table_and_chart(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    rep = comparison.build(run)
    assert set(rep.charts) == {
        "throughput-msgs",
        "throughput-bits",
        "pingpong",
        "fixed-rate",
        "iot-periodic",
        "iot-sporadic",
    }
    md = rep.markdown.read_text()
    for title in (
        "Floors and harness ceiling",
        "Throughput (back-to-back)",
        "Ping-pong latency (RTT/2)",
        "Fixed rate (OpenMessaging Benchmark method)",
        "IoT patterns",
    ):
        assert f"## {title}" in md, title
    assert "iperf3 TCP stream on 127.0.0.1: **" in md and "harness over raw TCP" in md and "× tcp)" in md
    assert re.search(r"\| 1MB \| error: ", md) and "Sizes a system could not carry" in md
    # the method as the spec ran it (records.comparison.ThroughputMethod)
    assert "every measured second of 1 repeats (2.0 s each), after trimming samples beyond p1/p99" in md
    assert "| sockperf (native TCP) | — |" in md
    fixed = md.split("## Fixed rate")[1].split("##")[0]
    assert "| kafka | 1 |" in fixed and "| kafka | 6 |" in fixed and " / " in fixed
    html = rep.html.read_text()
    assert all(re.search(rf'id="chart-{key}"[^>]*><svg', html) for key in rep.charts)
