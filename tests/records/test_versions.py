"""Every record kafkatune reads is read at the schema versions this release knows, and refused with a message that
names the file and the versions when a newer release wrote it (its fields may mean what this one does not know)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.errors import UserError
from records.profile import read_profile
from records.run import read_result
from records.summary import read_summary
from records.trial import read_trial
from tests.helpers import FIXTURES, kafkatune


def test_a_record_of_a_newer_schema_version_is_refused_by_name(tmp_path: Path) -> None:
    for name, read in (
        ("summary.json", lambda: read_summary(tmp_path)),
        ("trial.json", lambda: read_trial(tmp_path)),
        ("result.json", lambda: read_result(tmp_path)),
        ("profile.json", lambda: read_profile(tmp_path / "profile.json")),
    ):
        (tmp_path / name).write_text(json.dumps({"schema_version": 1, "study": "s"}))
        assert read()["schema_version"] == 1  # type: ignore[index]
        (tmp_path / name).write_text(json.dumps({"study": "s"}))  # before versions: the first version's
        assert read() is not None
        (tmp_path / name).write_text(json.dumps({"schema_version": 7, "study": "s"}))
        with pytest.raises(UserError) as e:
            read()
        assert f"{name}: schema_version 7 was written by a newer kafkatune (this one reads versions 1 to 1)" in str(
            e.value
        )


def test_the_cli_refuses_a_newer_study_and_says_why(tmp_path: Path) -> None:
    study = tmp_path / "study"
    shutil.copytree(FIXTURES / "study-demo", study)
    summary = json.loads((study / "summary.json").read_text())
    (study / "summary.json").write_text(json.dumps({**summary, "schema_version": 2}))
    p = kafkatune("study", "show", str(study))
    assert p.returncode == 2 and "schema_version 2 was written by a newer kafkatune" in p.stderr, p.stderr
