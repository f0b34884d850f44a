"""NTU's throughput method (docs/reference.md §3): back-to-back runs over payload sizes, each repeated; the
per-second delivered rates of all repeats, trimmed beyond the spec's percentiles (p1/p99), give the median
msg/s and bit/s."""

from __future__ import annotations

from pathlib import Path

from compare.harness import Say, SystemTarget, Tick, error_text, harness_run, per_second, trimmed_median, workload
from compare.spec import CompareSpec
from records import comparison as comparisons
from records.comparison import ThroughputRow


def throughput(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> list[ThroughputRow]:
    cfg = spec.throughput
    assert cfg is not None
    rows = []
    for size in cfg.size_list():
        delivered: list[float] = []
        published: list[float] = []
        errors: list[str] = []
        lost = 0
        for rep in range(cfg.repeats):
            w = workload(
                t,
                f"{t.name}-tp-{size}-r{rep}",
                size,
                producersPerTopic=cfg.producers,
                consumerPerSubscription=cfg.consumers,
                testDurationMinutes=cfg.seconds / 60,
                warmupDurationMinutes=cfg.warmupSeconds / 60,
                drainTimeoutSeconds=cfg.drainTimeoutSeconds,
            )
            try:
                raw, result = harness_run(t, w, comparisons.run_dir(out, t.name, "throughput", f"{size}B-r{rep}"))
            except Exception as e:  # a size or mode the system cannot carry: its row says why
                errors.append(error_text(e))
                say(f"  {t.name} {size} B repeat {rep + 1}: FAILED {errors[-1]}")
                tick()
                break  # the same size fails the same way again; report it once
            s = result.summary
            lost += s.lost or 0
            if not s.acknowledged:
                errors.append(f"no message acknowledged: {'; '.join(s.publish_error_samples) or 'no error given'}")
            delivered += per_second(raw, "consumer")
            published += per_second(raw, "producer")
            tick()
        med, kept, p25, p75 = trimmed_median(delivered, *cfg.trim)
        pub_med = trimmed_median(published, *cfg.trim)[0]
        row = ThroughputRow(
            system=t.name,
            driver=t.system.driver,
            size=size,
            repeats=cfg.repeats,
            samples=len(delivered),
            samples_kept=kept,
            msg_s=med if delivered else None,
            msg_s_p25=p25 if delivered else None,
            msg_s_p75=p75 if delivered else None,
            bit_s=med * size * 8 if delivered else None,
            publish_msg_s=pub_med if published else None,
            lost=lost,
            error="; ".join(dict.fromkeys(errors)) or None,
        )
        if row.msg_s is not None and not errors:
            say(f"  {t.name:<16} {size:>8} B {row.msg_s:>12,.0f} msg/s {row.msg_s * size * 8 / 1e6:>10.1f} Mbit/s")
        rows.append(row)
    return rows
