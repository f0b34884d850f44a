"""sweeps.attrs: what the engine writes on an Optuna trial is what every phase reads back, through the study's
storage (a resumed sweep or a second worker reads it from there)."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from sweeps import attrs, storage
from sweeps.attrs import TrialAttrs


def _study(tmp_path: Path) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", study_name="s", direction="maximize")


def test_a_completed_trials_attributes_read_back_typed(tmp_path: Path) -> None:
    st = _study(tmp_path)
    trial = st.ask()
    assert storage.claim(st, trial, "confirm:defaults@0")
    attrs.started(trial, "host:1", {"batch.size": 65536, "acks": "all"}, tmp_path / "trials" / "confirm-003")
    running = TrialAttrs.of(trial)
    assert running.owner == "host:1" and running.restarts == 0 and running.windows_mb_s is None
    attrs.finished(
        trial,
        restarts=1,
        probe_msg_s=9000.0,
        rate_msg_s=7000.0,
        no_rate_held=None,
        windows_mb_s=[7.1, 7.3],
        violations=[],
        fail_reason=None,
    )
    st.tell(trial, 7.2)
    (t,) = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'o.db'}").get_trials()
    a = TrialAttrs.of(t)
    assert a.config == {"batch.size": 65536, "acks": "all"} and a.trial_id == "confirm-003"
    assert a.key == "confirm:defaults@0" and a.label == "confirm:defaults"
    assert (a.restarts, a.probe_msg_s, a.rate_msg_s, a.windows_mb_s) == (1, 9000.0, 7000.0, (7.1, 7.3))
    assert a.violations == () and a.fail_reason is None and a.no_rate_held is None
    assert not a.interrupted and not a.released


def test_a_failed_and_an_interrupted_trial_say_so_and_only_the_failed_one_counts(tmp_path: Path) -> None:
    st = _study(tmp_path)
    failed, stopped = st.ask(), st.ask()
    attrs.finished(
        failed,
        restarts=0,
        probe_msg_s=None,
        rate_msg_s=None,
        no_rate_held="no step held",
        windows_mb_s=None,
        violations=None,
        fail_reason="the cluster broke",
    )
    st.tell(failed, state=TrialState.FAIL)
    attrs.mark(stopped, attrs.INTERRUPTED)
    st.tell(stopped, state=TrialState.FAIL)
    a, b = (TrialAttrs.of(t) for t in st.get_trials())
    assert a.fail_reason == "the cluster broke" and a.no_rate_held == "no step held" and a.rate_msg_s is None
    assert b.interrupted and b.fail_reason is None and b.key is None and b.label is None
    assert [t.number for t in storage.counted(st)] == [failed.number]
