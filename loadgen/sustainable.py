"""The sustainable rate: the highest publish rate a system holds within a latency SLO, its consumers keeping up.

What it is made of, shared by the search that finds it (loadgen.search) and everything that reads its record:

    Slo          the latency a rate must hold: p99 end-to-end and/or p99 publish
    Search       how the search runs: its probe, its steps' lengths, how it brackets and bisects
    Step         one rate the search held for a while, and its verdict (records.result.Step)
    Sustainable  one search's answer: its probe, every step, the rate that held twice (None: none did)

A step holds when the producers kept the schedule (sent ≥ KEPT_SCHEDULE of it), the consumers kept up (received ≥
KEPT_UP of it), no send failed, and each p99 the SLO names is within it (`why_not`); latency counts from the
intended send time (no coordinated omission). The same rules judge an operating-point run as a whole
(`judge_run`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as checked_dataclass

from loadgen import runner
from loadgen.runner import RawRun
from loadgen.workload import Workload
from records.result import RunSummary, SloWritten, Step
from records.result import Sustainable as Sustained

KEPT_SCHEDULE = 0.97  # a step's sends: at least this share of the scheduled messages
KEPT_UP = 0.95  # a step's receives: at least this share of the scheduled messages
# A step's percentile is estimated from at least this many latencies beyond it (at 1,000 msg/s, a p99 needs 20 s).
TAIL_SAMPLES = 200


@checked_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Slo:
    """The latency a rate must hold: p99 end-to-end and/or p99 publish (ack) latency, ms; None: not judged.

    The one SLO class: a sweep spec's `slo` section is validated into it (sweeps.settings.SpecSlo), so each bound
    is checked (> 0) wherever one is made."""

    p99_e2e_ms: Annotated[float, Field(gt=0)] | None = 100.0
    p99_publish_ms: Annotated[float, Field(gt=0)] | None = None

    def bounds_latency(self) -> bool:
        return self.p99_e2e_ms is not None or self.p99_publish_ms is not None

    def to_json(self) -> dict[str, float | None]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> Slo:
        """The SLO a record wrote with to_json; no bound for a record without one (None)."""
        d = d or {}
        return cls(d.get("p99_e2e_ms"), d.get("p99_publish_ms"))

    def describe(self) -> str:
        parts = [f"p99 end-to-end ≤ {self.p99_e2e_ms:g} ms"] if self.p99_e2e_ms is not None else []
        parts += [f"p99 publish ≤ {self.p99_publish_ms:g} ms"] if self.p99_publish_ms is not None else []
        return " and ".join(parts) or "no latency bound (delivery only)"

    def scaled(self, f: float) -> Slo:
        """Each bound times `f`: the SLO with headroom (f < 1) kept below it, or a margin beyond it (f > 1)."""
        e2e, pub = self.p99_e2e_ms, self.p99_publish_ms
        return Slo(None if e2e is None else e2e * f, None if pub is None else pub * f)


@dataclass(frozen=True)
class Search:
    """How the sustainable rate is searched for (loadgen.search): seconds, and fractions of the probe's rate."""

    warmup_s: int = 3  # the search run's warm-up, at its first step's rate
    probe_s: int = 4  # the max-rate probe's measured seconds (after the same warm-up)
    start: float = 0.7  # the first step
    grow: float = 1.25  # bracketing: each step this much above a held one, or below a missed one
    cap: float = 1.3  # no step above this
    resolution: float = 0.06  # bisecting ends when the highest held and the lowest missed are this close
    min_step_s: int = 5  # judged seconds before a step may be decided early
    max_step_s: int = 30  # judged seconds of a step that is not decided early
    early_hold: float = 0.6  # held early: every p99 within this share of the SLO
    early_miss: float = 1.6  # missed early: a p99 beyond this multiple of the SLO
    max_steps: int = 12

    def judged_at_least(self, rate_msg_s: float, percentile: float = 99.0) -> int:
        """Judged seconds before a step at `rate_msg_s` may be decided early: `min_step_s`, or enough for
        TAIL_SAMPLES beyond `percentile` at that rate (at most `max_step_s`)."""
        tail = TAIL_SAMPLES / max(1e-9, (1 - percentile / 100) * rate_msg_s)
        return min(self.max_step_s, max(self.min_step_s, math.ceil(tail)))

    def longest_run_s(self, per_step_overhead_s: float) -> float:
        """An upper bound on a search run's length (its workload's test duration; the search ends it sooner)."""
        return self.warmup_s + self.max_steps * (self.max_step_s + per_step_overhead_s)


