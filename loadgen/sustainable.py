"""The sustainable rate: the highest publish rate a system holds within a latency SLO, its consumers keeping up.

    probe   a short max-rate run: the upper bound U (acknowledged msg/s)
    ramp    one fixed-rate run whose producers step through rates from `low`×U to `high`×U (geometric),
            `step_s` seconds each. A step holds when the producers kept the schedule (sent ≥ 97 % of it),
            the consumers kept up (received ≥ 95 % of it), no send failed, and each p99 the SLO names is
            within it. Latency counts from the intended send time (no coordinated omission). The first
            second of a step is its transition and is not judged. Two missed steps in a row after one that
            held end the ramp (misses before any step held do not: the first seconds spike at any rate).
    answer  the highest step that held below the first of those two, at the rate the consumers received.
    below   a ramp none of whose steps held runs once more, its next `steps` steps below its lowest (same
            ratio): the max rate placed it too high (a max rate moves 35 % between runs here, 7,680 and
            10,350 msg/s for one configuration in one sweep). Its steps are kept as `missed_above`.

OpenMessaging Benchmark's `producerRate: 0` asks the same question (its RateController moves the rate every
3 s from the sent/received backlog); this answers it in two short runs and keeps every step, so the answer
can be checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from cluster.target import Placement
from loadgen import recorder, runner
from loadgen.runner import RawRun
from loadgen.workload import Workload

MB = 1e6
KEPT_SCHEDULE = 0.97  # a step's sends: at least this share of the scheduled messages
KEPT_UP = 0.95  # a step's receives: at least this share of the scheduled messages


@dataclass(frozen=True)
class Slo:
    """The latency a rate must hold: p99 end-to-end and/or p99 publish (ack) latency, ms; None: not judged."""

    p99_e2e_ms: float | None = 100.0
    p99_publish_ms: float | None = None

    def describe(self) -> str:
        parts = [f"p99 end-to-end ≤ {self.p99_e2e_ms:g} ms"] if self.p99_e2e_ms is not None else []
        parts += [f"p99 publish ≤ {self.p99_publish_ms:g} ms"] if self.p99_publish_ms is not None else []
        return " and ".join(parts) or "no latency bound (delivery only)"

    def scaled(self, f: float) -> Slo:
        """Each bound times `f`: the SLO with headroom (f < 1) kept below it."""
        e2e, pub = self.p99_e2e_ms, self.p99_publish_ms
        return Slo(None if e2e is None else e2e * f, None if pub is None else pub * f)


@dataclass(frozen=True)
class Ramp:
    """How the rate is searched: probe and step lengths (s), the ramp's span as fractions of the probe's rate."""

    warmup_s: int = 3
    probe_s: int = 4
    step_s: int = 3
    low: float = 0.5
    high: float = 1.1
    steps: int = 8

    @property
    def ratio(self) -> float:
        """Between two neighbouring steps (above 1; one step: 1)."""
        return (self.high / self.low) ** (1 / (self.steps - 1)) if self.steps > 1 else 1.0

    def fractions(self) -> list[float]:
        return [self.low * self.ratio**i for i in range(self.steps)]

    def below(self) -> Ramp:
        """The next `steps` steps below the lowest, at the same ratio (one step: half of it)."""
        r = self.ratio if self.steps > 1 else 2.0
        return replace(self, low=self.low / r**self.steps, high=self.low / r)


@dataclass
class Step:
    rate_msg_s: float
    start_s: int  # from t0
    judged_s: list[int]
    sent: int = 0
    received: int = 0
    errors: int = 0
    mb_s: float = 0.0  # received, over the judged seconds
    p99_e2e_ms: float | None = None
    p99_publish_ms: float | None = None
    held: bool = False
    why: str = ""


@dataclass
class Sustainable:
    """One configuration's sustainable rate and how it was found (`rate_msg_s` None: no step held)."""

    slo: Slo
    ramp: Ramp
    message_bytes: int
    probe_msg_s: float
    probe_mb_s: float
    steps: list[Step] = field(default_factory=list)
    rate_msg_s: float | None = None
    mb_s: float | None = None
    at_top: bool = False  # the highest step tried held: the rate may be higher
    missed_above: list[Step] = field(default_factory=list)  # a ramp above `ramp` none of whose steps held
    note: str = ""
    probe_s: float = 0.0  # wall time of the probe run and of the ramp run
    ramp_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["slo"]["describe"] = self.slo.describe()
        return d


def schedule(w: Workload, probe_msg_s: float, ramp: Ramp) -> tuple[list[tuple[int, float]], list[int]]:
    """The ramp's (second, msg/s) schedule (warm-up at the first rate) and each step's start second."""
    warm = round(w.warmup_seconds)
    rates = [max(1.0, f * probe_msg_s) for f in ramp.fractions()]
    starts = [warm + i * ramp.step_s for i in range(len(rates))]
    return [(0, rates[0]), *zip(starts, rates, strict=True)], starts


