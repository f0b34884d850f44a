"""Faults nobody planned, read from a run's broker metrics (loadgen.result's broker rows, one per broker per
second): a broker that restarted or could not be scraped (for a while, to the window's end, or at all), ISR that
shrank, partitions under-replicated, the active controller moving. A sweep re-runs a trial whose measurement
window shows any of them instead of feeding its dip to the optimizer (sweeps.trial)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from records.result import RunSummary
from records.seconds import BrokerSecond

# A broker not scraped for this long (its exporter did not answer: the process was down or stalled).
GAP_S = 3.0


def disturbances(rows: Iterable[BrokerSecond], phase: str = "measure", brokers: Iterable[int] = ()) -> list[str]:
    """What happened to the cluster in the rows of `phase`, first occurrence of each kind per broker, in words.

    `brokers`: the ids whose metrics were scraped. A gap shows in a broker's next row, so a broker that never
    answered again left none: one with no row in the phase, or whose rows end more than GAP_S before the other
    brokers' do, was down or stalled to the window's end (killed in it and never back, or dead all along)."""
    found: dict[tuple[str, int], str] = {}
    in_phase = sorted((r for r in rows if r.phase == phase), key=lambda r: (r.second, r.broker_id))

    def note(kind: str, broker: int, text: str) -> None:
        found.setdefault((kind, broker), text)

    controller: dict[int, int] = {}  # second -> the broker that was the active controller in it
    for r in in_phase:
        b, s = r.broker_id, r.second
        if r.restarted:
            note("restart", b, f"broker {b} restarted (its counters started again) by second {s}")
        if (r.interval_s or 0.0) > GAP_S:
            note("gap", b, f"broker {b} could not be scraped for {r.interval_s:.0f} s before second {s}")
        if (r.isr_shrinks_per_s or 0.0) > 0:
            note("isr", b, f"broker {b}: ISR shrank in second {s}")
        if (r.under_replicated or 0.0) > 0:
            note("urp", b, f"broker {b}: {r.under_replicated:.0f} under-replicated partition(s) in second {s}")
        if r.active_controller == 1.0:
            controller[s] = b
    if in_phase:
        end = max(r.second for r in in_phase)
        for b in sorted(set(brokers)):
            mine = [r.second for r in in_phase if r.broker_id == b]
            if not mine:
                note("gap", b, f"broker {b} could not be scraped in the whole {phase} window")
            elif end - max(mine) > GAP_S:
                note("gap", b, f"broker {b} could not be scraped after second {max(mine)} (the window ran to {end})")
    seconds = sorted(controller)
    for prev, cur in itertools.pairwise(seconds):
        a, b = controller[prev], controller[cur]
        if a != b:
            note("controller", b, f"the active controller moved from broker {a} to {b} in second {cur}")
    return list(found.values())


def nothing_consumed(summary: RunSummary) -> str | None:
    """What a run's consumers said when none of them received any of its acknowledged records (loadgen.clientside;
    a run without consumers says nothing): after a rolling restart a consumer group once formed with no partition
    assigned, and the trial recorded 0 MB/s. Such a run measured no consumption, so it is measured again like a
    disturbed one. None when something was consumed."""
    said = [w for w in summary.warnings if w.startswith("no consumer received anything")]
    return said[0] if said and not summary.consumed else None
