"""records.result: a run's result.json read typed; a record whose writer put null where it had nothing (a run with
no broker metrics, an older record) still makes a trials-table row."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields
from pathlib import Path

from core.typed import from_json, to_json
from drivers.api import CLIENT_STATS
from kafkatune.render import latency_line
from records import result
from records.run import read_result
from records.study import open_study, trial_row
from tests.helpers import FIXTURES

RUN = FIXTURES / "recorded" / "diagnosis" / "inflight-one"


def test_a_recorded_result_reads_typed_with_its_figures() -> None:
    raw = json.loads((RUN / "result.json").read_text())
    r = read_result(RUN)
    assert r.summary.consume_mb_s == raw["summary"]["consume_mb_s"] and r.message_bytes == raw["messageSize"]
    assert r.producers == raw["producersPerTopic"] and r.partitions == raw["partitions"]
    assert r.sustainable is not None and r.sustainable.mb_s == raw["sustainable"]["mb_s"]
    assert len(r.sustainable.steps) == len(raw["sustainable"]["steps"])
    assert r.e2e_p99_ms == raw["aggregatedEndToEndLatency99pct"]
    assert to_json(r.summary.broker_rates) == raw["summary"]["broker_rates"]
    assert r.summary.client.buffer_full_events == raw["summary"]["client"]["buffer_full_events"]
    e2e = raw["summary"]["end_to_end_latency_ms"]
    assert r.summary.end_to_end_latency_ms.p999 == e2e["p99.9"] == r.summary.end_to_end_latency_ms.at("p99.9")
    assert r.summary.end_to_end_latency_ms.count == e2e["count"] and r.summary.window_s == raw["summary"]["window_s"]


def test_the_producers_statistics_are_read_typed_each_client_statistic_a_field() -> None:
    raw = json.loads((RUN / "result.json").read_text())["summary"]["client"]["producer_stats"]
    got = read_result(RUN).summary.client.producer_stats
    assert {f.name for f in fields(result.ProducerStats)} == set(CLIENT_STATS)
    assert raw and all(getattr(got, k) == v for k, v in raw.items())


def test_a_latency_that_measured_nothing_has_no_figure_and_says_why() -> None:
    empty = from_json(result.Latency, {"count": 0, "p99": None, "p99.9": None, "missing": "nothing was acknowledged"})
    assert empty.p99 is None and empty.at("p99.9") is None and empty.missing == "nothing was acknowledged"
    assert empty.at("count") is None and empty.at("missing") is None  # not figures in ms
    assert latency_line("e2e", empty) == "e2e not measured: nothing was acknowledged"


def test_nulls_where_a_writer_had_nothing_still_make_a_row(tmp_path: Path) -> None:
    run = Path(shutil.copytree(RUN, tmp_path / "run", ignore=shutil.ignore_patterns("analysis")))
    doc = json.loads((run / "result.json").read_text())
    doc["summary"]["broker_rates"] = None  # a run without broker metrics (an inventory without exporters)
    doc["summary"]["client"]["loop_cpu_util"] = None
    doc["profile"] = None
    doc.pop("links", None)
    (run / "result.json").write_text(json.dumps(doc))
    row = trial_row(open_study(run), run)
    assert row.produce_mb_s is None and row.client_loop_cpu_max is None
    assert row.mb_s == doc["sustainable"]["mb_s"] and row.link_retrans == {}


def test_a_scaled_out_bench_reads_its_runs_typed() -> None:
    doc = {
        "scaled_out": {
            "from_producers": 1,
            "to_producers": 2,
            "cap": 2,
            "why": "producer 0's send loop used 97% of a core: the load generator, not the cluster, was the limit",
            "steps": [
                {"producers": 1, "publish_mb_s": 40.1, "loop_cpu_util": [0.97], "buffer_full_events": 0, "why": "…"},
                {"producers": 2, "publish_mb_s": 61.0, "loop_cpu_util": [0.6, 0.58], "buffer_full_events": 812},
            ],
        }
    }
    s = result.RunResult.from_json(doc).scaled_out
    assert s is not None and (s.from_producers, s.to_producers) == (1, 2)
    assert [st.loop_cpu_util for st in s.steps] == [(0.97,), (0.6, 0.58)] and s.steps[1].why == ""
    assert to_json(s) == {
        **doc["scaled_out"],
        "steps": [doc["scaled_out"]["steps"][0], {**doc["scaled_out"]["steps"][1], "why": ""}],
    }
