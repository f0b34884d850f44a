"""OMB's fixed-rate method (docs/reference.md §2): a fixed publish rate on 1/6/16 partitions where the system
has partitions, with publish and end-to-end percentile tables, and whether the rate was sustained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compare.harness import Say, SystemTarget, Tick, error_text, harness_run, workload
from compare.spec import CompareSpec
from core import fmt
from records import comparison as comparisons

LAT_KEYS = ("p50", "p75", "p95", "p99", "p99.9", "max")


def fixed_rate(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> list[dict[str, Any]]:
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
        row: dict[str, Any] = {"system": t.name, "partitions": parts, "size": cfg.size, "target_msg_s": cfg.rate}
        try:
            _raw, result = harness_run(t, w, comparisons.run_dir(out, t.name, "fixed-rate", f"p{parts or 'na'}"))
            s = result["summary"]
            row.update(
                publish_msg_s=s["publish_msg_s"],
                consume_msg_s=s["consume_msg_s"],
                sustained=s["publish_msg_s"] >= 0.95 * cfg.rate,
                lost=s["lost"],
                error=None,
                **{f"publish_{k}_ms": s["publish_latency_ms"][k] for k in LAT_KEYS},
                **{f"e2e_{k}_ms": s["end_to_end_latency_ms"][k] for k in LAT_KEYS},
            )
            say(
                f"  {t.name:<16} {cfg.rate:,.0f} msg/s × {cfg.size} B, partitions {parts or 'n/a'}: "
                f"got {s['publish_msg_s']:,.0f} msg/s, e2e p99 {fmt.latency(s['end_to_end_latency_ms'], 'p99')} ms"
            )
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row["error"] = error_text(e)
            say(f"  {t.name} fixed rate, partitions {parts or 'n/a'}: FAILED {row['error']}")
        rows.append(row)
        tick()
    return rows
