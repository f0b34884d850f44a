"""The ceiling model of DESIGN.md: the producer ingress P the hardware allows.

For N brokers, replication factor r, C consumer groups reading the tail, per-broker NIC bandwidth B
(each direction) and disk write bandwidth D, with partitions and leaders balanced:

    P_max = min( B_in·N/r , B_out·N/(r−1+C) , D·N/r , client hosts' NIC limits )

The binding term names the bottleneck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ceiling:
    mb_s: float
    binding: str  # "broker network in", "broker network out", "disk", "client network"
    terms: dict[str, float]


def p_max(
    nic_mb_s: float,
    *,
    brokers: int = 3,
    rf: int = 3,
    consumer_groups: int = 1,
    disk_mb_s: float | None = None,
    client_hosts: int | None = None,
) -> Ceiling:
    terms = {
        "broker network in": nic_mb_s * brokers / rf,
        "broker network out": nic_mb_s * brokers / (rf - 1 + consumer_groups),
    }
    if disk_mb_s:
        terms["disk"] = disk_mb_s * brokers / rf
    if client_hosts:
        # producers and consumers share the client hosts: each host sends P/h and receives C·P/h
        terms["client network"] = nic_mb_s * client_hosts / max(1, consumer_groups)
    binding = min(terms, key=lambda k: terms[k])
    return Ceiling(terms[binding], binding, terms)


def from_profile(profile: dict[str, Any] | None, rf: int = 3, consumer_groups: int = 1) -> Ceiling | None:
    """The ceiling of a testbed profile (None when the network is not shaped: no known limit)."""
    if not profile:
        return None
    net = profile.get("network") or {}
    nic = net.get("nic_mb_s_measured") or None
    if not nic:
        return None
    disk = (profile.get("disk") or {}).get("write_mb_s_measured")
    # Client hosts: the workers' placement decides their share, so they are left to the caller.
    return p_max(float(nic), brokers=len(profile["brokers"]), rf=rf, consumer_groups=consumer_groups, disk_mb_s=disk)
