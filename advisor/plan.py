"""Capacity planning: how much cluster a target producer rate needs under synchronous replication.

The ceiling model gives each broker's share of the traffic; a study, when given, gives the efficiency
actually reached (best measured ÷ ceiling) and measured rates per producer, consumer and partition.
Without a study the plan says which published figures it assumed instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd

from advisor import ceiling as ceiling_model
from advisor import diagnose
from advisor.trials import best_trial, complete, representative, strict_mask
from core.errors import UserError
from core.stats import Interval, mean_interval
from core.units import number_of
from records.profile import ClusterProfile, Limits

# docs/reference.md §1 (hand-tuned, 3 brokers, 10GbE): 803 MB/s = 70 % of the ceiling with 40 producers and
# 6 consumers. Used only when no study is given, and named in the plan's assumptions.
REF_EFFICIENCY = 0.70
REF_PER_PRODUCER_MB_S = 823 / 40
REF_PER_CONSUMER_MB_S = 803 / 6
ASSUMED_PER_PARTITION_MB_S = 10.0  # a common sizing rule of thumb; not measured here


@dataclass(frozen=True)
class Basis:
    """What a plan measured in a study: the efficiency from the confirmed configuration's repeats (or the best
    trial), and MB/s per producer, consumer and partition from the `unit_trial` at the plan's message size."""

    trial: str
    mb_s: float
    mb_s_interval: Interval
    trials: tuple[str, ...]
    ceiling_mb_s: float | None
    efficiency: float | None  # None: the study knows no ceiling
    excluded_client_bound: int
    unit_trial: str
    unit_mb_s: float
    unit_message_bytes: int
    producers: int
    consumers: int
    partitions: int
    bound: str | None

    def count(self, what: str) -> int:
        """The unit trial's producers, consumers or partitions (`what`)."""
        return {"producers": self.producers, "consumers": self.consumers, "partitions": self.partitions}[what]

    def per(self, what: str) -> float:
        """MB/s per producer, consumer or partition (`what`, plural) of the unit trial."""
        return self.unit_mb_s / self.count(what)


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
    spare_brokers: int  # brokers beyond those that carry the target: it holds with this many down
    efficiency: float
    per_broker_mb_s: dict[str, float]  # at the target rate
    nic_mb_s_needed: float  # per broker, each direction, so the target runs at `headroom` of the link
    disk_mb_s_needed: float
    ceiling_mb_s: float  # of the planned cluster
    bound: str
    assumptions: list[str] = field(default_factory=list)
    basis: Basis | None = None  # None: no study, the published figures assumed
    explain: list[str] = field(default_factory=list)  # where each number comes from

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("per_broker_mb_s",):
            d[k] = {a: round(b, 2) for a, b in d[k].items()}
        for k in ("nic_mb_s_needed", "disk_mb_s_needed", "ceiling_mb_s", "target_msg_s", "efficiency"):
            d[k] = round(d[k], 3)
        if self.basis:
            d["basis"].update(
                {f"per_{w[:-1]}_mb_s": self.basis.per(w) for w in ("producers", "consumers", "partitions")}
            )
        return d


