"""What `kafkatune bench` prints for a person, from recorded runs read as typed records (records.result)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatune import render
from records.result import RunResult
from tests.helpers import FIXTURES

RECORDED = FIXTURES / "recorded"


def _result(run: str) -> RunResult:
    return RunResult.from_json(json.loads((RECORDED / run / "result.json").read_text()))


def test_a_search_prints_each_step_and_the_rate_it_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = _result("diagnosis/small-batches-search")
    assert res.sustainable is not None
    render.sustainable(res.sustainable, res.summary, tmp_path)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "probe (max rate): 328 msg/s, 0.34 MB/s"
    assert lines[1].startswith("search, SLO p99 end-to-end ≤ 100 ms (bracket, bisect, confirm;")
    steps = [x for x in lines if x.endswith("held") or "missed: " in x]
    assert len(steps) == len(res.sustainable.steps) == 5, lines
    assert "SUSTAINABLE RATE: 217 msg/s, 0.22 MB/s delivered (held twice; 229 msg/s missed (6% higher);" in "\n".join(
        lines
    )
    assert "search run: acknowledged 34,233  consumed 34,233  lost 0  duplicated 0  publish errors 0" in lines


def test_a_run_prints_its_rates_counts_and_where_its_record_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    res = _result("after-overload")
    render.bench_summary(res.summary, tmp_path)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "publish         2,413 msg/s      2.47 MB/s 0.020 Gbit/s"
    assert lines[1] == "consume         2,413 msg/s      2.47 MB/s"
    assert "acknowledged 367,102  consumed 367,102  lost 0  duplicated 0  publish errors 0" in lines
    assert "brokers: produce 5.93 MB/s  replicate 11.86 MB/s  consume 5.94 MB/s" in lines  # records.result.BrokerRates
    assert lines[-1] == f"results: {tmp_path}/result.json"
