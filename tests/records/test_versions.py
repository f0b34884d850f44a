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
from records.run import read_result
from records.summary import read_summary
from records.trial import TrialRecord, read_trial
from tests.helpers import FIXTURES, kafkatune, trial_doc


def test_a_record_of_a_newer_schema_version_is_refused_by_name(tmp_path: Path) -> None:
    for name, doc, read in (
        ("summary.json", {"study": "s"}, lambda: read_summary(tmp_path)),
        ("trial.json", trial_doc(), lambda: read_trial(tmp_path)),
        ("result.json", {"study": "s"}, lambda: read_result(tmp_path)),
        ("profile.json", {"study": "s"}, lambda: read_profile(tmp_path / "profile.json")),
    ):
        (tmp_path / name).write_text(json.dumps({**doc, "schema_version": 1}))
        assert version(read()) == 1
        (tmp_path / name).write_text(json.dumps(doc))  # before versions: the first version's
        assert read() is not None
        (tmp_path / name).write_text(json.dumps({**doc, "schema_version": 7}))
        with pytest.raises(UserError) as e:
            read()
        assert f"{name}: schema_version 7 was written by a newer kafkatune (this one reads versions 1 to 1)" in str(
            e.value
        )


def version(rec: Any) -> int:
    return int(rec.schema_version if isinstance(rec, TrialRecord) else rec["schema_version"])


def test_a_trial_record_reads_typed_keeps_what_it_knows_and_names_what_it_lacks(tmp_path: Path) -> None:
    """read_trial gives the typed record: a key an older release wrote and this one does not know is left out; a
    document without the fields every trial record has is refused, naming the file and the fields."""
    steps = [{"rate_msg_s": 900.0, "held": True}]
    doc = trial_doc(stage="producer", number=3, measured={"sustainable": {"steps": steps}}, ramp_s=4.0)
    (tmp_path / "trial.json").write_text(json.dumps(doc))
    rec = read_trial(tmp_path)
    assert rec is not None and (rec.stage, rec.number, rec.complete) == ("producer", 3, True)
    assert rec.steps == steps and rec.hold == {} and rec.aside == []
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
    p = kafkatune("study", "show", str(study))
    assert p.returncode == 2 and "schema_version 2 was written by a newer kafkatune" in p.stderr, p.stderr