def judge_steps(raw: RawRun, starts: Sequence[int], rates: Sequence[float], step_s: int, slo: Slo) -> list[Step]:
    """Every step whose judged seconds every worker has reported."""
    w = raw.workload
    n_prod = w.topics * w.producersPerTopic
    n_cons = w.topics * w.subscriptionsPerTopic * w.consumerPerSubscription
    by: dict[tuple[str, int], list[runner.Tick]] = {}
    for t in raw.ticks:
        by.setdefault((t.role, t.second), []).append(t)
    out = []
    for start, rate in zip(starts, rates, strict=True):
        judged = list(range(start + 1, start + step_s)) if step_s >= 2 else [start]
        last = judged[-1]
        if len(by.get(("producer", last), [])) < n_prod or len(by.get(("consumer", last), [])) < n_cons:
            break
        prod = [t for s in judged for t in by.get(("producer", s), [])]
        cons = [t for s in judged for t in by.get(("consumer", s), [])]
        st = Step(rate, start, judged)
        st.sent, st.errors = sum(t.sent for t in prod), sum(t.errors for t in prod)
        st.received = sum(t.msgs for t in cons)
        st.mb_s = sum(t.nbytes for t in cons) / len(judged) / MB
        e2e, pub = recorder.merge(t.hist for t in cons), recorder.merge(t.hist for t in prod)
        st.p99_e2e_ms = recorder.percentiles(e2e, [99])[0] / 1000 if e2e.get_total_count() else None
        st.p99_publish_ms = recorder.percentiles(pub, [99])[0] / 1000 if pub.get_total_count() else None
        st.why = _why_not(st, rate * len(judged), slo)
        st.held = not st.why
        out.append(st)
    return out


def _why_not(st: Step, scheduled: float, slo: Slo) -> str:
    if st.errors:
        return f"{st.errors} send(s) failed"
    if st.sent < KEPT_SCHEDULE * scheduled:
        return f"producers fell behind the schedule ({st.sent:,} of {scheduled:,.0f} sent)"
    if st.received < KEPT_UP * scheduled:
        return f"consumers fell behind ({st.received:,} of {scheduled:,.0f} received)"
    for name, limit, got in (("end-to-end", slo.p99_e2e_ms, st.p99_e2e_ms), ("publish", slo.p99_publish_ms,
                                                                            st.p99_publish_ms)):  # fmt: skip
        if limit is None:
            continue
        if got is None:
            return f"no {name} latency sample"
        if got > limit:
            return f"p99 {name} {got:.1f} ms > {limit:g} ms"
    return ""


def judge_run(summary: Mapping[str, Any], rate_msg_s: float, slo: Slo) -> str:
    """Why a whole fixed-rate run at `rate_msg_s` (its result summary) did not hold: the step rules over its
    measure window; "" when it held."""
    secs = summary["window_s"]
    st = Step(rate_msg_s, 0, list(range(secs)), errors=summary["publish_errors"])
    st.sent, st.received = round(summary["send_msg_s"] * secs), round(summary["consume_msg_s"] * secs)
    st.p99_e2e_ms = summary["end_to_end_latency_ms"].get("p99")
    st.p99_publish_ms = summary["publish_latency_ms"].get("p99")
    return _why_not(st, rate_msg_s * secs, slo)


def answer(steps: Sequence[Step]) -> tuple[Step | None, int, bool]:
    """The highest step that held before two misses in a row, how many steps that read, and whether those
    misses ended the ramp.

    Until a step has held, misses are not the system's limit: the first seconds after a max-rate run have
    latency spikes at any rate (measured on the shaped testbed: 540, 320, 180 ms at half the max rate,
    decaying), so they never end the ramp."""
    best, fails = None, 0
    for i, st in enumerate(steps):
        if st.held:
            best, fails = st, 0
        elif best is not None:
            fails += 1
            if fails == 2:
                return best, i + 1, True
    return best, len(steps), False


def timed_workload(w: Workload, rate: float | Literal["max"], warmup_s: float, test_s: float) -> Workload:
    """`w` at `rate` (msg/s, or "max") with the given warm-up and measure window (seconds)."""
    return w.model_copy(
        update={"producerRate": rate, "warmupDurationMinutes": warmup_s / 60, "testDurationMinutes": test_s / 60}
    )


def probe_workload(w: Workload, ramp: Ramp) -> Workload:
    return timed_workload(w, "max", ramp.warmup_s, ramp.probe_s)


def ramp_workload(w: Workload, first_rate: float, ramp: Ramp) -> Workload:
    return timed_workload(w, first_rate, ramp.warmup_s, ramp.steps * ramp.step_s)


@dataclass
class Ramped:
    """A ramp's runs: the one whose steps answer, and the one above it when the ramp went below (`Ramp.below`)."""

    raw: RawRun
    steps: list[Step]
    ramp: Ramp  # the ramp `steps` are from
    above: RawRun | None = None
    missed_above: list[Step] = field(default_factory=list)

    @property
    def runs(self) -> list[RawRun]:
        return [self.raw] if self.above is None else [self.above, self.raw]

    def went_below(self, probe_msg_s: float) -> str | None:
        """What to say when the ramp went below (None when it did not)."""
        a = self.missed_above
        if not a:
            return None
        return (f"no step from {a[0].rate_msg_s:,.0f} to {a[-1].rate_msg_s:,.0f} msg/s held: ramping again below "
                f"them, from {self.ramp.low * probe_msg_s:,.0f} msg/s")  # fmt: skip


