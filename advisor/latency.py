"""Latency against an SLO: where a record's time goes (the producer's queue, the broker's produce time split, the
network, the consumer's side), which fixed-rate runs broke the SLO, and the rule that names the setting to move.
"""

from __future__ import annotations

import pandas as pd

from advisor import diagnose
from advisor.context import Context
from advisor.fixes import latency_fix
from advisor.recommendation import Recommendation
from advisor.trials import complete
from core.units import number
from loadgen.sustainable import Slo
from records.analysis import trial_rows
from records.trialrow import TrialRow

# Where a record's latency goes, in the order it happens, and the setting that moves each part (fixes in
# advisor.fixes.latency_fix). Producer side from its own statistics, broker side from the produce request's
# time split, the consumer side as end-to-end minus publish latency (medians).
LATENCY_PARTS = {
    "client_queue_ms": "waiting in the producer's queue for its batch to be sent (linger.ms, batch.size)",
    **diagnose.TIME_PARTS,
    "network_ms": "on the network and in the clients' I/O (the round trip outside the broker)",
    "consumer_ms": "between the acknowledgement and the consumer's handler (fetch wait, backlog, processing)",
}


def latency_split(row: TrialRow) -> list[tuple[str, float]]:
    """A record's median latency by part (LATENCY_PARTS), ms, largest first; parts not measured are left out."""
    parts = {k: number(getattr(row, k)) for k in ("client_queue_ms", *diagnose.TIME_PARTS)}
    rtt, broker = number(row.client_rtt_ms), number(row.produce_total_ms)
    if rtt is not None and broker is not None:
        parts["network_ms"] = max(0.0, rtt - broker)
    e2e, pub = number(row.e2e_p50_ms), number(row.publish_p50_ms)
    if e2e is not None and pub is not None:
        parts["consumer_ms"] = max(0.0, e2e - pub)
    return sorted(((k, v) for k, v in parts.items() if v is not None), key=lambda kv: -kv[1])


def slo_misses(row: TrialRow, slo: Slo) -> list[str]:
    """The SLO's p99s this row's run broke, said with both figures; only a fixed-rate run's latency counts
    (at the maximum rate records wait in a full buffer by design)."""
    if row.rate_mode != "fixed-rate":
        return []
    out = []
    for limit, col, what in (
        (slo.p99_e2e_ms, "e2e_p99_ms", "end-to-end"),
        (slo.p99_publish_ms, "publish_p99_ms", "publish"),
    ):
        got = number(getattr(row, col))
        if limit is not None and got is not None and got > limit:
            out.append(f"p99 {what} {got:.1f} ms > the SLO's {limit:g} ms")
    return out


def rule_latency(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """Fixed-rate runs that broke the latency SLO: where the time went, and the setting that moves the largest
    part. The parts are medians (the split of a typical record), the miss is the p99."""
    slo = ctx.slo
    out = []
    for t in trial_rows(complete(trials)):
        # a sustainable-rate trial's record is its search, whose steps above the sustainable rate miss the SLO by
        # design; the operating point's runs are the sweep's own search for a rate that holds it
        if t.sustainable_mb_s is not None or str(t.stage or "").startswith("hold"):
            continue
        misses = slo_misses(t, slo)
        split = latency_split(t) if misses else []
        if not split:
            continue
        part, ms = split[0]
        total = sum(v for _, v in split)
        ev = [f"{t.trial_id}: {'; '.join(misses)}"] + [
            f"{v:.1f} ms ({v / total:.0%}) {LATENCY_PARTS[k]}" for k, v in split if total and v >= 0.05
        ]
        out.append(
            Recommendation(
                "latency-slo",
                f"The SLO is missed: most of a record's time ({ms:.1f} ms of {total:.1f}) is spent "
                f"{LATENCY_PARTS[part]}",
                action=latency_fix(part, t, ctx.brokers, slo.p99_e2e_ms),
                evidence=ev,
                trials=[t.trial_id],
                severity="high",
            )
        )
    return out[:3]
