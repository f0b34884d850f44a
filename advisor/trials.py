"""Which trials a judgement rests on: the complete ones, the best, Kafka's defaults as measured."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from core.acks import acks
from records.analysis import trial_row
from records.summary import Summary
from records.trialrow import TrialRow


def complete(trials: pd.DataFrame) -> pd.DataFrame:
    """Trials that ran to the end with a measurement."""
    if trials.empty:
        return trials
    return trials[(trials["state"] == "complete") & trials["mb_s"].notna()]


def strict_mask(trials: pd.DataFrame) -> pd.Series:
    """Which trials ran with acks=all (synchronous replication)."""
    return trials["params"].map(lambda p: acks(p) == "all").astype(bool)


def best_trial(trials: pd.DataFrame) -> TrialRow | None:
    """The best trial: the best confirmation run if there is one, else the best complete acks=all trial."""
    done = complete(trials)
    if done.empty:
        return None
    conf = done[done["stage"].astype(str).str.startswith("confirm") & done["baseline"].isna()]
    sync = done[strict_mask(done)]
    pool = conf if not conf.empty else sync if not sync.empty else done
    return trial_row(pool.nlargest(1, "mb_s").iloc[0])


def chosen_trial(trials: pd.DataFrame, sweep: Summary | None) -> TrialRow | None:
    """The run a study is diagnosed by, one for the headline and every rule: the median repeat (`representative`)
    of the configuration as written when the sweep measured it (sweeps.written), else of the confirmation's choice,
    else the best trial."""
    chosen = sweep.confirmation.headline() if sweep and sweep.confirmation else None
    return (representative(trials, list(chosen.trial_ids)) if chosen else None) or best_trial(trials)


def latest(trials: pd.DataFrame) -> TrialRow | None:
    """The trial that started last of a non-empty table."""
    return trial_row(trials.assign(_t=trials["started_ns"].fillna(0)).nlargest(1, "_t").iloc[0].drop("_t"))


def no_rate_trial(trials: pd.DataFrame) -> TrialRow | None:
    """The latest trial that ran to its end without a rate to show (a search where no rate held), when it carries
    a diagnosis: a study that found no rate still owes one (advisor.limit)."""
    if trials.empty or "bound" not in trials:
        return None
    left = trials[(trials["state"] == "complete") & trials["mb_s"].isna() & trials["bound"].notna()]
    return None if left.empty else latest(left)


def defaults_trial(trials: pd.DataFrame) -> TrialRow | None:
    """The latest complete measurement of Kafka's defaults (the confirmation-phase re-run when there is one)."""
    done = complete(trials)
    ds = done[done["baseline"] == "kafka-defaults"] if not done.empty else done
    return None if ds.empty else latest(ds)


def representative(trials: pd.DataFrame, trial_ids: Iterable[str]) -> TrialRow | None:
    """Of a configuration's repeats (`trial_ids`), the complete one with the median figure: the one its charts
    and diagnosis show (the best single repeat would be the lucky one)."""
    done = complete(trials)
    reps = done[done["trial_id"].isin(set(trial_ids))].sort_values("mb_s") if not done.empty else done
    return None if reps.empty else trial_row(reps.iloc[(len(reps) - 1) // 2])
