"""OMB's fixed-rate method (docs/reference.md §2): a fixed publish rate on 1/6/16 partitions where the system
has partitions, with publish and end-to-end percentile tables, and whether the rate was sustained."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compare.harness import Say, SystemTarget, Tick, error_text, harness_run, workload
from compare.spec import CompareSpec
from core import fmt
from core.typed import from_json, to_json
from records import comparison as comparisons
from records.comparison import FixedRateRow
from records.result import RunSummary

LAT_KEYS = ("p50", "p75", "p95", "p99", "p99.9", "max")


def _measured(row: FixedRateRow, s: RunSummary, rate: float) -> FixedRateRow:
    """`row` with the run's rates, losses and the percentiles of both latencies (None: not measured), each under
    its JSON name (publish_p99.9_ms…)."""
    figures: dict[str, object] = {
        "publish_msg_s": s.publish_msg_s,
        "consume_msg_s": s.consume_msg_s,
        "sustained": (s.publish_msg_s or 0.0) >= 0.95 * rate,
        "lost": s.lost,
    }
    for side, ms in (("publish", s.publish_latency_ms), ("e2e", s.end_to_end_latency_ms)):
        for k in LAT_KEYS:
            figures[f"{side}_{k}_ms"] = ms.at(k)
    return from_json(FixedRateRow, {**to_json(row), **figures})


def fixed_rate(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> list[FixedRateRow]:
    cfg = spec.fixedRate
    assert cfg is not None
    rows = []
    for parts in cfg.partitions if t.system.partitioned else [None]:
        w = workload(
            t,
            f"{t.name}-fixed-{parts or 'na'}",
            cfg.size,
            partitionsPerTopic=parts or 1,
            producersPerTopic=cfg.producers,
            consumerPerSubscription=cfg.consumers,
            producerRate=cfg.rate,
            testDurationMinutes=cfg.seconds / 60,
            warmupDurationMinutes=cfg.warmupSeconds / 60,
        )
        row = FixedRateRow(system=t.name, partitions=parts, size=cfg.size, target_msg_s=cfg.rate)
        try:
            _raw, result = harness_run(t, w, comparisons.run_dir(out, t.name, "fixed-rate", f"p{parts or 'na'}"))
            s = result.summary
            row = _measured(row, s, cfg.rate)
            p99 = fmt.num(s.end_to_end_latency_ms.p99, missing="not measured")
            say(
                f"  {t.name:<16} {cfg.rate:,.0f} msg/s × {cfg.size} B, partitions {parts or 'n/a'}: "
                f"got {s.publish_msg_s or 0:,.0f} msg/s, e2e p99 {p99} ms"
            )
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row = replace(row, error=error_text(e))
            say(f"  {t.name} fixed rate, partitions {parts or 'n/a'}: FAILED {row.error}")
        rows.append(row)
        tick()
    return rows