@dataclass
class Sustainable:
    """One search's sustainable rate and how it was found (`rate_msg_s` None: no rate held twice)."""

    slo: Slo
    search: Search
    message_bytes: int
    probe_msg_s: float
    probe_mb_s: float
    steps: list[Step] = field(default_factory=list)
    rate_msg_s: float | None = None
    mb_s: float | None = None
    at_top: bool = False  # held at the search's cap: the rate may be higher
    remeasured: list[str] = field(default_factory=list)  # rates that held, then missed when measured again
    note: str = ""
    below_mb_s: float | None = None  # no rate held twice: none at or above this rate did (search.conclude)
    probe_s: float = 0.0  # wall time of the probe run and of the search run
    ramp_s: float = 0.0

    def tail_seconds(self) -> list[int]:
        """The seconds a tail budget reads: those of the steps that held (a missed step breaks the SLO by design);
        every judged second when none held (then every one says why)."""
        held = [s for st in self.steps if st.held for s in st.judged_s]
        return held or [s for st in self.steps for s in st.judged_s]

    def record(self) -> Sustained:
        """The answer as result.json and trial.json keep it (records.result.Sustainable), the SLO with its words."""
        slo = SloWritten(self.slo.p99_e2e_ms, self.slo.p99_publish_ms, self.slo.describe())
        return Sustained(
            mb_s=self.mb_s,
            rate_msg_s=self.rate_msg_s,
            steps=tuple(self.steps),
            note=self.note,
            probe_msg_s=self.probe_msg_s,
            probe_mb_s=self.probe_mb_s,
            remeasured=tuple(self.remeasured),
            slo=slo,
            search=asdict(self.search),
            message_bytes=self.message_bytes,
            at_top=self.at_top,
            probe_s=self.probe_s,
            ramp_s=self.ramp_s,
        )


def why_not(st: Step, scheduled: float, slo: Slo) -> str:
    """Why a step (or a whole run, judge_run) that was to send `scheduled` messages did not hold; "" when it held."""
    if st.errors:
        return f"{st.errors} send(s) failed"
    if st.sent < KEPT_SCHEDULE * scheduled:
        return f"producers fell behind the schedule ({st.sent:,} of {scheduled:,.0f} sent)"
    if st.received < KEPT_UP * scheduled:
        return f"consumers fell behind ({st.received:,} of {scheduled:,.0f} received)"
    bounds = (("end-to-end", slo.p99_e2e_ms, st.p99_e2e_ms), ("publish", slo.p99_publish_ms, st.p99_publish_ms))
    for name, limit, got in bounds:
        if limit is None:
            continue
        if got is None:
            return f"no {name} latency sample"
        if got > limit:
            return f"p99 {name} {got:.1f} ms > {limit:g} ms"
    return ""


def judge_run(summary: RunSummary, rate_msg_s: float, slo: Slo) -> str:
    """Why a whole fixed-rate run at `rate_msg_s` (its result summary) did not hold: the step rules over its
    measure window; "" when it held."""
    secs = summary.window_s
    st = Step(rate_msg_s, 0, list(range(secs)), errors=summary.publish_errors or 0)
    st.sent = round((summary.send_msg_s or 0.0) * secs)
    st.received = round((summary.consume_msg_s or 0.0) * secs)
    st.p99_e2e_ms, st.p99_publish_ms = summary.end_to_end_latency_ms.p99, summary.publish_latency_ms.p99
    return why_not(st, rate_msg_s * secs, slo)


def timed_workload(w: Workload, rate: float | Literal["max"], warmup_s: float, test_s: float) -> Workload:
    """`w` at `rate` (msg/s, or "max") with the given warm-up and measure window (seconds)."""
    return w.model_copy(
        update={"producerRate": rate, "warmupDurationMinutes": warmup_s / 60, "testDurationMinutes": test_s / 60}
    )


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
