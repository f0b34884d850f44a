"""Warming a freshly started cluster before anything is measured.

A cold Kafka JVM spends minutes of CPU in its JIT compiler, and what is measured meanwhile is the compiler's, not
Kafka's. Given the brokers' metrics endpoints, a warm-up ends once their compilers are quiet (`JitWatch`): at most
`JIT_QUIET_CORES` of a core per broker over the last `JIT_WINDOW_S`, read from the exporter's
jvm_compilation_time_seconds_total; the seconds asked for are then its cap.

A quiet compiler is warm only for the load it compiled for, so the warm-up loads the brokers in each shape a study
runs, each until quiet: the batches of `SHAPES` (the producers' default 16-KiB batches at linger.ms 0, then 1-MiB
ones) at the maximum rate, then a fixed rate (`PACED` of the first shape's rate). A run measured while the
compilers still work carries loadgen.result's JIT warning. The load is the point: when the producers end, the
consumers stop with them (runner.run's drain=False) instead of reading the backlog a cold cluster left them.

What these rules were drawn from (compile time after a start and a rolling restart, the throughput of consecutive
loads, runs of another shape after a quiet warm-up): docs/measurement.md, "Why the warm-up has shapes".
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.metrics import BrokerSample
from cluster.target import Placement
from core.units import MB
from loadgen import brokerside, result, runner
from loadgen.rawrun import phase_of
from loadgen.workload import parse_workload
from records.trial import WarmShape, WarmUp

JIT_QUIET_CORES = 0.1  # per broker, on average over the window
JIT_WINDOW_S = 10.0
# The producer settings the warm-up loads the brokers with, one after the other, each for its share of the time.
SHAPES: tuple[Mapping[str, Any], ...] = ({"linger.ms": 0}, {"linger.ms": 20, "batch.size": 1 << 20})
PACED = 0.6  # the fixed-rate shape after SHAPES: this share of the first shape's rate (None: no such shape)
MIN_SHAPE_S = 1.0  # a shape left no time by the ones before it still runs this long: each compiles its own paths


def jit_series(samples: Sequence[BrokerSample], since_ns: int = 0) -> dict[int, list[tuple[float, float]]]:
    """Per broker, its (seconds, JIT compile seconds) samples from `since_ns` on, in the order they came."""
    series: dict[int, list[tuple[float, float]]] = {}
    for smp in list(samples):
        if smp.t_ns >= since_ns and (v := smp.values.get("jit_compile_s")) is not None:
            series.setdefault(smp.broker_id, []).append((smp.t_ns / 1e9, v))
    return series


@dataclass
class JitWatch:
    """The brokers' JIT compile time, read from the run's own broker samples (the runner's BrokerMetricsSampler
    scrapes every broker once a second); as a runner `stop_when`, True once quiet."""

    brokers: Collection[int]
    quiet_cores: float = JIT_QUIET_CORES
    window_s: float = JIT_WINDOW_S
    # a broker whose latest sample is this much older than the newest stopped answering: no quiet window
    stale_s: float = 3.0

    def cores(self, samples: Sequence[BrokerSample], *, whole: bool = True) -> float | None:
        """Mean cores per broker their compilers took over the last window of `samples`; None until every broker
        has a whole window of them, or when a broker stopped answering or restarted within it (its counter went
        back). `whole=False`: over what there is when that is less than a window (a warm-up's closing figure)."""
        series = jit_series(samples)
        if not self.brokers or any(len(series.get(b, ())) < 2 for b in self.brokers):
            return None
        newest = max(series[b][-1][0] for b in self.brokers)
        per: list[float] = []
        for b in self.brokers:
            pts = series[b]
            t1 = pts[-1][0]
            if t1 < newest - self.stale_s:
                return None
            older = [i for i, (t, _) in enumerate(pts) if t <= t1 - self.window_s]
            if not older and whole:
                return None
            span = pts[older[-1] if older else 0 :]
            if any(v1 < v0 for (_, v0), (_, v1) in itertools.pairwise(span)):
                return None
            (t0, v0), (_, v1) = span[0], span[-1]
            per.append((v1 - v0) / (t1 - t0))
        return sum(per) / len(per)

    def __call__(self, raw: runner.RawRun) -> bool:
        c = self.cores(raw.broker_samples)
        return c is not None and c <= self.quiet_cores


@dataclass
class JitBusyWatch:
    """As a runner `stop_when` of a max-rate run: True once a broker's compilers have taken so much time since the
    measure window began that its mean over the whole window is loadgen.brokerside.JIT_BUSY_CORES or more whatever
    the rest of the window holds (the counter only grows): a run that is going to be set aside for a compiling JIT
    and measured again (sweeps.trial) stops there instead of running out its windows. `busy`: then, each such
    broker's cores since the window began."""

    busy: dict[int, float] = field(default_factory=dict)

    def __call__(self, raw: runner.RawRun) -> bool:
        start = raw.timing.measure_start_ns
        if not start:  # the run's time line is not set yet
            return False
        need = brokerside.JIT_BUSY_CORES * raw.test_s
        for b, pts in jit_series(raw.broker_samples, since_ns=start).items():
            (t0, v0), (t1, v1) = pts[0], pts[-1]
            if v1 - v0 >= need:  # a broker restarted within the window starts its counter again: not busy
                self.busy[b] = (v1 - v0) / max(1e-9, t1 - t0)
        return bool(self.busy)

    @staticmethod
    def cut_at(raw: runner.RawRun) -> int | None:
        """The second of its measure window `raw` was stopped at; None when it ran out its window: a stop decided on
        a tick after the window's last second (the drain's) cut nothing, and the run's figures are whole."""
        at, warmup_s = raw.stopped_early_at, raw.workload.warmup_seconds
        if at is None or phase_of(at, warmup_s, raw.test_s) == "drain":
            return None
        return max(0, at - math.ceil(warmup_s))


def warm_up(
    bootstrap: str,
    seconds: float,
    *,
    placements: Sequence[Placement] = (None,),
    say: Callable[[str], None] = print,
    common: Mapping[str, str] | None = None,
    metrics_urls: Mapping[int, str] | None = None,
    quiet_cores: float = JIT_QUIET_CORES,
    window_s: float = JIT_WINDOW_S,
    shapes: Sequence[Mapping[str, Any]] = SHAPES,
    paced: float | None = PACED,
    paced_shape: Mapping[str, Any] | None = None,
) -> WarmUp:
    """Run acks=all load through every broker (6 partitions) and read it back, in each of `shapes` (producer
    settings) at the maximum rate, then (`paced`) at that share of the first one's rate with `paced_shape` (default:
    the client's defaults), in turn, each for an equal share of what is left of `seconds` when it starts (a shape's
    start-up counts against it, so the whole takes about `seconds`; at least MIN_SHAPE_S each), or with
    `metrics_urls` until the brokers' JIT is quiet (the share is then its cap). Returns how long it ran (`s`), the
    brokers' JIT cores per broker at the end of the last shape (`jit_cores`) and whether every shape ended quiet
    (`quiet`; both None without metrics), and each shape's own figures (`shapes`). Quiet: at most `quiet_cores` per
    broker over the last `window_s`.

    `common`: client security settings (an inventory's), `placements`: where the workers run."""
    if not shapes:
        raise ValueError("warm_up needs at least one shape of load")
    n = len(shapes) + (1 if paced else 0)
    cap = f"{seconds:g} s" if n == 1 else f"{seconds:g} s in all, shared by {n} shapes"
    load = f"{cap} of acks=all load"
    if metrics_urls:
        load = f"up to {load}, until its compilers take ≤ {quiet_cores:g} core per broker over {window_s:g} s"
    say(f"warming up the brokers' JIT for {load}")
    t0 = time.monotonic()
    watch = JitWatch(list(metrics_urls), quiet_cores, window_s) if metrics_urls else None

    def share(left: int) -> float:
        return max(MIN_SHAPE_S, (seconds - (time.monotonic() - t0)) / left)

    done: list[WarmShape] = []
    for i, shape in enumerate(shapes):
        done.append(_warm_shape(bootstrap, share(n - i), shape, placements, say, common, metrics_urls, watch))
    if paced and done[0].msg_s:
        rate = round(paced * done[0].msg_s)
        shape = dict(paced_shape or {})
        done.append(_warm_shape(bootstrap, share(1), shape, placements, say, common, metrics_urls, watch, rate))
    quiet = all(d.quiet for d in done) if metrics_urls else None
    return WarmUp(round(time.monotonic() - t0, 1), done[-1].jit_cores, quiet, tuple(done))


def _acked_rate(raw: runner.RawRun) -> float:
    """Acknowledged msg/s over the seconds a warm-up shape ran (it may end early, once quiet: not its whole cap)."""
    acked: Counter[int] = Counter()
    for t in raw.ticks:
        if t.role == "producer":
            acked[t.second] += t.msgs
    full = [n for s, n in sorted(acked.items()) if raw.stopped_early_at is None or s < raw.stopped_early_at][1:]
    return sum(full) / len(full) if full else 0.0


def _warm_shape(
    bootstrap: str,
    seconds: float,
    shape: Mapping[str, Any],
    placements: Sequence[Placement],
    say: Callable[[str], None],
    common: Mapping[str, str] | None,
    metrics_urls: Mapping[int, str] | None,
    watch: JitWatch | None,
    rate: float | None = None,
) -> WarmShape:
    """One shape of warm_up's load (at `rate` msg/s, or the maximum): for `seconds`, or until `watch` finds the JIT
    quiet (given with `metrics_urls`)."""
    w = parse_workload(
        {
            "name": "warmup",
            "partitionsPerTopic": 6,
            "messageSize": 1024,
            "producersPerTopic": 1,
            "consumerPerSubscription": 1,
            "testDurationMinutes": seconds / 60,
            "producerRate": rate or "max",
            "producerConfig": {"acks": "all", **shape},
        }
    )
    t0 = time.monotonic()
    where = runner.RunSettings({**(common or {}), "bootstrap.servers": bootstrap}, placements, metrics_urls)
    raw = runner.run(w, where.quiet(), drain=False, stop_when=watch)
    took = time.monotonic() - t0
    jit = watch.cores(raw.broker_samples, whole=False) if watch else None
    e2e = result.build(raw).result.summary.end_to_end_latency_ms.p99
    msg_s = _acked_rate(raw)
    p99 = f"end-to-end p99 {e2e:.2f} ms" if isinstance(e2e, int | float) else "end-to-end latency not measured"
    state = ""
    if watch:
        jit_text = f"{jit:.2f} core per broker" if jit is not None else "not read"
        state = f"; JIT {'quiet' if raw.stopped_early_at is not None else 'still compiling at the cap'}: {jit_text}"
    batches = ", ".join(f"{k} {v}" for k, v in shape.items()) or "default batching"
    at = f" at {rate:,.0f} msg/s" if rate else ""
    say(f"warm-up ({batches}{at}) done in {took:.0f} s: {msg_s * w.messageSize / MB:.1f} MB/s, {p99}{state}")
    quiet = raw.stopped_early_at is not None if watch else None
    jit_cores = None if jit is None else round(jit, 3)
    return WarmShape(dict(shape), rate, round(took, 1), msg_s, jit_cores, quiet, round(seconds, 2))
