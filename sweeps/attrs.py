"""What a sweep keeps on each Optuna trial beside its objective values (Optuna's user attributes), typed: the one
place their names are spelled. They live in the study's storage, so a resumed sweep or a second worker reads what
the first one wrote; the measurement itself is the trial's record (records.trial), which `record` names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.typed import from_json

OWNER, CONFIG, RECORD, KEY = "owner", "config", "record", "key"
INTERRUPTED, RELEASED = "interrupted", "released"


@dataclass(frozen=True)
class TrialAttrs:
    """One trial's attributes as read back; a trial still running has only the first ones it was given."""

    config: Mapping[str, Any] = field(default_factory=dict)  # the configuration it ran (space.Config)
    record: str | None = None  # its trial folder
    key: str | None = None  # what a repeat phase measured in it: "<label>@<n>" (storage.claim)
    owner: str | None = None  # "<host>:<pid>" of the worker running it (storage.recover_interrupted)
    interrupted: bool = False  # stopped by Ctrl-C or a dead worker: not counted, queued again
    released: bool = False  # another worker's earlier trial had its key (storage.claim)
    restarts: int = 0  # rolling restarts it caused
    probe_msg_s: float | None = None  # the max rate its search ran under
    rate_msg_s: float | None = None  # its sustainable rate's step, or the operating-point run's rate
    no_rate_held: str | None = None  # why its sustainable rate is no figure (the sampler was told 0.0)
    below_mb_s: float | None = None  # then: no rate at or above this one held twice in its search
    windows_mb_s: tuple[float, ...] | None = None  # each measurement window's rate (a completed trial's)
    violations: tuple[str, ...] = ()  # the SLO's terms it broke (a completed trial's)
    fail_reason: str | None = None  # why it failed

    @classmethod
    def of(cls, t: Any) -> TrialAttrs:
        """From an Optuna trial (frozen or running): the attributes written so far, the rest at their defaults."""
        return from_json(cls, t.user_attrs, f"trial {t.number}'s attributes")

    @property
    def trial_id(self) -> str:
        """The trial folder's name: a study folder that was moved or copied still finds it under its trials/."""
        return Path(self.record or "").name

    @property
    def label(self) -> str | None:
        """The repeat phase's label without the repeat's number (its key up to the last `@`)."""
        return self.key.rsplit("@", 1)[0] if self.key else None


def started(trial: Any, owner: str, config: Mapping[str, Any], record: Path) -> None:
    """Before the trial runs: who runs it, what and where its record goes."""
    trial.set_user_attr(OWNER, owner)
    trial.set_user_attr(CONFIG, dict(config))
    trial.set_user_attr(RECORD, str(record))


def finished(
    trial: Any,
    *,
    restarts: int,
    probe_msg_s: float | None,
    rate_msg_s: float | None,
    no_rate_held: str | None,
    windows_mb_s: list[float] | None,
    below_mb_s: float | None = None,
    violations: list[str] | None,
    fail_reason: str | None,
) -> None:
    """After the trial ran: what the later phases and the summary read without opening its record. A figure that
    does not exist is not written (a completed trial's windows and violations; a failed one's reason)."""
    trial.set_user_attr("restarts", restarts)
    if probe_msg_s:
        trial.set_user_attr("probe_msg_s", probe_msg_s)
    if rate_msg_s is not None:
        trial.set_user_attr("rate_msg_s", rate_msg_s)
    if no_rate_held:
        trial.set_user_attr("no_rate_held", no_rate_held)
    if below_mb_s is not None:
        trial.set_user_attr("below_mb_s", below_mb_s)
    if windows_mb_s is not None:
        trial.set_user_attr("windows_mb_s", windows_mb_s)
    if violations is not None:
        trial.set_user_attr("violations", violations)
    if fail_reason is not None:
        trial.set_user_attr("fail_reason", fail_reason)


def mark(trial: Any, name: str) -> None:
    """Set a flag attribute (INTERRUPTED, RELEASED) on a running trial."""
    trial.set_user_attr(name, True)
