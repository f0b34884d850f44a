"""Was a missing message lost, or only not consumed in time? Read the log again before the topics go.

A run counts a message lost when it was acknowledged and no consumer received it before the drain ended. That can
also mean a consumer stopped draining before it reached a partition whose leader moved (a bounced broker): the
message is in the log, only late. So when any acknowledged message is missing, the run's topics are read again
from their beginning to their end (drivers.api.Driver.replay) and every missing sequence number is looked up:
found in the log, it was not consumed in time; not found, it was lost. Only the lost fail a run (loadgen.result).
A system that keeps no log to read again leaves the count unverified, and says so.
"""

from __future__ import annotations

import numpy as np

from drivers import api
from loadgen import payload
from loadgen.rawrun import RawRun, Verified


def missing(raw: RawRun) -> dict[int, set[int]]:
    """Per producer, the acknowledged sequence numbers some subscription did not receive."""
    subs = max(1, raw.workload.subscriptionsPerTopic)
    out: dict[int, set[int]] = {}
    if raw.workload.subscriptionsPerTopic == 0:
        return out
    for pid in raw.producers:
        acked, counts = raw.receipts(pid)
        gone = np.flatnonzero((acked == 1) & (counts < subs))
        if gone.size:
            out[pid] = {int(x) for x in gone}
    return out


def verify(raw: RawRun, drv: api.Driver) -> Verified | None:
    """None when nothing acknowledged is missing; else whether the log could be read again and, per producer, the
    missing sequence numbers found in it."""
    gone = missing(raw)
    if not gone:
        return None
    unpack = payload.unpacker(raw.workload.messageSize)
    found: dict[int, set[int]] = {pid: set() for pid in gone}
    for topic in raw.topics:
        replay = drv.replay(topic)
        if replay is None:
            return Verified(False, sum(len(v) for v in gone.values()))
        for data in replay:
            pid, seq, _ = unpack(data)
            if seq in gone.get(pid, ()):
                found[pid].add(seq)
    in_log = {pid: tuple(sorted(seqs)) for pid, seqs in found.items() if seqs}
    return Verified(True, sum(len(v) for v in gone.values()), in_log)
