"""Rules on the setup a trial was measured in, not on its figures: is it the synchronous replication the advice
is for, did the brokers do work the producer did not ask for, and did the cluster have its controller.

- durability: the topic's min.insync.replicas (its override, else the brokers' read-back value) against the
  replication factor. Below 2 an acknowledged write may live on one broker (not synchronous replication, and
  a faster figure than RF 3 / min.insync.replicas 2 will carry); at the replication factor, writes stop
  (NotEnoughReplicas) as soon as one broker is down.
- recompression: a topic compression.type other than `producer` and other than the producer's codec makes
  every broker decompress and recompress every batch it appends (CPU per byte, and the zero-copy path lost).
- controller: measured seconds in which the brokers' ActiveControllerCount did not add up to one (a KRaft
  quorum without a leader, or two) are not a steady-state measurement.
"""

from __future__ import annotations

import pandas as pd

from advisor.context import Context
from advisor.recommendation import Recommendation
from advisor.trials import complete
from core.units import number, number_of
from records.analysis import trial_rows
from records.trialrow import TrialRow

PRODUCER_CODEC = "none"  # the producer's compression.type when unset


def min_isr(t: TrialRow) -> tuple[float | None, str]:
    """The min.insync.replicas a trial's topic ran with, and where it came from (the topic's override wins)."""
    topic = (t.topic_config or {}).get("min.insync.replicas")
    if topic is not None:
        return number(topic), "topic"
    return number_of(t.params, "min.insync.replicas"), "broker"


def durability_problem(t: TrialRow, rf: int) -> str | None:
    """What is wrong with a trial's min.insync.replicas at replication factor `rf`, or None."""
    m, scope = min_isr(t)
    if m is None or rf < 2:
        return None
    at = f"{scope} min.insync.replicas={m:.0f} with RF {rf}"
    if m < 2:
        return (
            f"{at}: an acknowledged write may live on one broker only: not synchronous replication, and a rate "
            "RF 3 / min.insync.replicas 2 will not carry"
        )
    if m >= rf:
        return f"{at}: acks=all writes stop (NotEnoughReplicas) as soon as one broker is down"
    return None


def rule_durability(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    rf = ctx.rf
    found = [(t, why) for t in trial_rows(trials) if (why := durability_problem(t, rf))]  # failed runs too: the setup
    if not found:
        return []
    t0 = found[0][0]
    scope = min_isr(t0)[1]
    return [
        Recommendation(
            "min-insync-replicas",
            f"{len(found)} trial(s) ran with a min.insync.replicas that does not fit RF {rf}: use {rf - 1} "
            "(one broker may fail, every acknowledged write is on two)",
            action={"min.insync.replicas": f"{rf - 1} ({scope} config)"},
            evidence=[f"{t.trial_id}: {why}" for t, why in found[:4]],
            trials=[t.trial_id for t, _ in found][:6],
            severity="high",
        )
    ]


def recompressed(t: TrialRow) -> tuple[str, str] | None:
    """(topic codec, producer codec) when the brokers recompress what the producer sent, else None."""
    topic = (t.topic_config or {}).get("compression.type")
    producer = str(t.params.get("compression.type") or PRODUCER_CODEC)
    if topic is None or topic in ("producer", producer):
        return None
    return str(topic), producer


def rule_recompression(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    found = [(t, pair) for t in trial_rows(complete(trials)) if (pair := recompressed(t))]
    if not found:
        return []

    def cpu(t: TrialRow) -> str:
        c = number(t.broker_cpu)
        return f"; the brokers' JVMs used {c:.0%} of the machine each" if c is not None else ""

    return [
        Recommendation(
            "topic-recompression",
            "The topic's compression.type differs from the producer's: every broker decompresses and recompresses "
            "each batch. Set the topic's compression.type to `producer` and choose the codec in the producer",
            action={"compression.type": "producer (topic config)"},
            evidence=[
                f"{t.trial_id}: topic compression.type={a}, producer compression.type={b}, {t.mb_s:.2f} MB/s" + cpu(t)
                for t, (a, b) in found[:4]
            ],
            trials=[t.trial_id for t, _ in found][:6],
            severity="medium",
        )
    ]


def rule_controller(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    found = [t for t in trial_rows(complete(trials)) if (t.controller_bad_seconds or 0) > 0]
    if not found:
        return []
    return [
        Recommendation(
            "controller-unstable",
            f"{len(found)} trial(s) were measured while the cluster did not have exactly one active controller: "
            "their figures are not of a healthy cluster; find why the quorum moved (controller logs) and re-run them",
            evidence=[
                f"{t.trial_id}: {t.controller_bad_seconds:.0f} of {number(t.measure_seconds) or 0:.0f} "
                "measured seconds with ActiveControllerCount summed over the brokers ≠ 1"
                for t in found[:4]
            ],
            trials=[t.trial_id for t in found][:6],
            severity="medium",
        )
    ]
