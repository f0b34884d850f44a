"""OMB's fixed-rate method (docs/reference.md §2): a fixed publish rate on 1/6/16 partitions where the system
has partitions, with publish and end-to-end percentile tables, and whether the rate was sustained."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from compare.harness import Say, SystemTarget, Tick, error_text, harness_run, workload
from compare.spec import CompareSpec
from core import fmt
from records import comparison as comparisons
from records.comparison import FixedRateRow

LAT_KEYS = ("p50", "p75", "p95", "p99", "p99.9", "max")


def _ms(summary: Mapping[str, float | str | None]) -> dict[str, float | None]:
    """The percentiles of a latency summary (loadgen.recorder.summary_ms) the table shows; None: not measured."""
    out: dict[str, float | None] = {}
    for k in LAT_KEYS:
        v = summary.get(k)
        out[k] = float(v) if isinstance(v, int | float) else None
    return out


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
            got = s.publish_msg_s or 0.0
            pub, e2e = _ms(s.publish_latency_ms), _ms(s.end_to_end_latency_ms)
            row = replace(
                row,
                publish_msg_s=s.publish_msg_s,
                consume_msg_s=s.consume_msg_s,
                sustained=got >= 0.95 * cfg.rate,
                lost=s.lost,
                publish_p50_ms=pub["p50"],
                publish_p75_ms=pub["p75"],
                publish_p95_ms=pub["p95"],
                publish_p99_ms=pub["p99"],
                publish_p999_ms=pub["p99.9"],
                publish_max_ms=pub["max"],
                e2e_p50_ms=e2e["p50"],
                e2e_p75_ms=e2e["p75"],
                e2e_p95_ms=e2e["p95"],
                e2e_p99_ms=e2e["p99"],
                e2e_p999_ms=e2e["p99.9"],
                e2e_max_ms=e2e["max"],
            )
            say(
                f"  {t.name:<16} {cfg.rate:,.0f} msg/s × {cfg.size} B, partitions {parts or 'n/a'}: "
                f"got {got:,.0f} msg/s, e2e p99 {fmt.latency(s.end_to_end_latency_ms, 'p99')} ms"
            )
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row = replace(row, error=error_text(e))
            say(f"  {t.name} fixed rate, partitions {parts or 'n/a'}: FAILED {row.error}")
        rows.append(row)
        tick()
    return rows
