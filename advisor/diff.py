"""Baseline vs candidate: throughput and latency side by side, and whether each change is beyond the noise.

A side is what a person points at:

    a run folder            `bench` or `import-omb`: one run
    an OMB result file      OMB's TestResult JSON, read as it is: one run
    a study folder          `sweep`: its recommended configuration's confirmation repeats; `STUDY#LABEL` picks
                            another candidate (`runs/s#baseline:kafka-defaults`)
    a glob (quoted)         several run folders or result files: the repeats of one configuration

Each metric of a side is its runs' mean with a 95 % interval (Student's t), and the change is the difference
of the means with Welch's interval (core.stats). A change is beyond noise only when that interval excludes 0;
with one run on a side there is no between-run spread to judge against, and the verdict says so rather than
calling a change (the spread between the windows of one run is not run-to-run noise, docs/design.md).

A study measured on the sustainable rate and a run measured at the maximum rate answer different questions:
they are not compared (a UserError says which side measured what).
"""

from __future__ import annotations

import glob
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.stats import Interval, difference, mean_interval
from records import run as runs
from records.omb import imported_result, read_omb
from records.result import RunResult
from records.run import read_result
from records.summary import read_summary

# metric -> (label, unit, better: "higher" | "lower")
METRICS: dict[str, tuple[str, str, str]] = {
    "mb_s": ("throughput", "MB/s", "higher"),
    "msg_s": ("throughput", "msg/s", "higher"),
    "publish_p50_ms": ("publish latency p50", "ms", "lower"),
    "publish_p99_ms": ("publish latency p99", "ms", "lower"),
    "publish_p99.9_ms": ("publish latency p99.9", "ms", "lower"),
    "e2e_p50_ms": ("end-to-end latency p50", "ms", "lower"),
    "e2e_p99_ms": ("end-to-end latency p99", "ms", "lower"),
    "e2e_p99.9_ms": ("end-to-end latency p99.9", "ms", "lower"),
}


NOT_JUDGED = (
    "a change is judged only with at least 2 runs a side (Welch's 95 % interval of the difference); the spread "
    "between the windows of one run is not run-to-run noise: repeat each side 3 times or more, interleaved"
)


@dataclass
class Side:
    """One side of a diff: what was given, what its figure measures, and one value per run for each metric."""

    given: str
    measures: str  # "max-rate throughput" | "sustainable rate" | "OMB run"…
    workloads: set[tuple[str, int]] = field(default_factory=set)  # (workload name, message bytes) of its runs
    sources: list[str] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, metric: str, v: Any) -> None:
        if isinstance(v, int | float):
            self.values.setdefault(metric, []).append(float(v))


def _from_result(side: Side, res: RunResult, source: str) -> str:
    """One run's figures into `side`; returns what its throughput measures."""
    s = res.summary
    side.sources.append(source)
    side.workloads.add((str(res.workload), res.message_bytes))
    if sus := res.sustainable:  # a discovery: the search run's latencies mix its steps, the answer is the rate
        side.add("mb_s", sus.mb_s)
        side.add("msg_s", sus.rate_msg_s)
        return "sustainable rate"
    side.add("mb_s", s.consume_mb_s)
    side.add("msg_s", s.consume_msg_s)
    _latencies_only(side, res)
    return {"max-rate": "max-rate throughput", "fixed-rate": "throughput at a fixed rate"}.get(
        str(s.mode), "throughput (OMB run)"
    )


