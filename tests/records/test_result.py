"""records.result: a run's result.json read typed; a record whose writer put null where it had nothing (a run with
no broker metrics, an older record) still makes a trials-table row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from records import result
from records.study import open_study, trial_row
from tests.helpers import FIXTURES

RUN = FIXTURES / "recorded" / "diagnosis" / "inflight-one"


def test_a_recorded_result_reads_typed_with_its_figures() -> None:
    raw = json.loads((RUN / "result.json").read_text())
    r = result.read(RUN)
    assert r.summary.consume_mb_s == raw["summary"]["consume_mb_s"] and r.message_bytes == raw["messageSize"]
    assert r.producers == raw["producersPerTopic"] and r.partitions == raw["partitions"]
    assert r.sustainable is not None and r.sustainable.mb_s == raw["sustainable"]["mb_s"]
    assert len(r.sustainable.steps) == len(raw["sustainable"]["steps"])
    assert r.e2e_p99_ms == raw["aggregatedEndToEndLatency99pct"]
    assert dict(r.summary.broker_rates) == raw["summary"]["broker_rates"]
    assert r.summary.client.buffer_full_events == raw["summary"]["client"]["buffer_full_events"]


def test_nulls_where_a_writer_had_nothing_still_make_a_row(tmp_path: Path) -> None:
    run = Path(shutil.copytree(RUN, tmp_path / "run", ignore=shutil.ignore_patterns("analysis")))
    doc = json.loads((run / "result.json").read_text())
    doc["summary"]["broker_rates"] = None  # a run without broker metrics (an inventory without exporters)
    doc["summary"]["client"]["loop_cpu_util"] = None
    doc["profile"] = None
    doc.pop("links", None)
    (run / "result.json").write_text(json.dumps(doc))
    row = trial_row(open_study(run), run)
    assert row["record_produce_mb_s"] is None and row["client_loop_cpu_max"] is None
    assert row["mb_s"] == doc["sustainable"]["mb_s"] and row["link_retrans"] == {}
