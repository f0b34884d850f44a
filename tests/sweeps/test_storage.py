"""Study bookkeeping without a cluster: interrupted trials, claims by key, what counts against the budget."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from optuna.trial import TrialState

from sweeps import storage


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_interrupted_trials_of_dead_local_workers_are_failed_and_returned(tmp_path: Path) -> None:
    st = storage.study(storage.open_storage(None, tmp_path), "s.a", ["maximize"])
    done = st.ask({"x": __import__("optuna").distributions.IntDistribution(1, 9)})
    done.set_user_attr("owner", storage.OWNER)
    st.tell(done, 1.0)
    dead = st.ask()
    dead.suggest_int("x", 1, 9)
    dead.set_user_attr("owner", f"{socket.gethostname()}:{_dead_pid()}")
    remote = st.ask()
    remote.set_user_attr("owner", "another-host:1")
    again = storage.recover_interrupted(st)
    assert again == [storage.Interrupted({"x": st.trials[1].params["x"]}, None)]
    states = [t.state for t in st.get_trials()]
    assert states == [TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING]  # the other host's is left
    assert st.trials[1].user_attrs["interrupted"] is True
    assert [t.number for t in storage.counted(st)] == [0, 2]


def test_claim_lets_one_trial_run_a_key(tmp_path: Path) -> None:
    st = storage.study(storage.open_storage(f"sqlite:///{tmp_path / 'o.db'}", tmp_path), "s.b", ["maximize"])
    first, second = st.ask(), st.ask()
    assert storage.claim(st, first, "kafka-defaults")
    assert not storage.claim(st, second, "kafka-defaults")
    assert st.trials[1].state == TrialState.PRUNED and st.trials[1].user_attrs["released"]
    st.tell(first, 2.0)
    assert storage.done_keys(st) == {"kafka-defaults"}
    assert len(storage.counted(st)) == 1


def test_display_url_hides_the_password(tmp_path: Path) -> None:
    shown = storage.display_url("postgresql://kt:s3cret@db:5432/x", tmp_path)
    assert "s3cret" not in shown and shown.endswith("db:5432/x")


def test_study_folder_copy_of_the_spec_has_no_secrets(tmp_path: Path) -> None:
    import yaml

    from sweeps.spec import redacted_text

    f = tmp_path / "s.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "name": "x",
                "storage": "postgresql://kt:s3cret@db/x",
                "cluster": {"bootstrap": "h:9092", "admin": {"sasl.password": "hunter2", "sasl.username": "u"}},
            }
        )
    )
    out = redacted_text(f)
    assert "s3cret" not in out and "hunter2" not in out
    assert yaml.safe_load(out)["cluster"]["admin"]["sasl.username"] == "u"
