"""What the brokers and their machine did during a run, as the run record keeps it: per broker per second
(cluster.metrics rates), the cluster-wide produce / replicate / consume rates over the measure window, whether the
brokers' JIT was still compiling, and the brokers' machine each second (cluster.hoststats) when it is this one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from cluster import hoststats, metrics
from core.units import MB
from loadgen.runner import RawRun, phase_of
from records.result import BrokerRates
from records.seconds import BrokerSecond, Row, figure


def _phase(raw: RawRun, second: int) -> str:
    return phase_of(second, raw.workload.warmup_seconds, raw.test_s)


def broker_rows(raw: RawRun) -> list[Row]:
    """cluster.metrics rows of the run, each with its second and phase."""
    out: list[Row] = []
    for r in metrics.rates(raw.broker_samples):
        sec = int(((r["t_ns"] or 0) - raw.timing.t0_ns) // 1_000_000_000)
        out.append({**r, "second": sec, "phase": _phase(raw, sec) if sec >= 0 else "setup"})
    return out


def broker_summary(rows: Sequence[BrokerSecond]) -> BrokerRates | None:
    """Cluster-wide MB/s over the measure window: produce (bytes in), replicate, consume (bytes out).

    Kafka counts replica fetches apart: BytesIn/OutPerSec are client traffic only and
    ReplicationBytesIn/OutPerSec the followers' (kafka.server.BrokerTopicStats.updateBytesOut).
    """
    meas = [r for r in rows if r.phase == "measure"]
    if not meas:
        return None
    by_sec: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    jit: dict[int, list[float | None]] = defaultdict(list)
    for r in meas:
        sec = by_sec[r.second]
        sec["in"] += r.bytes_in_per_s or 0.0
        sec["out"] += r.bytes_out_per_s or 0.0
        sec["repl_in"] += r.replication_bytes_in_per_s or 0.0
        sec["repl_out"] += r.replication_bytes_out_per_s or 0.0
        jit[r.second].append(r.jit_compile_s_per_s)
    secs = list(by_sec.values())

    def mean(k: str) -> float:
        return float(np.mean([s[k] for s in secs])) / MB

    # some broker reported its compilers in every second, or the cores are not known
    known = all(any(c is not None for c in cs) for cs in jit.values())
    return BrokerRates(
        produce_mb_s=mean("in"),
        replicate_mb_s=mean("repl_in"),
        consume_mb_s=mean("out"),
        replication_out_mb_s=mean("repl_out"),
        # cores the brokers' JIT compilers took, all brokers together (None: the exporter has no JVM collector)
        jit_compile_cores=float(np.mean([sum(c or 0.0 for c in cs) for cs in jit.values()])) if known else None,
        seconds=len(secs),
    )


# A broker whose JIT compilers took this much of a core on average over the measure window was still warming up:
# 2.5 × loadgen.warmup's quiet threshold; a restarted broker's compilers stay above it for the first minutes of
# load (docs/measurement.md, "Figures behind the code's thresholds").
JIT_BUSY_CORES = 0.25


def jit_busy(rows: Sequence[BrokerSecond]) -> dict[int, float]:
    """The brokers still compiling (JIT) in the measure window: broker id -> its compilers' mean cores, for those at
    JIT_BUSY_CORES or more (none without the exporter's JVM collector)."""
    per: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        if r.phase == "measure" and r.jit_compile_s_per_s is not None:
            per[r.broker_id].append(r.jit_compile_s_per_s)
    means = {b: float(np.mean(v)) for b, v in sorted(per.items())}
    return {b: c for b, c in means.items() if c >= JIT_BUSY_CORES}


def jit_busy_words(busy: Mapping[int, float]) -> str:
    """jit_busy's answer in words."""
    each = ", ".join(f"broker {b} {c:.2f}" for b, c in busy.items())
    return (
        f"brokers still compiling in the measure window (JIT cores on average: {each}; ≥ {JIT_BUSY_CORES:g} is a "
        "cluster still warming up)"
    )


def jit_warning(rows: Sequence[BrokerSecond]) -> str | None:
    """Which brokers were still compiling (JIT) in the measure window, in words; None when none was (or the
    exporter has no JVM collector)."""
    busy = jit_busy(rows)
    if not busy:
        return None
    return (
        f"{jit_busy_words(busy)}: its figures may read low. Warm the cluster first (kafkatune testbed up "
        "--warm-up 240 loads it until the compilers are quiet) or give the run a longer warm-up"
    )


def host_rows(raw: RawRun) -> list[Row]:
    """cluster.hoststats rows of the run, each with its second and phase (empty: the brokers' host not observed)."""
    rows = hoststats.rows(raw.host_samples)
    t0 = raw.timing.t0_ns
    for r in rows:
        # a row covers the interval ending at t_ns: it belongs to the second that interval mostly lies in
        t_ns, interval_s = figure(r["t_ns"]) or 0.0, figure(r["interval_s"]) or 0.0
        sec = int((t_ns - t0 - interval_s * 5e8) // 1_000_000_000)
        r["second"] = sec
        r["phase"] = _phase(raw, sec) if sec >= 0 else "setup"
    return rows