def _study(side: Side, root: Path, label: str | None) -> str:
    summary = read_summary(root)
    conf = summary.confirmation if summary else None
    if summary is None or conf is None:
        raise UserError(f"{root}: a study without a confirmation phase has no repeats to compare (run its sweep)")
    cand = conf.arm(label)
    if cand is None:
        labels = ", ".join(c.label for c in conf.candidates)
        raise UserError(f"{root}#{label or conf.chosen}: no such candidate in its confirmation (there are: {labels})")
    side.notes.append(f"the study's candidate {cand.label}: its {len(cand.repeats)} confirmation runs")
    side.sources += [str(root / "trials" / t) for t in cand.trial_ids]
    for v in cand.repeats:
        side.add("mb_s", v)
    for r in cand.rates_msg_s:
        side.add("msg_s", r)
    if summary.objective == "sustainable_mb_s":
        op = summary.operating_point
        if op and op.held and op.rate_msg_s is not None and cand.label == conf.chosen:
            side.notes.append(f"latency: the operating point ({op.rate_msg_s:,.0f} msg/s for {op.run_s} s), one run")
            side.add("e2e_p99_ms", op.p99_e2e_ms)
            side.add("publish_p99_ms", op.p99_publish_ms)
        return "sustainable rate"
    for t in cand.trial_ids:  # max-rate repeats: each run's latencies too
        d = root / "trials" / t
        if runs.has_result(d):
            _latencies_only(side, read_result(d))
    return "max-rate throughput"


def _latencies_only(side: Side, res: RunResult) -> None:
    s = res.summary
    for pre, lat in (("publish", s.publish_latency_ms), ("e2e", s.end_to_end_latency_ms)):
        for p in ("p50", "p99", "p99.9"):
            side.add(f"{pre}_{p}_ms", lat.at(p))


def _one(side: Side, p: Path) -> str:
    if p.is_file():
        doc = read_omb(p)
        return _from_result(side, imported_result(doc, str(p)), str(p))
    if runs.has_result(p):
        return _from_result(side, read_result(p), str(p))
    raise UserError(f"{p}: not a run folder (no result.json), a study folder (no summary.json) or an OMB result")


def side(given: str) -> Side:
    """Resolve what a person gave (see the module docstring) into a Side."""
    path, _, label = given.partition("#")
    sd = Side(given, "")
    root = Path(path)
    if root.is_dir() and read_summary(root) is not None:
        sd.measures = _study(sd, root, label or None)
        return sd
    if label:
        raise UserError(f"{given}: #LABEL picks a candidate of a study folder; {path} is not one")
    found = sorted(glob.glob(path)) if any(c in path for c in "*?[") else [path]
    if not found:
        raise UserError(f"{given}: matches nothing")
    kinds = {_one(sd, Path(p)) for p in found}
    if len(kinds) > 1:
        raise UserError(f"{given}: its runs measure different things ({', '.join(sorted(kinds))})")
    sd.measures = kinds.pop()
    return sd


@dataclass(frozen=True)
class Row:
    metric: str
    label: str
    unit: str
    better: str
    baseline: Interval
    candidate: Interval
    change: Interval  # candidate − baseline
    change_pct: float | None
    verdict: str  # "better" | "worse" | "no change beyond noise" | "not judged: …"


def _verdict(change: Interval, better: str, na: int, nb: int) -> str:
    if na < 2 or nb < 2:
        return f"not judged (n={na} vs {nb})"
    if not change.excludes(0):
        return "no change beyond noise"
    up = change.estimate > 0
    return "better" if up == (better == "higher") else "worse"


def compare(base: Side, cand: Side) -> list[Row]:
    """Every metric both sides measured, baseline vs candidate."""
    if base.measures != cand.measures and "sustainable rate" in (base.measures, cand.measures):
        raise UserError(
            f"not comparable: {base.given} measured the {base.measures}, {cand.given} the {cand.measures} "
            "(compare sustainable rates with sustainable rates)"
        )
    out = []
    if base.workloads and cand.workloads and base.workloads != cand.workloads:
        names = [", ".join(f"{n} ({b} B)" for n, b in sorted(x.workloads)) for x in (base, cand)]
        cand.notes.append(f"a different workload: {names[0]} vs {names[1]}")
    for m, (label, unit, better) in METRICS.items():
        a, b = base.values.get(m), cand.values.get(m)
        if not a or not b:
            continue
        ch = difference(b, a)
        ma = statistics.fmean(a)
        pct = 100 * ch.estimate / ma if ma else None
        out.append(
            Row(
                m,
                label,
                unit,
                better,
                mean_interval(a),
                mean_interval(b),
                ch,
                pct,
                _verdict(ch, better, len(a), len(b)),
            )
        )
    return out