def _not_client_bound(trials: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Complete acks=all trials whose load generator was not the limit (only they say what the cluster does),
    and how many were left out as client-bound."""
    done = complete(trials)
    sync = done[strict_mask(done)] if not done.empty else done
    if sync.empty:
        raise UserError("--from: the study has no complete acks=all trial to plan from")
    # judged from the measurement (a loop at a full core), never the record's stored flag: older records set it
    # for any full producer buffer, which at the maximum rate is the cluster's back-pressure
    loop = pd.to_numeric(sync["client_loop_cpu_max"], errors="coerce").fillna(0.0)
    client = (sync["bound"] == "client") | (loop >= diagnose.LOOP_HOT)
    if client.all():
        raise UserError(
            f"--from: all {len(sync)} complete acks=all trials were client-bound (a load generator loop at a full "
            "core): they measured the client, not the cluster; re-run the study with more client processes"
        )
    return sync[~client], int(client.sum())


def _study_basis(
    trials: pd.DataFrame, message_bytes: int, assumptions: list[str], confirmed: Sequence[str] = ()
) -> Basis:
    """Efficiency from the confirmed configuration's repeats (their mean, with its interval) when the study
    confirmed one, else from the best trial (one run); only trials that were not client-bound. MB/s per producer,
    consumer and partition from the best such trial at the plan's message size (per-record costs differ by size)."""
    eligible, excluded = _not_client_bound(trials)
    reps = eligible[eligible["trial_id"].isin(set(confirmed))]
    best = representative(reps, reps["trial_id"]) if not reps.empty else best_trial(eligible)
    assert best is not None
    rate = mean_interval([float(x) for x in reps["mb_s"]]) if not reps.empty else mean_interval([best.rate])
    ceiling = best.ceiling_mb_s
    fraction = rate.estimate / ceiling if ceiling else None
    # per-client rates at the plan's message size: the basis when it ran at that size, else the best trial there
    sizes = eligible["message_bytes"].fillna(0).astype(int)
    same = eligible[sizes == message_bytes]
    unit = best if int(best.message_bytes or 0) == message_bytes or same.empty else best_trial(same)
    assert unit is not None
    p = unit.params

    def count(key: str) -> int:
        try:
            return max(1, int(number_of(p, key) or 1))
        except ValueError:
            return 1

    at = int(unit.message_bytes or 0)
    if at != message_bytes:
        assumptions.append(
            f"per-producer, per-consumer and per-partition rates were measured at {at or 'unknown'}-B messages "
            f"({unit.trial_id}), not at the plan's {message_bytes} B: per-record costs make them differ; "
            f"run the study at {message_bytes} B to measure them"
        )
    return Basis(
        trial=best.trial_id,
        mb_s=rate.estimate,
        mb_s_interval=rate,
        trials=tuple(reps["trial_id"]) if not reps.empty else (best.trial_id,),
        ceiling_mb_s=ceiling,
        efficiency=min(1.0, fraction) if fraction else None,
        excluded_client_bound=excluded,
        unit_trial=unit.trial_id,
        unit_mb_s=rate.estimate if unit is best else unit.rate,
        unit_message_bytes=at,
        producers=count("producers"),
        consumers=count("consumers"),
        partitions=count("partitions"),
        bound=best.bound,
    )


def _rates(
    trials: pd.DataFrame | None, message_bytes: int, assumptions: list[str], confirmed: Sequence[str] = ()
) -> tuple[float, float, float, float, Basis | None]:
    """Efficiency and MB/s per producer, consumer and partition: measured in the study when there is one,
    else the published figures (each assumption said in `assumptions`)."""
    if trials is None or trials.empty:
        eff = REF_EFFICIENCY
        per_prod, per_cons, per_part = REF_PER_PRODUCER_MB_S, REF_PER_CONSUMER_MB_S, ASSUMED_PER_PARTITION_MB_S
        assumptions += [
            f"no study given: efficiency {eff:.0%} of the ceiling, {per_prod:.1f} MB/s per producer and "
            f"{per_cons:.0f} MB/s per consumer (docs/reference.md §1, hand-tuned, 1 KB records)",
            f"{per_part:g} MB/s per partition (rule of thumb, not measured): run a sweep and plan --from it",
        ]
        return eff, per_prod, per_cons, per_part, None
    b = _study_basis(trials, message_bytes, assumptions, confirmed)
    if b.efficiency is None:
        assumptions.append(
            f"the study has no known ceiling: efficiency {REF_EFFICIENCY:.0%} (docs/reference.md §1) assumed"
        )
    return b.efficiency or REF_EFFICIENCY, b.per("producers"), b.per("consumers"), b.per("partitions"), b


def _explain(p: Plan, per_broker_capacity: float, per: tuple[float, float, float]) -> list[str]:
    """Where each number of the plan comes from, in words a reader can check."""
    b = p.basis
    carry = p.brokers - p.spare_brokers
    eff_src = "assumed (see the assumptions)"
    if b and b.efficiency is not None:
        left_out = b.excluded_client_bound
        rate = b.mb_s_interval.text(unit="MB/s")
        runs = f"{', '.join(b.trials)}: {rate}" if len(b.trials) > 1 else f"{b.trial}: {rate}, one run"
        eff_src = f"{runs}, over the ceiling of {b.ceiling_mb_s or 0:.2f} MB/s" + (
            f" ({left_out} client-bound trial(s) left out)" if left_out else ""
        )

    def source(what: str) -> str:
        if not b:
            return "assumed: see the assumptions"
        return f"measured: {b.unit_trial}'s {b.unit_mb_s:.2f} MB/s over its {b.count(what)} {what}"

    per_prod, per_cons, per_part = per
    writable = (
        f"RF {p.rf} with min.insync.replicas ≤ {p.rf - p.spare_brokers} keeps accepting writes"
        if p.rf > p.spare_brokers
        else f"RF {p.rf} leaves some partitions with no replica"
    )
    spare = (
        f", plus {p.spare_brokers} so that the target still holds with {p.spare_brokers} broker(s) down ({writable})"
        if p.spare_brokers
        else ""
    )
    return [
        f"efficiency {p.efficiency:.0%}: {eff_src}",
        f"brokers {p.brokers}: each broker adds {per_broker_capacity:.1f} MB/s of ceiling (its NIC and disk over "
        f"RF {p.rf}); at {p.efficiency:.0%} efficiency and {p.headroom:.0%} headroom {carry} broker(s) carry "
        f"{p.target_mb_s:g} MB/s{spare}",
        f"partitions {p.partitions}: {per_part:.2f} MB/s per partition ({source('partitions')}) at "
        f"{p.headroom:.0%} headroom, rounded up to a multiple of the brokers",
        f"producers {p.producers}: {per_prod:.2f} MB/s each ({source('producers')}) at {p.headroom:.0%} headroom",
        f"consumers {p.consumers}: {per_cons:.2f} MB/s each ({source('consumers')}) at {p.headroom:.0%} headroom, "
        "at most one per partition",
        f"NIC ≥ {p.nic_mb_s_needed:.1f} MB/s per broker each way: the busier direction at the target on {carry} "
        f"broker(s), over efficiency × headroom; disk ≥ {p.disk_mb_s_needed:.1f} MB/s: its writes over headroom",
    ]


def _check(target_mb_s: float, headroom: float, message_bytes: int, rf: int, spare_brokers: int) -> None:
    """A clear error naming the option and what is allowed, before anything is computed."""
    if not (isinstance(target_mb_s, int | float) and math.isfinite(target_mb_s) and target_mb_s > 0):
        raise UserError(f"--target-mb-s must be a positive number (got {target_mb_s!r})")
    if not 0 < headroom <= 1:
        raise UserError(f"--headroom must be in (0, 1]: the fraction of the ceiling to plan for (got {headroom})")
    if message_bytes < 1:
        raise UserError(f"--message-bytes must be ≥ 1 (got {message_bytes})")
    if rf < 1:
        raise UserError(f"--rf must be ≥ 1 (got {rf})")
    if spare_brokers < 0:
        raise UserError(
            f"--spare-brokers must be ≥ 0: brokers that may be down while the target holds (got {spare_brokers})"
        )


def _bandwidths(
    nic_mb_s: float | None, disk_mb_s: float | None, profile: ClusterProfile | None
) -> tuple[float, float | None]:
    """The link and disk MB/s per broker: as given, else the profile's measured ones; a UserError without a link."""
    lim = Limits.of(profile)
    nic_mb_s, disk_mb_s = nic_mb_s or lim.nic_mb_s, disk_mb_s or lim.disk_mb_s
    if not nic_mb_s:
        raise UserError(
            "--nic-mbps is required (MB/s per broker, each direction) unless --from gives a measured profile"
        )
    return nic_mb_s, disk_mb_s


def _loads(
    target_mb_s: float, rf: int, consumer_groups: int, brokers: int, spare_brokers: int
) -> tuple[dict[str, float], tuple[float, float]]:
    """What each broker carries at the target (MB/s in, out and to disk), and what it must carry in and out with
    the spare brokers down."""
    out_copies = rf - 1 + consumer_groups
    per_broker = {
        "in": target_mb_s * rf / brokers,
        "out": target_mb_s * out_copies / brokers,
        "disk": target_mb_s * rf / brokers,
    }
    degraded = max(1, brokers - spare_brokers)
    return per_broker, (target_mb_s * rf / degraded, target_mb_s * out_copies / degraded)


def _counts(target_mb_s: float, headroom: float, brokers: int, per: tuple[float, float, float]) -> tuple[int, int, int]:
    """Partitions (a multiple of the brokers: balanced leaders), producers and consumers (no more than the
    partitions) that carry the target within the headroom at the measured MB/s `per` producer, consumer and
    partition."""
    per_prod, per_cons, per_part = per
    partitions = max(brokers, math.ceil(target_mb_s / (per_part * headroom)))
    partitions = math.ceil(partitions / brokers) * brokers
    producers = max(1, math.ceil(target_mb_s / (per_prod * headroom)))
    consumers = min(partitions, max(1, math.ceil(target_mb_s / (per_cons * headroom))))
    return partitions, producers, consumers


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
    spare_brokers: int = 1,
    trials: pd.DataFrame | None = None,
    profile: ClusterProfile | None = None,
    confirmed: Sequence[str] = (),
) -> Plan:
    """The plan for `target_mb_s`. With `trials` (a study's), its efficiency and per-client rates are measured:
    on the `confirmed` trial ids (the recommended configuration's confirmation repeats) when given."""
    _check(target_mb_s, headroom, message_bytes, rf, spare_brokers)
    assumptions: list[str] = []
    nic_mb_s, disk_mb_s = _bandwidths(nic_mb_s, disk_mb_s, profile)
    eff, per_prod, per_cons, per_part, basis = _rates(trials, message_bytes, assumptions, confirmed)
    if not disk_mb_s:
        assumptions.append("no disk bandwidth given: the disk is assumed not to bind")
    # One broker's worth of ceiling (the model is linear in N); find the smallest N ≥ rf that carries it.
    unit = ceiling_model.p_max(
        nic_mb_s, brokers=max(rf, 1), rf=rf, consumer_groups=consumer_groups, disk_mb_s=disk_mb_s
    )
    per_broker_capacity = unit.mb_s / max(rf, 1)
    carry = math.ceil(target_mb_s / (per_broker_capacity * eff * headroom))
    brokers = max(rf, carry + spare_brokers)
    c = ceiling_model.p_max(nic_mb_s, brokers=brokers, rf=rf, consumer_groups=consumer_groups, disk_mb_s=disk_mb_s)
    partitions, producers, consumers = _counts(target_mb_s, headroom, brokers, (per_prod, per_cons, per_part))
    per_broker, (need_in, need_out) = _loads(target_mb_s, rf, consumer_groups, brokers, spare_brokers)
    if str(acks) in ("0", "1"):
        assumptions.append(
            f"acks={acks}: an acknowledged record can be lost if its leader fails before the followers copy it; "
            "the plan's rates are the same as with acks=all (replication still carries every byte)"
        )
    out = Plan(
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
        spare_brokers=spare_brokers,
        efficiency=eff,
        per_broker_mb_s=per_broker,
        nic_mb_s_needed=max(need_in, need_out) / (eff * headroom),
        disk_mb_s_needed=need_in / headroom,
        ceiling_mb_s=c.mb_s,
        bound=c.binding,
        assumptions=assumptions,
        basis=basis,
    )
    return replace(out, explain=_explain(out, per_broker_capacity, (per_prod, per_cons, per_part)))
