"""One trial, following the trial protocol of docs/design.md.

apply configs (broker: dynamic per broker id, restart-only by rolling restart) -> read them back ->
fresh topic -> warm-up -> k measurement windows -> stop, drain -> acknowledged == consumed -> delete the
topic -> write the record. The record (`trial.json`, schema_version) sits next to the bench run files
(`result.json`, `samples.parquet`, `broker_metrics.parquet`) in `runs/<study>/trials/<id>/`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerconf import catalogue
from loadgen import result as res
from loadgen import runner
from loadgen.runner import RawRun, Tick, phase_of
from loadgen.warmup import warm_up
from loadgen.workload import Workload, parse_workload
from records.run import write_run
from records.trial import TrialRecord, write_trial
from sweeps import space
from sweeps.spec import Spec
from sweeps.target import SweepTarget

MB = 1e6


@dataclass
class Outcome:
    """What a trial measured, in the units the objectives use."""

    ok: bool
    record_dir: Path
    values: dict[str, float] = field(default_factory=dict)  # throughput_mb_s, p99_publish_ms, p99_e2e_ms
    windows_mb_s: list[float] = field(default_factory=list)
    constraints: dict[str, float] = field(default_factory=dict)  # ≤ 0 feasible (Optuna's convention)
    violations: list[str] = field(default_factory=list)
    restarts: int = 0
    fail_reason: str | None = None
    measure_s: float = 0.0
    total_s: float = 0.0
    record: TrialRecord | None = None


def trial_workload(spec: Spec, cfg: Mapping[str, int | str], groups: Mapping[str, Mapping[str, str]]) -> Workload:
    w = spec.base_workload()
    m = spec.measurement
    d = w.model_dump()
    d["producerConfig"] = {**d["producerConfig"], **groups["producer"]}
    d["consumerConfig"] = {**d["consumerConfig"], **groups["consumer"]}
    for k, v in groups["workload"].items():
        field_name = catalogue.get(k).workload_field
        assert field_name
        d[field_name] = int(v)
    d["warmupDurationMinutes"] = m.warmup_s / 60
    d["testDurationMinutes"] = m.window_s * m.windows / 60
    # acks=0 has nothing to verify (see _constraints) and its consumers can trail by minutes: stop soon.
    d["drainTimeoutSeconds"] = 5 if str(cfg.get("acks", "all")) == "0" else m.drain_timeout_s
    return parse_workload(d, "trial workload")


def window_rates(raw: RawRun, window_s: float, windows: int) -> list[float]:
    """Consumer-confirmed MB/s in each of the k measurement windows (whole seconds only)."""
    w = raw.workload
    by_sec: dict[int, int] = {}
    for t in raw.ticks:
        if t.role == "consumer" and phase_of(t.second, w.warmup_seconds, w.test_seconds) == "measure":
            by_sec[t.second] = by_sec.get(t.second, 0) + t.nbytes
    secs = sorted(by_sec)
    if not secs:
        return [0.0] * windows
    first = secs[0]
    per = max(1, int(window_s))
    out = []
    for i in range(windows):
        span = range(first + i * per, first + (i + 1) * per)
        got = [by_sec[s] for s in span if s in by_sec]
        out.append(sum(got) / max(1, len(span)) / MB if got else 0.0)
    return out


def _constraints(spec: Spec, summary: Mapping[str, Any], acks: str) -> tuple[dict[str, float], list[str]]:
    """Constraint values (≤ 0 is feasible, Optuna's convention) and what each violation was.

    With acks=0 nothing is acknowledged by a broker: the client reports a message done when it is
    written to the socket, so "lost" has no meaning and is not held against the trial.
    """
    c = spec.constraints
    lost = 0 if acks == "0" else summary["lost"]
    vals: dict[str, float] = {"lost": float(lost - c.max_lost)}
    why = [f"lost {lost} > {c.max_lost}"] if lost > c.max_lost else []
    checks = (
        ("p99_publish_ms", c.p99_publish_ms, summary["publish_latency_ms"].get("p99"), "p99 publish"),
        ("p99_e2e_ms", c.p99_e2e_ms, summary["end_to_end_latency_ms"].get("p99"), "p99 end-to-end"),
        ("p999_e2e_ms", c.p999_e2e_ms, summary["end_to_end_latency_ms"].get("p99.9"), "p99.9 end-to-end"),
    )
    for name, limit, got, label in checks:
        if limit is None:
            continue
        g = float(got) if got is not None else 1e12  # nothing measured: as bad as it gets
        vals[name] = g - limit
        if g > limit:
            why.append(f"{label} {g:.1f} ms > {limit:g} ms")
    return vals, why


def run_trial(
    spec: Spec,
    target: SweepTarget,
    cfg: Mapping[str, int | str],
    snapshot: Mapping[str, Any],
    out_dir: Path,
    meta: Mapping[str, Any],
    *,
    say: Callable[[str], None],
    on_tick: Callable[[RawRun, Tick], None] | None = None,
    on_applied: Callable[[], None] | None = None,
) -> Outcome:
    """Apply `cfg`, measure, write the record in `out_dir`. Raises only on Ctrl-C; failures are outcomes."""
    t = _Trial(spec, target, cfg, out_dir, meta, say)
    try:
        t.apply(snapshot, on_applied)
        t.measure(on_tick)
    except KeyboardInterrupt:
        write_trial(out_dir, TrialRecord(**t.record, state="interrupted", total_s=time.monotonic() - t.t_start))
        raise
    except Exception as e:  # a trial that breaks is a result, not the end of the sweep
        t.outcome.fail_reason = f"{t.phase}: {type(e).__name__}: {e}".strip()
    out = t.outcome
    out.total_s = time.monotonic() - t.t_start
    out.record = TrialRecord(
        **t.record, state="complete" if out.ok else "failed", fail_reason=out.fail_reason, total_s=out.total_s
    )
    write_trial(out_dir, out.record)
    return out


class _Trial:
    """The steps of one trial; `phase` names the step a failure happened in, `record` what is known so far."""

    def __init__(
        self,
        spec: Spec,
        target: SweepTarget,
        cfg: Mapping[str, int | str],
        out_dir: Path,
        meta: Mapping[str, Any],
        say: Callable[[str], None],
    ) -> None:
        self.spec, self.target, self.cfg, self.out_dir, self.say = spec, target, cfg, out_dir, say
        self.t_start = time.monotonic()
        self.groups = space.split(cfg)
        self.outcome = Outcome(False, out_dir)
        g = self.groups
        self.record: dict[str, Any] = {
            **meta,
            "config": dict(cfg),
            "applied": {"producer": g["producer"], "consumer": g["consumer"], "workload": g["workload"]},
        }
        self.phase = "apply"

    def apply(self, snapshot: Mapping[str, Any], on_applied: Callable[[], None] | None) -> None:
        broken = catalogue.broken_rules(self.cfg)
        if broken:
            self.phase = "rules"  # nothing is applied: the cluster is not touched
            raise ValueError("; ".join(broken))
        self.workload = trial_workload(self.spec, self.cfg, self.groups)
        if on_applied:
            on_applied()  # the snapshot is marked dirty before the first change
        t_apply = time.monotonic()
        applied = self.target.configs.apply(self.groups["dynamic"], self.groups["restart"], snapshot)
        self.outcome.restarts = applied.restarts
        self.record.update(broker_read_back=applied.read_back, restarts=applied.restarts)
        self.record["apply_s"] = time.monotonic() - t_apply
        m, t = self.spec.measurement, self.target
        if applied.restarts and m.restart_warmup_s:
            self.phase = "warm-up after restart"
            warm_up(t.bootstrap, m.restart_warmup_s, placements=t.placements, say=self.say, common=t.common)

    def measure(self, on_tick: Callable[[RawRun, Tick], None] | None) -> None:
        self.phase = "run"
        t, m = self.target, self.spec.measurement
        t_run = time.monotonic()
        raw = runner.run(
            self.workload,
            {"bootstrap.servers": t.bootstrap, **t.common},
            placements=t.placements,
            metrics_urls=t.metrics_urls,
            on_tick=on_tick,
            say=lambda m: None,
        )
        t_build = time.monotonic()
        rec = res.build(raw, t.profile, {"client": "confluent-kafka"})
        write_run(self.out_dir, rec)
        self.record["phases_s"] = {
            **raw.phases_s,
            "run": t_build - t_run,
            "warmup_and_windows": m.warmup_s + m.window_s * m.windows,
            "record": time.monotonic() - t_build,
        }
        self._judge(rec.summary, window_rates(raw, m.window_s, m.windows))

    def _judge(self, s: Mapping[str, Any], wins: list[float]) -> None:
        """The objectives and constraints from the run's summary and its window rates."""
        out, m, acks = self.outcome, self.spec.measurement, str(self.cfg.get("acks", "all"))
        out.windows_mb_s = wins
        out.values = {
            "throughput_mb_s": statistics.fmean(wins),
            "p99_publish_ms": float(s["publish_latency_ms"].get("p99", 0.0)),
            "p99_e2e_ms": float(s["end_to_end_latency_ms"].get("p99", 0.0)),
        }
        out.constraints, out.violations = _constraints(self.spec, s, acks)
        out.measure_s = m.window_s * m.windows
        out.ok = s["acknowledged"] > 0
        if not out.ok:
            out.fail_reason = f"nothing acknowledged: {s['publish_error_samples']}"
        ceiling = self.target.ceiling_mb_s
        self.record["measured"] = {
            **out.values,
            "windows_mb_s": wins,
            "mean_mb_s": statistics.fmean(wins),
            "stdev_mb_s": statistics.stdev(wins) if len(wins) > 1 else 0.0,
            "ceiling_mb_s": ceiling,
            "fraction_of_ceiling": (statistics.fmean(wins) / ceiling) if ceiling else None,
            "p999_e2e_ms": s["end_to_end_latency_ms"].get("p99.9"),
            "lost": s["lost"],
            "loss_checked": acks != "0",
            "duplicated": s["duplicated"],
            "broker_rates": s["broker_rates"],
            "client_bound": s["client_bound"],
            "warnings": s["warnings"],
        }
        self.record["constraints"] = {"values": out.constraints, "violated": out.violations}