def ramp_run(
    w: Workload,
    common: dict[str, str],
    probe_msg_s: float,
    ramp: Ramp,
    slo: Slo,
    *,
    placements: Sequence[Placement] = (None,),
    metrics_urls: Mapping[int, str] | None = None,
    on_tick: runner.View | None = None,
    say: Callable[[str], None] = print,
) -> Ramped:
    """The ramp for an upper bound of `probe_msg_s` (from a probe, or a known one): its run and its steps; when
    none of them held, the ramp below it too (`Ramp.below`)."""

    def one(r: Ramp) -> tuple[RawRun, list[Step]]:
        rw = ramp_workload(w, 1.0, r)
        sched, starts = schedule(rw, probe_msg_s, r)
        rates = [x for _, x in sched[1:]]
        rw = ramp_workload(w, rates[0], r)

        def stop_when(raw: RawRun) -> bool:
            return answer(judge_steps(raw, starts, rates, r.step_s, slo))[2]

        raw = runner.run(rw, common, placements=placements, metrics_urls=metrics_urls, on_tick=on_tick, say=say,
                         schedule=sched, stop_when=stop_when)  # fmt: skip
        return raw, judge_steps(raw, starts, rates, r.step_s, slo)

    raw, steps = one(ramp)
    if any(st.held for st in steps) or len(steps) < ramp.steps:
        return Ramped(raw, steps, ramp)
    lower = ramp.below()
    low_raw, low_steps = one(lower)
    ramped = Ramped(low_raw, low_steps, lower, above=raw, missed_above=steps)
    say(ramped.went_below(probe_msg_s) or "")
    return ramped


def conclude(found: Sustainable, ramped: Ramped) -> Sustainable:
    """The answer from a ramp's steps into `found` (its ramp becomes the one the steps are from)."""
    steps = ramped.steps
    found.ramp, found.missed_above = ramped.ramp, list(ramped.missed_above)
    best, read, _ = answer(steps)
    found.steps = steps[:read]
    if best is None:
        low = steps[0].rate_msg_s if steps else found.probe_msg_s * found.ramp.low
        found.note = (
            f"no step held{' in two ramps' if found.missed_above else ''}: the sustainable rate is below "
            f"{low:,.0f} msg/s ({low * found.message_bytes / MB:.2f} MB/s), the lowest tried"
        )
        return found
    found.rate_msg_s, found.mb_s = best.rate_msg_s, best.mb_s
    # the top of a ramp that went below is bounded by the ramp above it
    found.at_top = best is steps[-1] and read == len(found.ramp.fractions()) and not found.missed_above
    found.note = (
        "the highest step tried held: the sustainable rate may be higher"
        if found.at_top
        else "bounded by the ramp above, none of whose steps held"
        if found.missed_above and best is steps[-1]
        else "bounded by the next steps"
    )
    return found


def probe_rate(probe: RawRun) -> float:
    """Acknowledged msg/s over a max-rate run's measure window."""
    pw = probe.workload
    secs = max(1, runner.measured_seconds(pw.warmup_seconds, pw.test_seconds))
    meas = [
        tk
        for tk in probe.ticks
        if tk.role == "producer" and runner.phase_of(tk.second, pw.warmup_seconds, pw.test_seconds) == "measure"
    ]
    return sum(tk.msgs for tk in meas) / secs


def discover(
    w: Workload,
    common: dict[str, str],
    slo: Slo,
    ramp: Ramp,
    *,
    placements: Sequence[Placement] = (None,),
    metrics_urls: Mapping[int, str] | None = None,
    on_tick: runner.View | None = None,
    say: Callable[[str], None] = print,
) -> tuple[RawRun, Ramped, Sustainable]:
    """Probe, then ramp (and below it when no step held): the runs and the answer."""
    t = time.monotonic()
    probe = runner.run(probe_workload(w, ramp), common, placements=placements, metrics_urls=metrics_urls,
                       on_tick=on_tick, say=say)  # fmt: skip
    u = probe_rate(probe)
    probe_s = time.monotonic() - t
    say(f"probe at max rate: {u:,.0f} msg/s ({u * w.messageSize / MB:.2f} MB/s); ramp {ramp.low:g}–{ramp.high:g}× that")
    found = Sustainable(slo, ramp, w.messageSize, u, u * w.messageSize / MB, probe_s=probe_s)
    if u <= 0:
        found.note = "the probe acknowledged nothing: no rate to ramp to"
        return probe, Ramped(probe, [], ramp), found
    t = time.monotonic()
    ramped = ramp_run(w, common, u, ramp, slo, placements=placements, metrics_urls=metrics_urls, on_tick=on_tick,
                      say=say)  # fmt: skip
    found.ramp_s = time.monotonic() - t
    return probe, ramped, conclude(found, ramped)
