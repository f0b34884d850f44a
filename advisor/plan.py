"""Capacity planning: how much cluster a target producer rate needs under synchronous replication.

The ceiling model gives each broker's share of the traffic; a study, when given, gives the efficiency
actually reached (best measured ÷ ceiling) and measured rates per producer, consumer and partition.
Without a study the plan says which published figures it assumed instead.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from advisor import ceiling as ceiling_model
from advisor.trials import best_trial, strict_mask
from core.errors import UserError

# docs/reference.md §1 (hand-tuned, 3 brokers, 10GbE): 803 MB/s = 70 % of the ceiling with 40 producers and
# 6 consumers. Used only when no study is given, and named in the plan's assumptions.
REF_EFFICIENCY = 0.70
REF_PER_PRODUCER_MB_S = 823 / 40
REF_PER_CONSUMER_MB_S = 803 / 6
ASSUMED_PER_PARTITION_MB_S = 10.0  # a common sizing rule of thumb; not measured here


@dataclass(frozen=True)
class Plan:
    target_mb_s: float
    target_msg_s: float
    brokers: int
    partitions: int
    producers: int
    consumers: int
    rf: int
    acks: str
    consumer_groups: int
    headroom: float
    efficiency: float
    per_broker_mb_s: dict[str, float]  # at the target rate
    nic_mb_s_needed: float  # per broker, each direction, so the target runs at `headroom` of the link
    disk_mb_s_needed: float
    ceiling_mb_s: float  # of the planned cluster
    bound: str
    assumptions: list[str] = field(default_factory=list)
    basis: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("per_broker_mb_s",):
            d[k] = {a: round(b, 2) for a, b in d[k].items()}
        for k in ("nic_mb_s_needed", "disk_mb_s_needed", "ceiling_mb_s", "target_msg_s", "efficiency"):
            d[k] = round(d[k], 3)
        return d


def _study_basis(trials: pd.DataFrame) -> dict[str, Any]:
    """Efficiency and per-client/partition rates from the best complete acks=all trial of a study."""
    best = best_trial(trials[strict_mask(trials)]) if not trials.empty else None
    if best is None:
        raise UserError("--from: the study has no complete acks=all trial to plan from")
    p = best.get("params") or {}

    def count(key: str) -> int:
        try:
            return max(1, int(float(p.get(key) or 1)))
        except ValueError:
            return 1

    return {
        "trial": best["trial_id"],
        "mb_s": best["mb_s"],
        "efficiency": min(1.0, best["fraction_of_ceiling"]) if best.get("fraction_of_ceiling") else None,
        "per_producer_mb_s": best["mb_s"] / count("producers"),
        "per_consumer_mb_s": best["mb_s"] / count("consumers"),
        "per_partition_mb_s": best["mb_s"] / count("partitions"),
        "bound": best.get("bound"),
    }


def _rates(trials: pd.DataFrame | None, assumptions: list[str]) -> tuple[float, float, float, float, dict[str, Any]]:
    """Efficiency and MB/s per producer, consumer and partition: measured in the study when there is one,
    else the published figures (each assumption said in `assumptions`)."""
    if trials is None or trials.empty:
        eff = REF_EFFICIENCY
        per_prod, per_cons, per_part = REF_PER_PRODUCER_MB_S, REF_PER_CONSUMER_MB_S, ASSUMED_PER_PARTITION_MB_S
        assumptions += [
            f"no study given: efficiency {eff:.0%} of the ceiling, {per_prod:.1f} MB/s per producer and "
            f"{per_cons:.0f} MB/s per consumer (docs/reference.md §1, hand-tuned)",
            f"{per_part:g} MB/s per partition (rule of thumb, not measured): run a sweep and plan --from it",
        ]
        return eff, per_prod, per_cons, per_part, {}
    basis = _study_basis(trials)
    if basis["efficiency"] is None:
        assumptions.append(
            f"the study has no known ceiling: efficiency {REF_EFFICIENCY:.0%} (docs/reference.md §1) assumed"
        )
    eff = basis["efficiency"] or REF_EFFICIENCY
    return eff, basis["per_producer_mb_s"], basis["per_consumer_mb_s"], basis["per_partition_mb_s"], basis


def plan(
    target_mb_s: float,
    *,
    rf: int = 3,
    acks: str = "all",
    message_bytes: int = 1024,
    nic_mb_s: float | None = None,
    disk_mb_s: float | None = None,
    consumer_groups: int = 1,
    headroom: float = 0.7,
    trials: pd.DataFrame | None = None,
    profile: dict[str, Any] | None = None,
) -> Plan:
    if not (isinstance(target_mb_s, int | float) and math.isfinite(target_mb_s) and target_mb_s > 0):
        raise UserError(f"--target-mb-s must be a positive number (got {target_mb_s!r})")
    if not 0 < headroom <= 1:
        raise UserError(f"--headroom must be in (0, 1]: the fraction of the ceiling to plan for (got {headroom})")
    if message_bytes < 1:
        raise UserError(f"--message-bytes must be ≥ 1 (got {message_bytes})")
    if rf < 1:
        raise UserError(f"--rf must be ≥ 1 (got {rf})")
    assumptions: list[str] = []
    if profile:
        nic_mb_s = nic_mb_s or (profile.get("network") or {}).get("nic_mb_s_measured")
        disk_mb_s = disk_mb_s or (profile.get("disk") or {}).get("write_mb_s_measured")
    if not nic_mb_s:
        raise UserError(
            "--nic-mbps is required (MB/s per broker, each direction) unless --from gives a measured profile"
        )
    eff, per_prod, per_cons, per_part, basis = _rates(trials, assumptions)
    if not disk_mb_s:
        assumptions.append("no disk bandwidth given: the disk is assumed not to bind")
    # One broker's worth of ceiling (the model is linear in N); find the smallest N ≥ rf that carries it.
    unit = ceiling_model.p_max(
        nic_mb_s, brokers=max(rf, 1), rf=rf, consumer_groups=consumer_groups, disk_mb_s=disk_mb_s
    )
    per_broker_capacity = unit.mb_s / max(rf, 1)
    brokers = max(rf, math.ceil(target_mb_s / (per_broker_capacity * eff * headroom)))
    c = ceiling_model.p_max(nic_mb_s, brokers=brokers, rf=rf, consumer_groups=consumer_groups, disk_mb_s=disk_mb_s)
    partitions = max(brokers, math.ceil(target_mb_s / (per_part * headroom)))
    partitions = math.ceil(partitions / brokers) * brokers  # balanced leaders
    producers = max(1, math.ceil(target_mb_s / (per_prod * headroom)))
    consumers = min(partitions, max(1, math.ceil(target_mb_s / (per_cons * headroom))))
    out_copies = rf - 1 + consumer_groups
    per_broker = {
        "in": target_mb_s * rf / brokers,
        "out": target_mb_s * out_copies / brokers,
        "disk": target_mb_s * rf / brokers,
    }
    if str(acks) in ("0", "1"):
        assumptions.append(
            f"acks={acks}: an acknowledged record can be lost if its leader fails before the followers copy it; "
            "the plan's rates are the same as with acks=all (replication still carries every byte)"
        )
    return Plan(
        target_mb_s=target_mb_s,
        target_msg_s=target_mb_s * 1e6 / message_bytes,
        brokers=brokers,
        partitions=partitions,
        producers=producers,
        consumers=consumers,
        rf=rf,
        acks=str(acks),
        consumer_groups=consumer_groups,
        headroom=headroom,
        efficiency=eff,
        per_broker_mb_s=per_broker,
        nic_mb_s_needed=max(per_broker["in"], per_broker["out"]) / (eff * headroom),
        disk_mb_s_needed=per_broker["disk"] / headroom,
        ceiling_mb_s=c.mb_s,
        bound=c.binding,
        assumptions=assumptions,
        basis=basis,
    )
