"""Which trials a judgement rests on: the complete ones, the best, Kafka's defaults as measured."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def num(v: Any) -> float | None:
    """A config value as a number, or None when it is not one (unset, `mixed(…)`)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def complete(trials: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trials that ran to the end with a measurement."""
    return [t for t in trials if t.get("state") == "complete" and t.get("mb_s") is not None]


def strict(t: dict[str, Any]) -> bool:
    """Whether the trial ran with acks=all (synchronous replication)."""
    return (t.get("params") or {}).get("acks", "all") in ("all", "-1")


def best_trial(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The best trial: the best confirmation run if there is one, else the best complete acks=all trial."""
    trials = complete(trials)
    conf = [t for t in trials if str(t.get("stage", "")).startswith("confirm") and t.get("baseline") is None]
    pool = conf or [t for t in trials if strict(t)] or trials
    return max(pool, key=lambda t: t["mb_s"]) if pool else None


def defaults_trial(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The latest complete measurement of Kafka's defaults (the confirmation-phase re-run when there is one)."""
    ds = [t for t in complete(trials) if t.get("baseline") == "kafka-defaults"]
    return max(ds, key=lambda t: t.get("started_ns") or 0) if ds else None


def representative(trials: list[dict[str, Any]], trial_ids: Iterable[str]) -> dict[str, Any] | None:
    """Of a configuration's repeats (`trial_ids`), the complete one with the median figure: the one its charts
    and diagnosis show (the best single repeat would be the lucky one)."""
    ids = set(trial_ids)
    reps = sorted((t for t in complete(trials) if t["trial_id"] in ids), key=lambda t: t["mb_s"])
    return reps[(len(reps) - 1) // 2] if reps else None
