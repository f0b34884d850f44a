"""The parts of the trial protocol that need no cluster: the workload a trial runs, the rate of each of its
measurement windows, and its constraint values (sweeps.trial runs the trial)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

from brokerconf import catalogue
from core.acks import acks
from core.typed import to_json
from core.units import MB
from loadgen.runner import RawRun, phase_of
from loadgen.workload import Workload, parse_workload
from records.result import RunSummary
from sweeps.spec import Spec


def trial_workload(spec: Spec, cfg: Mapping[str, int | str], groups: Mapping[str, Mapping[str, str]]) -> Workload:
    w = spec.base_workload()
    m = spec.measurement
    d = w.model_dump()
    d["producerConfig"] = {**d["producerConfig"], **groups["producer"]}
    d["consumerConfig"] = {**d["consumerConfig"], **groups["consumer"]}
    for k, v in groups["workload"].items():
        field_name = catalogue.param(k).workload_field
        assert field_name
        d[field_name] = int(v)
    d["warmupDurationMinutes"] = m.warmup_s / 60
    d["testDurationMinutes"] = m.window_s * m.windows / 60
    # A max-rate trial times every acknowledgement (loadgen.workload). Counting them instead made the producers so
    # much cheaper that on the testbed's shared cores they starved the consumers: the consumer-confirmed windows
    # and the ramps placed under them moved (docs/measurement.md, "Figures behind the code's thresholds").
    d["publishLatencyAtMaxRate"] = True
    # acks=0 has nothing to verify (see _constraints) and its consumers can trail by minutes: stop soon.
    d["drainTimeoutSeconds"] = 5 if acks(cfg) == "0" else m.drain_timeout_s
    return parse_workload(d, "trial workload")


def _consumed_by_second(raw: RawRun) -> tuple[Counter[int], list[int]]:
    """The consumers' bytes per second of the run, and the measured seconds among them, in order."""
    w = raw.workload
    by_sec: Counter[int] = Counter()
    for t in raw.ticks:
        if t.role == "consumer":
            by_sec[t.second] += t.nbytes
    return by_sec, sorted(s for s in by_sec if phase_of(s, w.warmup_seconds, w.test_seconds) == "measure")


def window_rates(raw: RawRun, window_s: float, windows: int) -> list[float]:
    """Consumer-confirmed MB/s in each of the k measurement windows (whole seconds only)."""
    by_sec, secs = _consumed_by_second(raw)
    if not secs:
        return [0.0] * windows
    first, measured = secs[0], set(secs)
    per = max(1, int(window_s))
    out = []
    for i in range(windows):
        span = range(first + i * per, first + (i + 1) * per)
        got = [by_sec[s] for s in span if s in measured]
        out.append(sum(got) / max(1, len(span)) / MB if got else 0.0)
    return out


# The warm-up curve runs this many seconds into the measure window: whether the windows began at their level.
CURVE_INTO_WINDOW_S = 3


def warmup_curve(raw: RawRun) -> list[float] | None:
    """Each second's consumer-confirmed bytes as a ratio to the measure window's median second (the objective's
    source), from the run's start through the first CURVE_INTO_WINDOW_S seconds of the window; None without a
    warm-up or a measured second. The study's warm-up check (sweeps.timing.warmup_check) reads these: whether
    the windows began at their level, and from which second the run was there."""
    by_sec, measure = _consumed_by_second(raw)
    warm = math.ceil(raw.workload.warmup_seconds)
    level = statistics.median(by_sec[sec] for sec in measure) if measure else 0
    if not warm or not level:
        return None
    end = min(warm + CURVE_INTO_WINDOW_S, measure[-1] + 1)
    return [round(by_sec[sec] / level, 3) for sec in range(end)]


def constraints(spec: Spec, summary: RunSummary, acks: str) -> tuple[dict[str, float], list[str]]:
    """Constraint values (≤ 0 is feasible, Optuna's convention) and what each violation was.

    With acks=0 nothing is acknowledged by a broker: the client reports a message done when it is
    written to the socket, so "lost" has no meaning and is not held against the trial.
    """
    c = spec.constraints
    lost = 0 if acks == "0" else summary.lost or 0
    vals: dict[str, float] = {"lost": float(lost - c.max_lost)}
    why = [f"lost {lost} > {c.max_lost}"] if lost > c.max_lost else []
    checks = (
        ("p99_publish_ms", c.p99_publish_ms, summary.publish_latency_ms.p99, "p99 publish"),
        ("p99_e2e_ms", c.p99_e2e_ms, summary.end_to_end_latency_ms.p99, "p99 end-to-end"),
        ("p999_e2e_ms", c.p999_e2e_ms, summary.end_to_end_latency_ms.p999, "p99.9 end-to-end"),
    )
    for name, limit, got, label in checks:
        if limit is None:
            continue
        g = float(got) if got is not None else 1e12  # nothing measured: as bad as it gets
        vals[name] = g - limit
        if g > limit:
            why.append(f"{label} {g:.1f} ms > {limit:g} ms")
    return vals, why


def or_inf(ms: float | None) -> float:
    """A latency objective for the sampler: not measured counts as the worst (the record keeps None)."""
    return float("inf") if ms is None else float(ms)


def objective_values(s: RunSummary, wins: list[float]) -> dict[str, float]:
    """A max-rate run's objectives from its summary `s` and its windows' rates (MB/s)."""
    return {
        "throughput_mb_s": statistics.fmean(wins),
        "p99_publish_ms": or_inf(s.publish_latency_ms.p99),
        "p99_e2e_ms": or_inf(s.end_to_end_latency_ms.p99),
    }


def measured(
    s: RunSummary, wins: list[float], values: Mapping[str, float], acks: str, ceiling: float | None
) -> dict[str, Any]:
    """What a trial record keeps of its max-rate run (`measured`): the objectives (None: not measured), the windows,
    the ceiling and the share of it, losses, broker rates and the run's warnings."""
    mean = statistics.fmean(wins)
    return {
        **{k: (None if v == float("inf") else v) for k, v in values.items()},
        "windows_mb_s": wins,
        "mean_mb_s": mean,
        "stdev_mb_s": statistics.stdev(wins) if len(wins) > 1 else 0.0,
        "ceiling_mb_s": ceiling,
        "fraction_of_ceiling": (mean / ceiling) if ceiling else None,
        "p999_e2e_ms": s.end_to_end_latency_ms.p999,
        "lost": s.lost,
        "loss_checked": acks != "0",
        "duplicated": s.duplicated,
        "broker_rates": to_json(s.broker_rates),
        "client_bound": s.client_bound,
        "warnings": list(s.warnings),
    }
