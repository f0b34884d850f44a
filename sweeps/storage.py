"""Where a study lives, and how a restarted or shared sweep finds its place again.

`runs/<study>/` holds the Optuna storage (SQLite by default, or a journal file), one folder per trial
(`trials/<stage>-<number>/`), the broker-config snapshot and `summary.json`. A PostgreSQL URL puts the
Optuna storage in a database instead, so sweep workers on several machines share one study; each
worker still writes its trial records under its own `runs/<study>/`.

Optuna names: `<study>.baselines`, `<study>.<stage>` (one per stage; `joint` for the joint plan),
`<study>.confirm`. Every trial carries user attributes: `owner` (host:pid of the worker running it),
`config` (the complete configuration), `record` (its folder), and `key` for trials that must run once
per study (a baseline's name, the trial a confirmation re-measures).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import optuna
import psutil
from optuna.trial import TrialState

from core import secrets
from core.errors import EnvironmentProblem
from sweeps import attrs
from sweeps.attrs import TrialAttrs
from sweeps.space import Config

OWNER = f"{socket.gethostname()}:{os.getpid()}"


def open_storage(url: str | None, run_dir: Path) -> Any:
    """The Optuna storage for `url` (None: SQLite in run_dir; `journal:<file>`: a journal file)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if url is None:
        url = f"sqlite:///{run_dir / 'optuna.db'}"
    if url.startswith("journal:"):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        path = Path(url.removeprefix("journal:") or run_dir / "optuna.journal")
        return JournalStorage(JournalFileBackend(str(path)))
    last: Exception | None = None
    for attempt in range(5):  # two workers creating the schema at once: one of them retries
        try:
            return optuna.storages.RDBStorage(url, engine_kwargs={"pool_pre_ping": True})
        except Exception as e:
            last = e
            time.sleep(0.5 + attempt)
    why = str(last).strip().splitlines()[0] if str(last).strip() else ""
    why = secrets.redact_text(why, [secrets.url_secret(url)])  # never print a password from the URL
    raise EnvironmentProblem(f"cannot open the study storage {display_url(url, run_dir)}: {type(last).__name__}: {why}")


def display_url(url: str | None, run_dir: Path) -> str:
    if url is None:
        return f"sqlite:///{run_dir / 'optuna.db'}"
    return secrets.redact_url(url)


def study(
    storage: Any,
    name: str,
    directions: Sequence[Literal["minimize", "maximize"]],
    sampler: optuna.samplers.BaseSampler | None = None,
) -> Any:
    return optuna.create_study(
        storage=storage, study_name=name, directions=directions, sampler=sampler, load_if_exists=True
    )


def _owner_dead(owner: str | None) -> bool:
    if not owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's worker: not ours to judge
    return int(pid) != os.getpid() and not psutil.pid_exists(int(pid))


class Interrupted(NamedTuple):
    """A trial whose worker died: the parameters it had (a search trial's, to queue again) and its key (a baseline's
    or a repeat's, found again by it; None for a search trial)."""

    params: Config  # as Optuna holds them: our distributions give ints and strings only (sweeps.space)
    key: str | None


def recover_interrupted(st: Any) -> list[Interrupted]:
    """Fail the RUNNING trials whose worker on this host is gone; return them for a re-run."""
    again = []
    for t in st.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        a = TrialAttrs.of(t)
        if _owner_dead(a.owner):
            st._storage.set_trial_user_attr(t._trial_id, attrs.INTERRUPTED, True)
            st._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            again.append(Interrupted(dict(t.params), a.key))
    return again


def counted(st: Any) -> list[Any]:
    """Trials that used up budget: finished (complete or failed, not interrupted) or running now."""
    out = []
    for t in st.get_trials(deepcopy=False):
        if t.state in (TrialState.COMPLETE, TrialState.RUNNING) or (
            t.state == TrialState.FAIL and not (a := TrialAttrs.of(t)).interrupted and not a.released
        ):
            out.append(t)
    return out


def claim(st: Any, trial: Any, key: str) -> bool:
    """Mark `trial` as the one running `key`; False if another worker's earlier trial already has it.

    Two workers may ask at the same moment; the trial with the lower number wins and the other
    releases its trial (state PRUNED, attribute `released`), so no key is measured twice.
    """
    trial.set_user_attr(attrs.KEY, key)
    for t in counted(st):
        if t.number < trial.number and TrialAttrs.of(t).key == key:
            release(st, trial)
            return False
    return True


def release(st: Any, trial: Any) -> None:
    attrs.mark(trial, attrs.RELEASED)
    st.tell(trial, state=TrialState.PRUNED)


def done_keys(st: Any) -> set[str]:
    """Keys measured already (complete, or failed for a reason other than an interruption)."""
    keys = (TrialAttrs.of(t).key for t in counted(st) if t.state != TrialState.RUNNING)
    return {k for k in keys if k is not None}


def feasible(t: optuna.trial.FrozenTrial) -> bool:
    return bool(t.state == TrialState.COMPLETE and all(c <= 0 for c in t.constraints.values()))


def ranked(st: Any) -> list[optuna.trial.FrozenTrial]:
    """Feasible complete trials, best first by the first objective."""
    return sorted((t for t in st.get_trials(deepcopy=False) if feasible(t)), key=lambda t: -t.values[0])
