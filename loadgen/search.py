"""The sustainable rate, searched for in one steered run: bracket, bisect, confirm just below the knee.

    probe    a short max-rate run of the search's own: the upper bound U (acknowledged msg/s). Every search probes:
             a repeat never takes another's probe, so no two repeats share a grid of rates.
    bracket  the first step at `start`×U; a step that held puts the next one `grow`× higher, one that missed
             `grow`× lower, until one step held and a higher one missed (at most `cap`×U: a rate above the maximum
             cannot keep its schedule, so a step held there ends the search, `at_top`).
    bisect   the geometric middle of the highest rate that held and the lowest that missed, until they are within
             `resolution` of each other.
    confirm  the highest rate that held runs once more, as a step of its own: it is the answer only when it holds
             again. When it misses, the rate did not hold on re-measurement: it becomes the lowest miss, that is
             said (`remeasured`), and the search goes on below it.
    a step   is judged on its own seconds, after it settled (the first second, and after a missed step until the
             consumers have drained what it left behind). Its figures are cumulative over its judged seconds and
             it is decided as soon as they are clear: after at least `min_step_s` judged seconds, and enough for
             TAIL_SAMPLES latencies beyond the SLO's percentile at its rate (so the percentile is estimated from its
             tail, not from one second), it holds early when every p99 is within `early_hold` of the SLO; it misses
             early when one is beyond `early_miss` of it and either every judged second's own p99 is too (the load)
             or twice those seconds have passed (a transient second can carry a short step's p99 over: on a fresh
             shaped testbed two steps missed early after 5 s at rates that held in every other search,
             benchmarks/results/reproducibility.json; and an overloaded step left running leaves the brokers slower
             for tens of seconds after it, docs/measurement.md); a failed send misses at once; otherwise it runs
             `max_step_s` judged seconds. A step near the knee therefore runs longest, because a short window's p99
             is mostly chance: between the windows of one fixed-rate run, a p99 over a few seconds spreads several
             times as widely as one over half a minute (benchmarks/step_length.py, benchmarks/results/step_length.json).

The rules a step is held by are loadgen.sustainable's (schedule kept, consumers keeping up, no failed send, each p99
the SLO names within it; latency from the intended send time). OpenMessaging Benchmark's `producerRate: 0` asks the
same question with a rate controller; Conduktor's fork of it documents this bracket-bisect-confirm approach.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from core.units import MB
from loadgen import recorder, runner
from loadgen.knee import fit_knee
from loadgen.runner import RawRun, RunSettings
from loadgen.sustainable import Search, Slo, Sustainable, probe_rate, timed_workload, why_not
from loadgen.workload import Workload
from records.result import Step

# At most this many seconds after a missed step are spent waiting for the consumers to catch up before judging.
MAX_SETTLE_S = 10
# The next rate starts this many seconds after the last second the coordinator has every tick of. A second's ticks
# arrive just after it ends: workers on this host (or its namespaces) read the step within
# loadgen.worker.STEP_READ_NS, so it starts on the next second, already begun, which is not judged; workers on
# remote hosts get it relayed over SSH and read it once it arrives, so it starts a second later.
LOCAL_LEAD_S = 1
LEAD_S = 2


@dataclass
class _Open:
    """The step being measured: its rate, first second, and what its judged seconds added up to so far."""

    rate: float
    start_s: int
    phase: str
    judged_from: int | None = None  # the first judged second (None: still settling)
    judged: list[int] = field(default_factory=list)
    sent: int = 0
    received: int = 0
    errors: int = 0
    nbytes: int = 0
    e2e: HdrHistogram = field(default_factory=recorder.new_histogram)
    pub: HdrHistogram = field(default_factory=recorder.new_histogram)
    second_p99_ms: list[float] = field(default_factory=list)  # each judged second's own p99 end-to-end


class Searcher:
    """The search as a runner `Steer`: after every tick it judges the open step over the seconds every worker has
    reported, decides it when its figures are clear, and publishes the next rate; True once the answer is known."""

    def __init__(
        self,
        w: Workload,
        probe_msg_s: float,
        search: Search,
        slo: Slo,
        say: Callable[[str], None],
        lead_s: int = LEAD_S,
    ) -> None:
        self.w, self.u, self.s, self.slo, self.say = w, probe_msg_s, search, slo, say
        self.lead_s = lead_s
        self.n_prod = w.topics * w.producersPerTopic
        self.n_cons = w.topics * w.subscriptionsPerTopic * w.consumerPerSubscription
        self.steps: list[Step] = []
        self.remeasured: list[str] = []
        self.answer: Step | None = None
        self.at_top = False
        self.done = False
        self.first = max(1.0, search.start * probe_msg_s)
        self.open = _Open(self.first, round(w.warmup_seconds), "bracket")
        self._seen = 0  # ticks of raw.ticks already counted
        self._count: Counter[tuple[str, int]] = Counter()  # ticks in by role and second
        self._by_second: dict[int, list[runner.Tick]] = {}
        self._next_second = 0  # the first second not yet complete
        self._sent_total = self._received_total = 0
        self._sent_before = 0  # sent before the open step began: received in full once what it left has drained

    # ---- the runner's side ----------------------------------------------------------------------------------------
    def __call__(self, raw: RawRun, publish: runner.Publish) -> bool:
        for t in raw.ticks[self._seen :]:
            self._count[(t.role, t.second)] += 1
            self._by_second.setdefault(t.second, []).append(t)
        self._seen = len(raw.ticks)
        while not self.done and self._complete(self._next_second):
            self._second(self._next_second, publish)
            self._next_second += 1
        return self.done

    def _complete(self, s: int) -> bool:
        return self._count["producer", s] >= self.n_prod and self._count["consumer", s] >= self.n_cons

    def _second(self, s: int, publish: runner.Publish) -> None:
        ticks = self._by_second.pop(s, [])
        sent = sum(t.sent for t in ticks if t.role == "producer")
        received = sum(t.msgs for t in ticks if t.role == "consumer")
        self._sent_total += sent
        self._received_total += received
        o = self.open
        if s < o.start_s:
            return
        if s == o.start_s:
            self._sent_before = self._sent_total - sent
        if o.judged_from is None:
            owed = self._sent_before - self._received_total
            if s == o.start_s or (owed > 0.05 * o.rate and s < o.start_s + MAX_SETTLE_S):
                return  # the transition: the rate changes in this second, or the last step's backlog still drains
            o.judged_from = s
        o.judged.append(s)
        o.sent += sent
        o.received += received
        o.errors += sum(t.errors for t in ticks if t.role == "producer")
        o.nbytes += sum(t.nbytes for t in ticks if t.role == "consumer")
        for t in ticks:
            if t.hist and t.role == "producer":
                o.pub.decode_and_add(t.hist)
        own = recorder.merge(t.hist for t in ticks if t.role == "consumer")  # decoded once: the second's, the step's
        o.e2e.add(own)
        o.second_p99_ms.append(recorder.percentiles(own, [99])[0] / 1000 if own.get_total_count() else 0.0)
        st = self._decide(o)
        if st is not None:
            self._close(st, s, publish)

    # ---- judging a step -------------------------------------------------------------------------------------------
    def _figures(self, o: _Open) -> Step:
        st = Step(o.rate, o.start_s, list(o.judged), sent=o.sent, received=o.received, errors=o.errors)
        st.mb_s = o.nbytes / max(1, len(o.judged)) / MB
        st.p99_e2e_ms = recorder.percentiles(o.e2e, [99])[0] / 1000 if o.e2e.get_total_count() else None
        st.p99_publish_ms = recorder.percentiles(o.pub, [99])[0] / 1000 if o.pub.get_total_count() else None
        st.phase = o.phase
        return st

    def _decide(self, o: _Open) -> Step | None:
        """The step's verdict once its figures are clear (early) or its judged seconds are all in; None: go on."""
        n, s = len(o.judged), self.s
        st = self._figures(o)
        scheduled = o.rate * n
        st.why = why_not(st, scheduled, self.slo)
        if n >= s.max_step_s:
            st.held = not st.why
            return st
        if st.errors:
            return st
        if n < s.judged_at_least(o.rate):
            return None
        if not why_not(st, scheduled, self.slo.scaled(s.early_hold)):
            st.held, st.early = True, True
            return st
        # a miss needs twice the seconds (one transient second can carry a short step's p99 over), unless every
        # second missed: the load itself, and an overloaded step left running builds a backlog the next step inherits
        if n < 2 * s.judged_at_least(o.rate) and not self._every_second_beyond(o):
            return None
        if far := why_not(st, scheduled, self.slo.scaled(s.early_miss)):
            st.early = True
            st.why = f"{far} ({s.early_miss:g}× the SLO: missed early)" if far.startswith("p99") else far
            return st
        return None

    def _every_second_beyond(self, o: _Open) -> bool:
        """Every judged second's own p99 end-to-end beyond `early_miss` of the SLO (False without such an SLO)."""
        bound = self.slo.p99_e2e_ms
        return bound is not None and min(o.second_p99_ms, default=0.0) > self.s.early_miss * bound

    def _close(self, st: Step, s: int, publish: runner.Publish) -> None:
        self.steps.append(st)
        self.say(_step_words(st, len(self.steps)))
        nxt, phase = self._next(st)
        if nxt is None or len(self.steps) >= self.s.max_steps:
            self.done = True
            return
        start = s + self.lead_s
        publish(start, nxt)
        self.open = _Open(nxt, start, phase)

    # ---- where to go next -----------------------------------------------------------------------------------------
    def _bounds(self) -> tuple[Step | None, Step | None]:
        """The highest held step below the lowest missed one (its rate never since missed), and that missed one."""
        missed = min((x for x in self.steps if not x.held), key=lambda x: x.rate_msg_s, default=None)
        below = [x for x in self.steps if x.held and (missed is None or x.rate_msg_s < missed.rate_msg_s)]
        below = [x for x in below if not any(not y.held and y.rate_msg_s == x.rate_msg_s for y in self.steps)]
        return max(below, key=lambda x: x.rate_msg_s, default=None), missed

    def _next(self, st: Step) -> tuple[float | None, str]:
        """The next step's rate and phase; None: the search is over (`answer` set when a rate was confirmed)."""
        s = self.s
        if st.phase == "confirm":
            if st.held:
                self.answer = st
                return None, ""
            self.remeasured.append(
                f"{st.rate_msg_s:,.0f} msg/s held, then missed when measured again ({st.why}): searching below it"
            )
        lo, hi = self._bounds()
        if lo is None:  # nothing held below the lowest miss: bracket down
            r = (hi.rate_msg_s if hi else self.first) / s.grow
            return (r, "bracket") if r >= 1.0 and r >= self.u * 0.02 else (None, "")
        if hi is None:  # nothing missed yet: bracket up, to the cap
            if lo.rate_msg_s >= s.cap * self.u * 0.999:
                self.at_top = True
                return lo.rate_msg_s, "confirm"
            return min(lo.rate_msg_s * s.grow, s.cap * self.u), "bracket"
        if hi.rate_msg_s / lo.rate_msg_s <= 1 + s.resolution:
            return lo.rate_msg_s, "confirm"
        return math.sqrt(lo.rate_msg_s * hi.rate_msg_s), "bisect"


