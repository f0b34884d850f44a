"""The IoT patterns (docs/reference.md §4): periodic flows (a fixed rate, p90 latency against rate) and a
sporadic burst of large messages starting in the middle of a periodic flow."""

from __future__ import annotations

import statistics
import threading
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from compare.harness import Say, SystemTarget, Tick, error_text, harness_run, workload
from compare.spec import CompareSpec
from core.errors import EnvironmentProblem
from loadgen import recorder, runner
from records import comparison as comparisons
from records.comparison import PeriodicRow, SporadicRow
from records.result import RunResult


def _second_pcts(raw: runner.RawRun, q: float) -> dict[int, float]:
    """End-to-end latency percentile q (ms) of each second of a run, from the consumers' tick histograms."""
    by: dict[int, list[bytes | None]] = defaultdict(list)
    for tk in raw.ticks:
        if tk.role == "consumer" and tk.msgs:
            by[tk.second].append(tk.hist)
    out = {}
    for sec, hs in by.items():
        h = recorder.merge(hs)
        out[sec] = recorder.percentiles(h, [q])[0] / 1000
    return out


def periodic(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> list[PeriodicRow]:
    assert spec.iot is not None and spec.iot.periodic is not None
    cfg = spec.iot.periodic
    rows = []
    for rate in cfg.rates:
        w = workload(
            t,
            f"{t.name}-periodic-{rate:g}",
            cfg.size,
            producerRate=rate,
            testDurationMinutes=cfg.seconds / 60,
            warmupDurationMinutes=cfg.warmupSeconds / 60,
        )
        row = PeriodicRow(system=t.name, rate=rate, size=cfg.size)
        try:
            _raw, result = harness_run(t, w, comparisons.run_dir(out, t.name, "iot-periodic", f"{rate:g}"))
            q = result.e2e_quantiles
            row = replace(
                row,
                delivered_msg_s=result.summary.consume_msg_s,
                e2e_p50_ms=q.get("50"),
                e2e_p90_ms=q.get("90"),
                e2e_p99_ms=q.get("99"),
                lost=result.summary.lost,
            )
            say(f"  {t.name:<16} periodic {rate:g} msg/s: e2e p90 {_ms(row.e2e_p90_ms)}")
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row = replace(row, error=error_text(e))
            say(f"  {t.name} periodic {rate:g} msg/s: FAILED {row.error}")
        rows.append(row)
        tick()
    return rows


def _burst_effect(
    row: SporadicRow, praw: runner.RawRun, presult: RunResult, braw: runner.RawRun, bresult: RunResult
) -> SporadicRow:
    """The periodic flow's per-second p90 before, during and after the burst's measured window (on the periodic
    flow's time line, in whole seconds), the burst's rate, and each flow's losses."""
    t0 = praw.timing.t0_ns
    b_start = (braw.timing.measure_start_ns - t0) / 1e9
    b_end = (braw.timing.measure_end_ns - t0) / 1e9
    p90 = _second_pcts(praw, 90)
    before = [v for sec, v in p90.items() if sec + 1 <= b_start]
    during = [v for sec, v in p90.items() if sec >= b_start and sec + 1 <= b_end]
    after = [v for sec, v in p90.items() if sec >= b_end + 1]
    return replace(
        row,
        burst_msg_s=bresult.summary.consume_msg_s,
        burst_mb_s=bresult.summary.consume_mb_s,
        periodic_p90_before_ms=statistics.median(before) if before else None,
        periodic_p90_during_ms=statistics.median(during) if during else None,
        periodic_p90_after_ms=statistics.median(after) if after else None,
        periodic_lost=presult.summary.lost,
        burst_lost=bresult.summary.lost,
        burst_window_s=(round(b_start, 2), round(b_end, 2)),
        per_second_p90_ms={str(k): v for k, v in sorted(p90.items())},
    )


def sporadic(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> SporadicRow:
    """A periodic flow; after burstStartSeconds a burst flow of large messages runs beside it."""
    assert spec.iot is not None and spec.iot.sporadic is not None
    cfg = spec.iot.sporadic
    base = workload(
        t,
        f"{t.name}-sporadic-periodic",
        cfg.periodicSize,
        producerRate=cfg.periodicRate,
        testDurationMinutes=cfg.seconds / 60,
        warmupDurationMinutes=0,
    )
    burst = workload(
        t,
        f"{t.name}-sporadic-burst",
        cfg.burstSize,
        producerRate=cfg.burstRate,
        testDurationMinutes=cfg.burstSeconds / 60,
        warmupDurationMinutes=0,
    )
    row = SporadicRow(system=t.name, periodic_rate=cfg.periodicRate, burst_size=cfg.burstSize)
    burst_ran: list[tuple[runner.RawRun, RunResult]] = []  # the burst's thread's run, or why it failed
    burst_failed: list[BaseException] = []

    def run_burst() -> None:
        try:
            time.sleep(cfg.burstStartSeconds)
            burst_ran.append(harness_run(t, burst, comparisons.run_dir(out, t.name, "iot-sporadic", "burst")))
        except BaseException as e:
            burst_failed.append(e)

    th = threading.Thread(target=run_burst, daemon=True)
    try:
        th.start()
        praw, presult = harness_run(t, base, comparisons.run_dir(out, t.name, "iot-sporadic", "periodic"))
        th.join(cfg.seconds + 300)
        if burst_failed:
            raise burst_failed[0]
        if not burst_ran:
            raise EnvironmentProblem("the burst flow did not finish")
        braw, bresult = burst_ran[0]
        row = _burst_effect(row, praw, presult, braw, bresult)
        say(
            f"  {t.name:<16} sporadic: periodic p90 {_ms(row.periodic_p90_before_ms)} before, "
            f"{_ms(row.periodic_p90_during_ms)} during a {cfg.burstSize} B burst "
            f"({row.burst_mb_s or 0.0:.1f} MB/s)"
        )
    except Exception as e:  # a size or mode the system cannot carry: its row says why
        th.join(cfg.seconds + 300)
        row = replace(row, error=error_text(e))
        say(f"  {t.name} sporadic: FAILED {row.error}")
    tick()
    return row


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} ms"
