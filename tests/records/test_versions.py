"""Every record kafkatune reads is read at the schema versions this release knows, and refused with a message that
names the file and the versions when a newer release wrote it (its fields may mean what this one does not know)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.errors import UserError
from records.profile import read_profile
from records.result import FaultEvent, Step
from records.run import read_result
from records.summary import read_summary
from records.trial import read_trial
from tests.helpers import FIXTURES, cli, trial_doc


def test_a_record_of_a_newer_schema_version_is_refused_by_name(tmp_path: Path) -> None:
    for name, doc, read in (
        ("summary.json", {"study": "s"}, lambda: read_summary(tmp_path)),
        ("trial.json", trial_doc(), lambda: read_trial(tmp_path)),
        ("result.json", {"study": "s"}, lambda: read_result(tmp_path)),
        ("profile.json", {"study": "s"}, lambda: read_profile(tmp_path / "profile.json")),
    ):
        (tmp_path / name).write_text(json.dumps({**doc, "schema_version": 1}))
        assert read().schema_version == 1  # every reader gives its typed record, which carries its version
        (tmp_path / name).write_text(json.dumps(doc))  # before versions: the first version's
        assert read() is not None
        (tmp_path / name).write_text(json.dumps({**doc, "schema_version": 7}))
        with pytest.raises(UserError) as e:
            read()
        assert f"{name}: schema_version 7 was written by a newer kafkatune (this one reads versions 1 to 1)" in str(
            e.value
        )


def test_a_trial_s_planned_faults_read_typed_and_are_written_as_read(tmp_path: Path) -> None:
    ev = {"fault": "kill leader at 20s", "kind": "kill", "target": "broker 2", "brokers": [2], "planned_s": 20.0}
    ev |= {"issued_s": 20.1, "effect_s": 20.4, "restored_s": 35.0, "healthy_s": 41.3, "recovery_s": 20.9, "error": None}
    (tmp_path / "trial.json").write_text(json.dumps(trial_doc(stage="robust", number=1, faults=[ev])))
    rec = read_trial(tmp_path)
    assert rec is not None and rec.faults == (FaultEvent(**ev),) and rec.as_json()["faults"] == [ev]


def test_a_trial_record_reads_typed_keeps_what_it_knows_and_names_what_it_lacks(tmp_path: Path) -> None:
    """read_trial gives the typed record: a key an older release wrote and this one does not know is left out; a
    document without the fields every trial record has is refused, naming the file and the fields."""
    steps = [{"rate_msg_s": 900.0, "start_s": 3, "judged_s": [3, 4], "held": True}]
    doc = trial_doc(stage="producer", number=3, measured={"sustainable": {"steps": steps}}, ramp_s=4.0)
    (tmp_path / "trial.json").write_text(json.dumps(doc))
    rec = read_trial(tmp_path)
    assert rec is not None and (rec.stage, rec.number, rec.complete) == ("producer", 3, True)
    assert rec.steps == [Step(900.0, 3, [3, 4], held=True)] and rec.figures.hold is None and rec.aside == []
    assert "ramp_s" not in rec.as_json() and rec.as_json()["measured"] == doc["measured"]
    (tmp_path / "trial.json").write_text(json.dumps({"study": "s", "stage": "x"}))
    with pytest.raises(UserError) as e:
        read_trial(tmp_path)
    lacks = "number, started_ns, config, applied, state, total_s"
    assert f"trial.json: not a trial record, it lacks {lacks}" in str(e.value)


def test_the_cli_refuses_a_newer_study_and_says_why(tmp_path: Path) -> None:
    study = tmp_path / "study"
    shutil.copytree(FIXTURES / "study-demo", study)
    summary = json.loads((study / "summary.json").read_text())
    (study / "summary.json").write_text(json.dumps({**summary, "schema_version": 2}))
    p = cli("study", "show", str(study))
    assert p.returncode == 2 and "schema_version 2 was written by a newer kafkatune" in p.stderr, p.stderr


def _subset(written: Any, read: Any, where: str = "") -> list[str]:
    """Where `read` (a typed record's JSON) differs from `written` on what `written` has: what the record lost."""
    if isinstance(written, dict) and isinstance(read, dict):
        return [x for k, v in written.items() for x in _subset(v, read.get(k, "<missing>"), f"{where}.{k}")]
    if isinstance(written, list) and isinstance(read, list) and len(written) == len(read):
        return [x for i, (v, r) in enumerate(zip(written, read, strict=True)) for x in _subset(v, r, f"{where}[{i}]")]
    return [] if written == read else [f"{where}: {written!r} read as {read!r}"]


def test_a_summary_reads_typed_and_keeps_everything_the_current_sweep_writes(tmp_path: Path) -> None:
    """read_summary gives the typed Summary: a recorded sweep's summary.json (this schema) reads back to the same
    document, nested confirmation, operating point and intervals included; an older study's reads with what it
    has, its single-run ratio to the defaults as an interval without bounds; a summary without its study's name is
    refused naming the field."""
    recorded = FIXTURES / "recorded" / "shaped-tuned"
    s = read_summary(recorded)
    assert s is not None and s.confirmation is not None and s.operating_point is not None
    assert _subset(json.loads((recorded / "summary.json").read_text()), s.to_json()) == []
    assert s.confirmation.headline() == s.confirmation.arm(None) and s.best is not None
    assert s.operating_point.fit is not None and s.operating_point.tries[0].trial_id == "hold-000"
    old = read_summary(FIXTURES / "study-demo")
    assert old is not None and old.best_vs_defaults is not None and old.confirmation is None
    assert (old.best_vs_defaults.low, old.best_vs_defaults.n) == (None, 2) and old.best_vs_defaults.estimate > 1
    assert old.best is not None and old.best.source == "confirmation" and old.best.config
    (tmp_path / "summary.json").write_text(json.dumps({"objective": "sustainable_mb_s"}))
    with pytest.raises(UserError, match=r"summary.json: lacks study"):
        read_summary(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"study": "s", "confirmation": {"candidates": [[]]}}))
    with pytest.raises(UserError, match=r"confirmation.candidates\[0\]: expected an object, found list"):
        read_summary(tmp_path)
