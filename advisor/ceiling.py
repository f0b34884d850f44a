"""The ceiling model of docs/design.md: the producer ingress P the hardware allows.

For N brokers, replication factor r, C consumer groups reading the tail, per-broker NIC bandwidth
B_in / B_out and disk write bandwidth D, with partitions and leaders balanced, a producer ingress of P
(payload MB/s) puts on each broker, in wire bytes (k = compressed/uncompressed size):

    inbound   P·k·r/N          (its share of produce + the replica fetches it makes)
    outbound  P·k·(r−1+C)/N    (replica fetches it serves + its consumers)
    disk      P·k·r/N

and on the clients: producer hosts H_p send P·k between them, consumer hosts H_c receive C·P·k. So

    P_max = min( B_in·N/(r·k), B_out·N/((r−1+C)·k), D·N/(r·k), H_p·B_c/k, H_c·B_c/(C·k) )

The binding term names the bottleneck. acks does not move the sustained ceiling (every byte is still
replicated r times), but with acks=0/1 a producer is not held back by replication, so a short run can
report a produce rate above it while followers fall behind (docs/reference.md §1, stage 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from core.errors import UserError
from records.profile import ClusterProfile, Limits

RESOURCES = ("network_in", "network_out", "disk", "client_network")
ACKS = ("0", "1", "all", "-1")


@dataclass(frozen=True)
class Ceiling:
    mb_s: float
    binding: str  # one of RESOURCES
    terms: dict[str, float]  # each resource's own limit on P, payload MB/s
    per_broker: dict[str, float] = field(default_factory=dict)  # in/out/disk MB/s per broker at P = mb_s
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "ceiling_mb_s": round(self.mb_s, 3),
            "bound": self.binding,
            "limits": {k: round(v, 3) for k, v in self.terms.items()},
            "per_broker_at_ceiling_mb_s": {k: round(v, 3) for k, v in self.per_broker.items()},
            "notes": list(self.notes),
        }


def _positive(name: str, v: float | None, *, allow_none: bool = True) -> None:
    if v is None:
        if not allow_none:
            raise UserError(f"{name} is required (MB/s)")
        return
    if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
        raise UserError(f"{name} must be a positive number of MB/s (got {v!r})")


def _check_shape(
    brokers: int, rf: int, consumer_groups: int, producer_hosts: int | None, consumer_hosts: int | None
) -> None:
    """A UserError naming the option when the cluster's shape is impossible."""
    if brokers < 1:
        raise UserError(f"--brokers must be ≥ 1 (got {brokers})")
    if not 1 <= rf <= brokers:
        raise UserError(f"--rf (replication factor) must be between 1 and --brokers ({brokers}); got {rf}")
    if consumer_groups < 0:
        raise UserError(f"--consumer-groups must be ≥ 0 (got {consumer_groups})")
    for name, h in (("--producer-hosts", producer_hosts), ("--consumer-hosts", consumer_hosts)):
        if h is not None and h < 1:
            raise UserError(f"{name} must be ≥ 1 (got {h})")
    if consumer_hosts and consumer_groups == 0:
        raise UserError("--consumer-hosts given but --consumer-groups is 0")


def _check_traffic(compression_ratio: float, acks: str) -> None:
    """A UserError naming the option when the compression ratio or acks is not one the model knows."""
    if not (isinstance(compression_ratio, int | float) and 0 < compression_ratio <= 2):
        raise UserError(
            f"--compression-ratio must be in (0, 2]: compressed ÷ uncompressed bytes (got {compression_ratio!r})"
        )
    if str(acks) not in ACKS:
        raise UserError(f"--acks must be one of {', '.join(ACKS)} (got {acks!r})")


def p_max(
    nic_mb_s: float | None = None,
    *,
    brokers: int = 3,
    rf: int = 3,
    consumer_groups: int = 1,
    nic_in_mb_s: float | None = None,
    nic_out_mb_s: float | None = None,
    disk_mb_s: float | None = None,
    producer_hosts: int | None = None,
    consumer_hosts: int | None = None,
    client_nic_mb_s: float | None = None,
    compression_ratio: float = 1.0,
    acks: str = "all",
) -> Ceiling:
    """The ceiling for one cluster shape. Every bandwidth is per host, MB/s, each direction."""
    b_in = nic_in_mb_s if nic_in_mb_s is not None else nic_mb_s
    b_out = nic_out_mb_s if nic_out_mb_s is not None else nic_mb_s
    _check_shape(brokers, rf, consumer_groups, producer_hosts, consumer_hosts)
    _positive("--nic-mbps (or --nic-in-mbps)", b_in, allow_none=False)
    _positive("--nic-mbps (or --nic-out-mbps)", b_out, allow_none=False)
    _positive("--disk-mbps", disk_mb_s)
    _positive("--client-nic-mbps", client_nic_mb_s)
    _check_traffic(compression_ratio, acks)
    assert b_in is not None and b_out is not None
    k = float(compression_ratio)
    out_copies = rf - 1 + consumer_groups
    terms: dict[str, float] = {"network_in": b_in * brokers / (rf * k)}
    if out_copies > 0:
        terms["network_out"] = b_out * brokers / (out_copies * k)
    if disk_mb_s:
        terms["disk"] = disk_mb_s * brokers / (rf * k)
    bc = client_nic_mb_s or nic_mb_s or b_in
    client = []
    if producer_hosts:
        client.append(producer_hosts * bc / k)
    if consumer_hosts and consumer_groups:
        client.append(consumer_hosts * bc / (consumer_groups * k))
    if client:
        terms["client_network"] = min(client)
    binding = min(terms, key=lambda t: terms[t])
    p = terms[binding]
    per_broker = {
        "in": p * k * rf / brokers,
        "out": p * k * out_copies / brokers,
        "disk": p * k * rf / brokers,
    }
    notes: list[str] = []
    if str(acks) in ("0", "1"):
        notes.append(
            f"acks={acks}: the producer does not wait for the followers, so a short run can show a produce rate "
            "above this ceiling while replication falls behind; the sustained rate cannot exceed it"
        )
    if k != 1.0:
        notes.append(f"compression ratio {k:g}: limits are in uncompressed payload MB/s")
    return Ceiling(p, binding, terms, per_broker, tuple(notes))


def from_profile(profile: ClusterProfile | None, rf: int = 3, consumer_groups: int = 1) -> Ceiling | None:
    """The ceiling of a cluster profile (None when no network rate is known, e.g. unshaped loopback).

    The disk term uses the probe's concurrent per-broker rate (all brokers writing at once), since on the
    testbed the three log dirs share one device.
    """
    lim = Limits.of(profile)
    if not lim.nic_mb_s:
        return None
    # Client hosts: the workers' placement decides their share, so they are left to the caller.
    return p_max(lim.nic_mb_s, brokers=lim.brokers, rf=rf, consumer_groups=consumer_groups, disk_mb_s=lim.disk_mb_s)
