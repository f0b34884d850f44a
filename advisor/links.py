"""A degraded link, named from what TCP met on every link of the shaped testbed (testbed.links, in the trial row
as link_data_segs, link_retrans and link_rtt_ms, keyed "b1/b2").

A host whose link drops packets or delays them shows it on every pair it is part of, and the pairs without it
stay clean: the host most flagged pairs share is the one named (a stray flagged pair without it is told, not
followed). One flagged pair alone cannot say which of its two ends is at fault, and flagged pairs that share no
host (a saturated network queues on every link) name none.
"""

from __future__ import annotations

from collections import Counter

from core.units import number
from records.trialrow import TrialRow

# a link resending this share of its data segments drops packets: between what a broker's links resend when it
# drops packets and what tail-loss probes on a busy machine count as retransmissions (docs/measurement.md,
# "Figures behind the code's thresholds")
LOSSY_PCT = 0.8
# a host whose every link takes this long a round trip, and SLOW_FACTOR x the slowest link without it, has a slow
# link: loaded links queue (tbf), all of them alike, so only one host's links far above the rest are a delay
# (tests/e2e/test_shaped.py plants one, beside a lossy link)
SLOW_RTT_MS = 10.0
SLOW_FACTOR = 3.0
LINK_MIN_SEGS = 500  # fewer data segments on a link say nothing about it


def host_words(name: str) -> str:
    """A shaped testbed host's name in words: b2 -> broker 2, c1 -> client host c1."""
    if name.startswith("b") and name[1:].isdigit():
        return f"broker {name[1:]}"
    return "this machine" if name == "machine" else f"client host {name}"


def pair_words(pair: str) -> str:
    return " and ".join(host_words(h) for h in pair.split("/"))


def carried(row: TrialRow) -> dict[str, int]:
    """The links ("b1/b2") that carried LINK_MIN_SEGS data segments or more, with their segments."""
    return {k: int(s) for k, s in (row.link_data_segs or {}).items() if s and s >= LINK_MIN_SEGS}


def loss_pct(row: TrialRow) -> dict[str, float]:
    """Per carrying link: the share of its data segments TCP resent, %."""
    ret = row.link_retrans or {}
    return {k: 100 * (ret.get(k) or 0) / s for k, s in carried(row).items()}


def rtt_ms(row: TrialRow) -> dict[str, float]:
    """Per carrying link with a round trip read: its median smoothed RTT, ms."""
    rtt = row.link_rtt_ms or {}
    return {k: float(rtt[k]) for k in carried(row) if rtt.get(k) is not None}


def _main_host(flagged: list[str]) -> str | None:
    """The host most flagged links share, when it is one host, it is on two of them or more and the flagged links
    without it are fewer than half as many (a stray one, such as a lossy link beside a delayed host)."""
    top = Counter(h for k in flagged for h in k.split("/")).most_common(2)
    if not top or top[0][1] < 2 or (len(top) > 1 and top[1][1] == top[0][1]):
        return None
    host, n = top[0]
    return host if 2 * (len(flagged) - n) < n else None


def _each(values: dict[str, float], flagged: list[str], fmt: str) -> tuple[str, str]:
    """The flagged links with their values, and the highest of the others."""
    each = ", ".join(f"{pair_words(k)} {fmt.format(values[k])}" for k in flagged)
    others = [v for k, v in values.items() if k not in flagged]
    return each, (f"; every other link ≤ {fmt.format(max(others))}" if others else "")


def _lossy(pct: dict[str, float]) -> str | None:
    """Links resending LOSSY_PCT or more: the host most of them share (_main_host), the pair when only one link
    does."""
    flagged = sorted((k for k, v in pct.items() if v >= LOSSY_PCT), key=lambda k: -pct[k])
    if not flagged:
        return None
    if len(flagged) == 1:  # one path: which of its two ends cannot be told
        each, rest = _each(pct, flagged, "{:.1f} %")
        return f"the link between {pair_words(flagged[0])} drops packets: TCP resent {each}{rest}"
    host = _main_host(flagged)
    if host is None:  # resends scattered over links that share no host: no one link to name
        return None
    mine = [k for k in flagged if host in k.split("/")]
    each, rest = _each(pct, mine, "{:.1f} %")
    of = "each of its links" if len(mine) == sum(host in k.split("/") for k in pct) else "its links"
    return f"{host_words(host)}'s link drops packets: TCP resent a share of the data segments on {of} ({each}){rest}"


def _slow(rtt: dict[str, float]) -> str | None:
    """One host whose every link takes SLOW_RTT_MS or more a round trip, SLOW_FACTOR x the slowest link without it:
    the host most slow links share (_main_host; a stray slow link without it, such as a lossy link whose resends
    stretch its round trips, does not hide it). Slow links that share no host are a loaded
    network (every link queues), not a delay: nothing is said."""
    flagged = sorted((k for k, v in rtt.items() if v >= SLOW_RTT_MS), key=lambda k: -rtt[k])
    host = _main_host(flagged) if len(flagged) >= 2 else None
    if host is None:
        return None
    without = [v for k, v in rtt.items() if host not in k.split("/")]
    mine = [v for k, v in rtt.items() if host in k.split("/")]
    if min(mine) < SLOW_RTT_MS or (without and min(mine) < SLOW_FACTOR * max(without)):
        return None
    each, rest = _each(rtt, [k for k in flagged if host in k.split("/")], "{:.1f} ms")
    return f"{host_words(host)}'s link is slow: TCP round trips on each of its links ({each}){rest}"


def degraded(row: TrialRow) -> str | None:
    """Why links are degraded, packet loss and delay each naming its host when its flagged links share one; None
    when every link is clean."""
    parts = [f for f in (_lossy(loss_pct(row)), _slow(rtt_ms(row))) if f]
    if not parts:
        return None
    lag = number(row.replica_lag_max)
    return "; ".join(parts) + (f"; the furthest follower was {lag:,.0f} messages behind its leader" if lag else "")
