"""The recommended settings as files an operator applies: producer/consumer/server .properties and topics.

A study with ablations (sweeps.confirm): only the keys whose ablation lost throughput beyond noise, each with
its effect, 95 % interval, n and the trials it comes from; for a study started from the `current` configuration,
also each key that configuration runs otherwise than the one measured (from_current). An older study without
them: the swept keys whose best value differs from the baseline, each with the gain its stage measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from brokerconf.catalogue import CATALOGUE
from brokerconf.properties import parse_text
from records.confirmation import KeyEffect
from records.trialrow import TrialRow

FILES = {
    "producer": "producer.properties",
    "consumer": "consumer.properties",
    "broker": "server.properties",
    "topic": "topic-configs.txt",
    "workload": "topic-configs.txt",
}


@dataclass(frozen=True)
class Change:
    key: str
    scope: str
    old: str | None
    new: str
    gain_mb_s: float | None  # measured: the key's own effect in its stage, when it was swept alone
    gain_note: str
    trial: str
    # what the study's `current` configuration runs, where it differs from `old` (the value the effect is measured
    # against, Kafka's default): an operator reads the change from what runs now (with_current)
    current: str | None = None

    @property
    def was(self) -> str:
        """The value before the change, as the files and the report state it."""
        old = self.old if self.old is not None else "(unset)"
        return old if self.current is None else f"{self.current} now (the effect is against {old})"


def _same(a: Any, b: Any) -> bool:
    return str(a) == str(b)


def changes(
    best: TrialRow,
    baseline_params: Mapping[str, Any],
    swept: set[str],
    effects: Mapping[str, tuple[float, str]],
    whole_gain: float | None,
) -> list[Change]:
    """The swept keys whose best value differs from the baseline (Kafka's defaults when measured)."""
    out = []
    for key in sorted(swept):
        p = CATALOGUE.get(key)
        if p is None or key not in best.params:
            continue
        new = str(best.params[key])
        old = baseline_params.get(key, p.default)
        if _same(old, new) or new in ("None", ""):
            continue
        if key in effects:
            gain, note = effects[key]
        else:
            gain, note = (
                None,
                (
                    f"part of the best configuration, +{whole_gain:.2f} MB/s as a whole vs Kafka's defaults"
                    if whole_gain is not None
                    else "part of the best configuration"
                ),
            )
        out.append(Change(key, p.scope, None if old is None else str(old), new, gain, note, best.trial_id))
    return out


def from_ablations(recommended: Sequence[KeyEffect]) -> list[Change]:
    """The keys summary.json recommends (each beyond noise, or kept as a group), with their measured effect and
    interval."""
    out = []
    for e in recommended:
        p = CATALOGUE.get(e.key)
        if p is None:
            continue
        iv = e.interval
        if iv is not None and iv.low is not None and iv.high is not None:
            note = f"effect {iv.text('{:+.2f}', 'MB/s')}"  # at the interval's own (Holm-corrected) level
        else:
            note = e.why or "needed"
        out.append(Change(e.key, p.scope, e.old, e.new, e.effect_mb_s, note, ", ".join(e.trial_ids)))
    return out


def from_current(
    recommended: Sequence[KeyEffect],
    dropped: set[str],
    chosen: Mapping[str, Any],
    current: Mapping[str, Any],
    trials: str = "",
) -> list[Change]:
    """For a study started from the `current` configuration: each key it runs otherwise than the configuration the
    files describe (the chosen one with the `dropped` keys at Kafka's defaults; a broker key the chosen one leaves
    out ran as the cluster runs it), beside the `recommended` ones. Without these, an operator who applies the files
    onto what runs now keeps such a key's current value and runs a configuration that was never measured. `trials`:
    where the configuration was measured."""
    out = []
    for key in sorted(set(current) - {e.key for e in recommended}):
        p = CATALOGUE.get(key)
        if p is None or (key not in chosen and key not in dropped and p.scope == "broker"):
            continue
        measured = p.default if key in dropped or key not in chosen else chosen[key]
        cur = current[key]
        if measured is None or _same(cur, measured):
            continue
        note = "set from the current configuration's value to the one measured"
        out.append(Change(key, p.scope, None if cur is None else str(cur), str(measured), None, note, trials))
    return out


def with_current(changes_: Sequence[Change], current: Mapping[str, Any]) -> list[Change]:
    """`changes_` with the value the `current` configuration runs for each key where it is neither the change's old
    value nor its new one (a study started from Kafka's defaults has no `current`: unchanged)."""
    out = []
    for c in changes_:
        cur = current.get(c.key)
        keep = cur is None or _same(cur, c.old) or _same(cur, c.new)
        out.append(c if keep else replace(c, current=str(cur)))
    return out


def render(changes_: list[Change], header: str) -> dict[str, str]:
    """File name → text."""
    files: dict[str, list[str]] = {}
    for c in changes_:
        name = FILES[c.scope]
        lines = files.setdefault(name, [f"# {header}", f"# {name}: only the keys the study changed"])
        gain = (
            c.gain_note
            if c.gain_mb_s is None or "CI" in c.gain_note
            else f"+{c.gain_mb_s:.2f} MB/s measured ({c.gain_note})"
        )
        lines.append(f"# {c.key}: {c.was} -> {c.new}; {gain}; trials {c.trial}")
        if c.scope == "workload":
            lines.append(f"# a client count for the deployment, not a Kafka config: run {c.new} {c.key}")
        lines.append(f"{c.key}={c.new}")
    for name in ("producer.properties", "consumer.properties", "server.properties", "topic-configs.txt"):
        files.setdefault(name, [f"# {header}", f"# {name}: the study changed no key of this file"])
    return {k: "\n".join(v) + "\n" for k, v in files.items()}


def parse(path: Path) -> dict[str, str]:
    """A .properties file (key=value, # comments) as a dict; a malformed line is an error naming it."""
    return parse_text(Path(path).read_text(), str(path))