def _step_words(st: Step, i: int) -> str:
    how = f"{len(st.judged_s)} s{' (decided early)' if st.early else ''}"
    p99 = f"p99 e2e {st.p99_e2e_ms:.1f} ms" if st.p99_e2e_ms is not None else "no end-to-end sample"
    verdict = "held" if st.held else f"missed: {st.why}"
    return f"step {i} ({st.phase}) {st.rate_msg_s:,.0f} msg/s, {how}: {st.mb_s:.2f} MB/s, {p99}, {verdict}"


def search_run(w: Workload, at: RunSettings, probe_msg_s: float, search: Search, slo: Slo) -> tuple[RawRun, Searcher]:
    """One steered run searching under the upper bound `probe_msg_s`: the run and the search's state."""
    remote = any(p is not None and not isinstance(p, str) for p in at.placements)  # str: a namespace of this host
    sr = Searcher(w, probe_msg_s, search, slo, at.say, LEAD_S if remote else LOCAL_LEAD_S)
    rw = timed_workload(w, sr.first, search.warmup_s, search.longest_run_s(MAX_SETTLE_S + sr.lead_s + 1))
    raw = runner.run(rw, at, schedule=[(0, sr.first)], steer=sr)
    return raw, sr


def conclude(found: Sustainable, sr: Searcher) -> Sustainable:
    """The search's answer into `found`."""
    found.steps, found.remeasured, found.at_top = list(sr.steps), list(sr.remeasured), sr.at_top
    best = sr.answer
    if best is None:
        held = [x for x in sr.steps if x.held]
        low = min((x.rate_msg_s for x in sr.steps), default=found.probe_msg_s * sr.s.start)
        top = max((x.rate_msg_s for x in held), default=0.0)
        found.below_mb_s = (top if held else low) * found.message_bytes / MB  # nothing this fast held twice
        found.note = (
            f"no rate held twice in {len(sr.steps)} steps (the highest held once: {top:,.0f} msg/s)"
            if held
            else f"no step held: the sustainable rate is below {low:,.0f} msg/s "
            f"({low * found.message_bytes / MB:.2f} MB/s), the lowest tried"
        )
        knee = fit_knee(sr.steps, sr.s.max_step_s // 2)
        if knee is not None and (why := knee.not_load()):  # stepping lower is no way out: say so, with the fit
            found.note += f"; {why}, and a lower rate will not hold it either"
        return found
    found.rate_msg_s, found.mb_s = best.rate_msg_s, best.mb_s
    _, hi = sr._bounds()
    found.note = (
        f"held at {sr.s.cap:g}× the max-rate probe, the highest the search tries"
        if found.at_top
        else f"held twice; {hi.rate_msg_s:,.0f} msg/s missed ({hi.rate_msg_s / best.rate_msg_s - 1:.0%} higher)"
        if hi is not None
        else "held twice"
    )
    return found


def discover(w: Workload, at: RunSettings, slo: Slo, search: Search) -> tuple[RawRun, RawRun | None, Sustainable]:
    """Probe, then search: the probe run, the search run (None when the probe acknowledged nothing), the answer."""
    t = time.monotonic()
    pw = timed_workload(w, "max", search.warmup_s, search.probe_s)
    probe = runner.run(pw, at)
    u = probe_rate(probe)
    found = Sustainable(slo, search, w.messageSize, u, u * w.messageSize / MB, probe_s=time.monotonic() - t)
    first = f"first step at {search.start:g}× that"
    at.say(f"probe at max rate: {u:,.0f} msg/s ({u * w.messageSize / MB:.2f} MB/s); {first}")
    if u <= 0:
        found.note = "the probe acknowledged nothing: no rate to search under"
        return probe, None, found
    t = time.monotonic()
    raw, sr = search_run(w, at, u, search, slo)
    found.ramp_s = time.monotonic() - t
    return probe, raw, conclude(found, sr)
