"""More producer processes when the load generator, not the cluster, held a max-rate run back.

A max-rate run is the cluster's throughput only when every producer waited on the cluster (a full buffer) some of
the time. A producer that did not, or whose send loop took `clientside.LOOP_HOT` of a core, was the limit itself: the
run is done again with twice the producer processes, until none was or the processes would outnumber the cores
the workers run on. Each run is kept in `steps` (processes, MB/s, the loops' CPU); the record
is the last run's, and says it was scaled out and why. Fixed-rate and rate-discovery runs keep their processes
(the rate is set, not found by blasting), and so does a workload that asks for it (`--no-scale-out`).
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cluster.target import Placement
from core.units import MB
from drivers.api import load_driver
from loadgen import clientside, runner
from loadgen.workload import Workload
from records.result import ScaledOut, ScaleStep

Say = Callable[[str], None]


@dataclass
class ScaleOut:
    """What scaling out did: one step per run, in order (the last one is the record's)."""

    cap: int  # the most producer processes per topic it would run
    steps: list[ScaleStep] = field(default_factory=list)

    @property
    def scaled(self) -> bool:
        return len(self.steps) > 1

    def record(self) -> ScaledOut:
        """What the run record keeps of it (result.json's `scaled_out`)."""
        first, last = self.steps[0], self.steps[-1]
        return ScaledOut(first.producers, last.producers, self.cap, first.why, tuple(self.steps))


def cores_for_workers(placements: Sequence[Placement]) -> int:
    """The cores the producer processes can use: this machine's (its network namespaces share them), once per
    remote client host (taken to be alike; a sweep of producers is the tool for anything finer)."""
    remote = {id(p) for p in placements if p is not None and not isinstance(p, str)}
    return (os.cpu_count() or 1) * max(1, len(remote) + (len(remote) < len(placements)))


def _measured(raw: runner.RawRun) -> tuple[int, list[runner.Tick]]:
    """The measure window's length (s) and the producers' ticks in it."""
    w = raw.workload
    window = max(1, runner.measured_seconds(w.warmup_seconds, raw.test_s))
    ticks = [
        t
        for t in raw.ticks
        if t.role == "producer" and runner.phase_of(t.second, w.warmup_seconds, raw.test_s) == "measure"
    ]
    return window, ticks


def _limited(raw: runner.RawRun) -> list[str]:
    """Why each producer that was the limit itself was (empty: none was): its send loop at `clientside.LOOP_HOT`
    of a core, or (a driver whose full buffer is the system's back-pressure) the cluster never pushed back on it
    (`clientside.never_waited`: its loop may read lower on cores it shares with the brokers, runnable, not run)."""
    w = raw.workload
    window, measure = _measured(raw)
    full: Counter[int] = Counter(dict.fromkeys(raw.producers, 0))
    for t in measure:
        full[t.wid] += t.buffer_full
    loops = clientside.loop_util_by_worker(raw)
    backpressure = load_driver(w.driver).full_buffer_backpressure
    linger = w.str_map("producerConfig").get("linger.ms")
    why = []
    for wid, n in sorted(full.items()):
        loop = loops.get(("producer", wid), 0.0)
        stats = p.client_stats if (p := raw.producers.get(wid)) else ()
        queue = [x["queue_ms"] for x in stats if "queue_ms" in x]
        never = clientside.never_waited(
            n, window, statistics.median(queue) if queue else None, float(linger) if linger is not None else None
        )
        if loop >= clientside.LOOP_HOT:
            why.append(f"producer {wid}'s send loop used {loop:.0%} of a core")
        elif backpressure and never:
            why.append(f"the cluster never pushed back on producer {wid} ({never})")
    return why


def _step(raw: runner.RawRun, why: list[str]) -> ScaleStep:
    window, measure = _measured(raw)
    return ScaleStep(
        raw.workload.producersPerTopic,
        round(sum(t.nbytes for t in measure) / window / MB, 3),
        tuple(round(u, 3) for u in clientside.loop_utils(raw).get("producer", [])),
        sum(t.buffer_full for t in measure),
        "; ".join(why) + ": the load generator, not the cluster, was the limit" if why else "",
    )


def run(w: Workload, at: runner.RunSettings, *, cap: int, keep_topics: bool = False) -> tuple[runner.RawRun, ScaleOut]:
    """`runner.run(w, at)`, again with twice the producer processes while a send loop was hot (max-rate runs only;
    at most `cap` processes per topic). Returns the last run and what scaling out did."""
    say = at.say
    raw = runner.run(w, at, keep_topics=keep_topics)
    out = ScaleOut(cap)
    if w.fixed_rate or w.discovers_rate or w.builds_backlog:
        return raw, out
    hot = _limited(raw)
    out.steps.append(_step(raw, hot))
    while hot and w.producersPerTopic * 2 <= cap:
        n = w.producersPerTopic * 2
        say(f"scaling out to {n} producer processes per topic: {out.steps[-1].why}")
        w = w.model_copy(update={"producersPerTopic": n})
        raw = runner.run(w, at, keep_topics=keep_topics)
        hot = _limited(raw)
        out.steps.append(_step(raw, hot))
    if hot:
        say(
            f"the send loops were still the limit with {w.producersPerTopic} producer processes per topic "
            f"(at most {cap} here): the figure is the load generator's"
        )
    return raw, out
