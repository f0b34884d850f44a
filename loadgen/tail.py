"""The tail budget of a run: each second whose p99 end-to-end latency broke the SLO, matched with what happened in it.

A p99 that does not fall with the rate is not load; to say what it is, every second of the measure window is
read for evidence of each cause, in that second or the one before it (a message received in second s was sent up to
an SLO earlier):

    broker_gc   a broker's stop-the-world GC pauses added up to ≥ STALL_SHARE of the SLO (JMX, per broker)
    broker_jit  a broker's JIT compilers took ≥ JIT_CORES of a core (a cluster still warming up)
    cpu         the machine's CPUs were ≥ CPU_BUSY busy, some task waited for one ≥ PRESSURE of the second (Linux
                PSI), a broker's threads waited ≥ WAIT_CORES for one (cluster.hoststats: only when the brokers run
                on this machine), or a load worker's loop waited ≥ STALL_SHARE of the SLO for one
    neighbour   other processes on the machine (neither the brokers nor this run) took ≥ OTHER_CORES of a core
                (cluster.hoststats `other_cpu`; the largest of them is named)
    harness     the load generator's own stall, beyond the time its loop waited for a CPU (that is starvation): a
                send ≥ STALL_SHARE of the SLO late against its schedule while its buffer was not full, a Python GC
                pause ≥ GC_SHARE of the SLO, or a consumer loop away from poll ≥ STALL_SHARE of the SLO
                (loadgen.selfwatch)
    link        a shaped link ran at ≥ LINK_PEAK of its rate for a tenth of a second, or dropped packets
    connection  a producer's connection to a broker had a request there ≥ CONNECTION_BUSY of the second (the
                second's produce request time at that broker over the producer processes, one connection each)
    log_flush   a broker's log flushes took ≥ STALL_SHARE of the SLO
    isr         a partition's in-sync replicas shrank or grew
    quorum      the KRaft quorum's active controller moved, or the brokers did not count exactly one (ISR changes
                and broker heartbeats go through it, so produce requests waiting on either wait for the election)
    linger      a linger.ms of at least STALL_SHARE of the SLO, and the producers held records that much beyond
                their round trip (their queue p99 less their requests' round-trip p99, librdkafka's statistics)
    fetch_wait  a consumer fetch.min.bytes above 1 with a fetch.wait.max.ms of at least STALL_SHARE of the SLO, and
                records took that much longer from their acknowledgement to the consumer (the second's p99
                end-to-end less its p99 publish latency)

The last two are waits the clients were configured to make, named only where the run's own figures show the time
going there (each counted up to the configured wait): they are present in every second of a run that sets them
too long, so the events above would otherwise be blamed for the tail they make.

Each above-SLO second is counted for every cause present (`seconds`), and once for its primary cause (`primary`, so
the shares add up to 100 % with `unexplained`): a neighbour whenever it is present (a process that takes the
CPUs stretches every elapsed time the brokers report, so their JIT, GC and flush times then say nothing of their
own); else of the causes present the one whose evidence is furthest beyond its threshold, CPU starvation only
when nothing more specific is: a compiling JIT, a GC or the harness's own work take the CPUs too, and on the
shaped testbed the CPUs were busy in every second of a run at 80 % of the sustainable rate
(benchmarks/results/reproducibility.json), so starvation names the symptom, the others the cause. Beside each
cause, how often it was present in the seconds that held the SLO (`base_rate`): a cause as common there explains
little. `where` splits the above-SLO seconds' latency: the producer's queue (client), the produce request's round
trip (brokers, replication, links) and the rest up to the consumer, from the client's own p99s (librdkafka).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import TypeVar

from loadgen import recorder
from loadgen.rawrun import Evidence
from loadgen.runner import RawRun
from records.seconds import BrokerSecond, HostSecond
from records.tail import Cause, SecondCause, TailBrief, TailBudget, TailTotal, Unexplained, Where

STALL_SHARE = 0.2  # a stall of a fifth of the SLO, on top of the usual latency, can carry a p99 over it
GC_SHARE = 0.1
JIT_CORES = 0.25  # loadgen.brokerside.JIT_BUSY_CORES: a broker still warming up
CPU_BUSY = 0.9
PRESSURE = 0.5  # some task waited for a CPU half of the second
WAIT_CORES = 0.5  # a broker's threads together waited half a second for a CPU in one second
LINK_PEAK = 0.95
OTHER_CORES = 0.1  # a tenth of a core: no second of benchmarks/results/tail_budget.json's runs reached it
# A broker serves one request per connection at a time (Kafka's protocol guide): a producer connection with a
# request at the broker this share of the time or more is a queue near its limit (M/M/1 at 80 % busy keeps a
# request waiting four service times on average), and its requests wait in the producer, unseen by the brokers.
CONNECTION_BUSY = 0.8

CAUSES = {
    "broker_gc": "broker GC pauses",
    "broker_jit": "broker JIT compilation",
    "cpu": "CPU starvation (the machine's CPUs busy, or a broker waiting for one)",
    "neighbour": "other processes on this machine taking CPUs",
    "harness": "the load generator's own stalls (late sends, Python GC, consumer loop)",
    "link": "a link running full (a tenth of a second at its rate, or drops)",
    "connection": "a producer connection near its one-request-at-a-time limit (requests wait in the producer)",
    "log_flush": "broker log flushes",
    "isr": "in-sync replica changes",
    "quorum": "the active KRaft controller moving",
    "linger": "the producer's linger (linger.ms: records wait for their batch)",
    "fetch_wait": "the consumer's fetch wait (fetch.min.bytes above 1: each fetch held up to fetch.wait.max.ms)",
}


Row = TypeVar("Row", BrokerSecond, HostSecond)  # a per-second row of the brokers or of their machine

# Causes that the others also produce: primary only in a second where no other cause is present.
SYMPTOMS = ("cpu",)
# Causes that stretch the others' evidence: primary in every second where present.
FIRST = ("neighbour",)


def _max(rows: Iterable[Row], value: Callable[[Row], float | None]) -> dict[int, float]:
    """second -> the largest `value` over `rows` of that second, at least 0 (rows without a figure skipped)."""
    out: dict[int, float] = defaultdict(float)
    for r in rows:
        v = value(r)
        if v is not None:
            out[r.second] = max(out[r.second], v)
    return dict(out)


def _most(*vs: float | None) -> float | None:
    return max((v for v in vs if v is not None), default=None)


def _evidence(
    raw: RawRun, broker_rows: Sequence[BrokerSecond], host_rows: Sequence[HostSecond], slo_ms: float
) -> dict[str, dict[int, float]]:
    """cause -> second -> its evidence as a multiple of the cause's threshold (≥ 1: present)."""
    stall = STALL_SHARE * slo_ms
    gc = {s: v * 1000 / stall for s, v in _max(broker_rows, lambda r: r.gc_pause_s_per_s).items()}
    jit = {s: v / JIT_CORES for s, v in _max(broker_rows, lambda r: r.jit_compile_s_per_s).items()}
    flush = {s: v / stall for s, v in _max(broker_rows, lambda r: r.log_flush_ms_per_s).items()}
    changes = _max(broker_rows, lambda r: _most(r.isr_shrinks_per_s, r.isr_expands_per_s))
    isr = {s: 1.0 + v for s, v in changes.items() if v > 0}
    cpu = defaultdict(float, {s: v / CPU_BUSY for s, v in _max(host_rows, lambda r: r.cpu_busy).items()})
    for s, v in _max(host_rows, lambda r: r.cpu_pressure).items():
        cpu[s] = max(cpu[s], v / PRESSURE)
    for s, v in _max(host_rows, lambda r: _most(*r.broker_wait.values())).items():
        cpu[s] = max(cpu[s], v / WAIT_CORES)
    other = {s: v / OTHER_CORES for s, v in _max(host_rows, lambda r: r.other_cpu).items()}
    peaks = _max(host_rows, lambda r: _most(*r.link_peak.values()))
    link = defaultdict(float, {s: v / LINK_PEAK for s, v in peaks.items()})
    for s, v in _max(host_rows, lambda r: _most(*r.link_dropped.values())).items():
        if v > 0:
            link[s] = max(link[s], 1.0 + v)
    producers = max(1, len({t.wid for t in raw.ticks if t.role == "producer"}))
    busy = _max(broker_rows, lambda r: r.request_ms / 1000 / producers if r.produce_ms_per_s else None)
    harness: dict[int, float] = defaultdict(float)
    for t in raw.ticks:
        ev = t.evidence or Evidence()
        starved = ev.main_wait_ms or 0.0
        cpu[t.second] = max(cpu[t.second], starved / stall)
        late = recorder.merge([t.delay]).get_max_value() / 1000 if t.delay and not t.buffer_full else 0.0
        own = max(ev.loop_gap_ms or 0.0, late) - starved
        score = max((ev.py_gc_max_ms or 0.0) / (GC_SHARE * slo_ms), own / stall)
        harness[t.second] = max(harness[t.second], score)
    return {
        "broker_gc": gc,
        "broker_jit": jit,
        "cpu": dict(cpu),
        "neighbour": other,
        "harness": dict(harness),
        "link": dict(link),
        "connection": {s: v / CONNECTION_BUSY for s, v in busy.items()},
        "log_flush": flush,
        "isr": isr,
        "quorum": controller_moves(broker_rows),
        **configured_waits(raw, stall),
    }


def _setting(cfg: Mapping[str, str], key: str, default: float) -> float:
    try:
        return float(cfg.get(key, default))
    except ValueError:  # not a number: the client refused it, so its default ran
        return default


def configured_waits(raw: RawRun, stall: float) -> dict[str, dict[int, float]]:
    """`linger` and `fetch_wait` (the module's docstring): second -> the wait its figures show, up to the configured
    one, over `stall`. Empty for a wait configured shorter than `stall` (it cannot carry a p99 over the SLO)."""
    prod, cons = raw.workload.str_map("producerConfig"), raw.workload.str_map("consumerConfig")
    linger = _setting(prod, "linger.ms", 5.0)  # librdkafka's default, as Kafka's since 4.0
    fetch = _setting(cons, "fetch.wait.max.ms", 500.0) if _setting(cons, "fetch.min.bytes", 1.0) > 1 else 0.0
    held: dict[int, float] = defaultdict(float)
    if linger >= stall:
        for t in raw.ticks:
            ev = t.evidence or Evidence()
            q, r = ev.queue_p99_ms, ev.rtt_p99_ms
            if t.role == "producer" and q is not None and r is not None:
                held[t.second] = max(held[t.second], max(0.0, min(q - r, linger)) / stall)
    fetched: dict[int, float] = {}
    if fetch >= stall:
        e2e, pub = _p99_by_second(raw, "consumer"), _p99_by_second(raw, "producer")
        for s, e in e2e.items():
            sent = max(pub.get(s, 0.0), pub.get(s - 1, 0.0))
            fetched[s] = max(0.0, min(e - sent, fetch)) / stall
    return {"linger": dict(held), "fetch_wait": fetched}


def controller_moves(broker_rows: Sequence[BrokerSecond]) -> dict[int, float]:
    """second -> 2.0 where the active controller moved into it (the broker reporting ActiveControllerCount 1
    changed) or the brokers together did not report exactly one (a 0 or a 2 between scrapes of a move)."""
    out: dict[int, float] = {}
    leader: dict[int, int] = {}
    for r in broker_rows:
        if r.active_controller == 1.0:
            leader[r.second] = r.broker_id
        if r.active_controllers is not None and r.active_controllers != 1.0:
            out[r.second] = 2.0
    seconds = sorted(leader)
    for prev, cur in pairwise(seconds):
        if leader[prev] != leader[cur]:
            out[cur] = 2.0
    return out


def _p99_by_second(raw: RawRun, role: str) -> dict[int, float]:
    by: dict[int, list[bytes | None]] = defaultdict(list)
    for t in raw.ticks:
        if t.role == role:
            by[t.second].append(t.hist)
    out = {}
    for s, hs in by.items():
        h = recorder.merge(hs)
        if h.get_total_count():
            out[s] = recorder.percentiles(h, [99])[0] / 1000
    return out


def budget(
    raw: RawRun,
    seconds: Sequence[int],
    slo_ms: float,
    broker_rows: Sequence[BrokerSecond],
    host_rows: Sequence[HostSecond],
) -> TailBudget:
    """The tail budget of `raw` over `seconds` (the measure window) against a p99 end-to-end SLO of `slo_ms`."""
    p99 = _p99_by_second(raw, "consumer")
    judged = [s for s in seconds if s in p99]
    above = [s for s in judged if p99[s] > slo_ms]
    below = [s for s in judged if p99[s] <= slo_ms]
    ev = _evidence(raw, broker_rows, host_rows, slo_ms)
    observed = sorted(c for c, by in ev.items() if by or c in ("harness",))

    def score(cause: str, s: int) -> float:
        by = ev[cause]
        return max(by.get(s, 0.0), by.get(s - 1, 0.0))

    primary: dict[str, int] = defaultdict(int)
    per_second = []
    for s in above:
        present = {c: score(c, s) for c in CAUSES if score(c, s) >= 1.0}
        first = {c: v for c, v in present.items() if c in FIRST}
        specific = first or {c: v for c, v in present.items() if c not in SYMPTOMS} or present
        top = max(specific, key=specific.__getitem__) if specific else None
        primary[top or "unexplained"] += 1
        per_second.append(SecondCause(s, round(p99[s], 1), tuple(sorted(present)), top))
    causes = tuple(
        Cause(
            cause=c,
            what=what,
            observed=c in observed,
            seconds=sum(1 for s in above if score(c, s) >= 1.0),
            primary=primary[c],
            share=primary[c] / len(above) if above else 0.0,
            base_rate=sum(1 for s in below if score(c, s) >= 1.0) / len(below) if below else None,
            processes=tuple(_neighbours(host_rows, above)) if c == "neighbour" else (),
        )
        for c, what in CAUSES.items()
    )
    return TailBudget(
        slo_p99_e2e_ms=slo_ms,
        seconds=len(judged),
        above_slo=len(above),
        causes=causes,
        unexplained=Unexplained(primary["unexplained"], primary["unexplained"] / len(above) if above else 0.0),
        not_observed=tuple(c for c in CAUSES if c not in observed),
        where=_where(raw, above),
        per_second=tuple(per_second),
    )


def _neighbours(host_rows: Sequence[HostSecond], above: Sequence[int]) -> list[str]:
    """The other processes ("name[pid]") that took the most CPU in an above-SLO second or the one before it, at
    least OTHER_CORES, most often first."""
    keep = set(above) | {s - 1 for s in above}
    busy = [r for r in host_rows if r.second in keep and (r.other_cpu or 0.0) >= OTHER_CORES]
    seen = Counter(r.other_top for r in busy if r.other_top)
    return [name for name, _ in seen.most_common()]


def _where(raw: RawRun, above: Sequence[int]) -> Where:
    """Median over the above-SLO seconds of the producers' queue p99, request round-trip p99 and the e2e p99 (ms)."""
    if not above:
        return Where()
    keep = set(above)
    ev = [t.evidence for t in raw.ticks if t.second in keep and t.evidence]
    q = [e.queue_p99_ms for e in ev if e.queue_p99_ms is not None]
    r = [e.rtt_p99_ms for e in ev if e.rtt_p99_ms is not None]
    e = sorted(_p99_by_second(raw, "consumer")[s] for s in above)

    def med(xs: list[float]) -> float | None:
        return round(sorted(xs)[len(xs) // 2], 1) if xs else None

    return Where(med(q), med(r), med(e))


def words(b: TailBudget) -> list[str]:
    """The budget in a few lines: above-SLO seconds, each cause's share (and base rate), what is unexplained."""
    n = b.above_slo
    head = f"tail budget: {n} of {b.seconds} s above p99 end-to-end {b.slo_p99_e2e_ms:g} ms"
    if not n:
        return [head]
    lines = [head + " (primary cause per second; a second may show several)"]
    for c in sorted(b.causes, key=lambda c: -c.primary):
        if c.seconds:
            base = "" if c.base_rate is None else f"; in {c.base_rate:.0%} of the seconds that held"
            who = f" ({', '.join(c.processes[:3])})" if c.processes else ""
            lines.append(f"  {c.what}{who}: {c.share:.0%} ({c.primary} s primary, in {c.seconds} s{base})")
    lines.append(f"  unexplained: {b.unexplained.share:.0%} ({b.unexplained.seconds} s)")
    if b.not_observed:
        lines.append(f"  not observed here: {', '.join(CAUSES[c] for c in b.not_observed)}")
    w = b.where
    if w.rtt_p99_ms is not None:
        lines.append(
            f"  in those seconds (medians): producer queue p99 {w.queue_p99_ms} ms, request round trip "
            f"p99 {w.rtt_p99_ms} ms, end-to-end p99 {w.e2e_p99_ms} ms"
        )
    return lines


def combine(parts: Sequence[TailBrief], runs: int | None = None) -> TailTotal:
    """Several budgets in brief (TailBudget.brief) added up: their above-SLO seconds, each cause's primary seconds,
    the unexplained ones, and the cause with most (None when none was named; a neighbour with the names of the
    busiest). `runs`: how many runs the parts came from (default: one each)."""
    primary: dict[str, int] = dict.fromkeys(CAUSES, 0)
    for b in parts:
        for c, n in b.primary.items():
            primary[c] += n
    above = sum(b.above_slo for b in parts)
    top = max(primary, key=primary.__getitem__) if any(primary.values()) else None
    named = Counter(p for b in parts for p in b.processes)
    who = [p for p, _ in named.most_common(3)]
    what = CAUSES[top] + (f" ({', '.join(who)})" if who and top == "neighbour" else "") if top else None
    return TailTotal(
        runs=len(parts) if runs is None else runs,
        seconds=sum(b.seconds for b in parts),
        above_slo_s=above,
        primary_s=primary,
        unexplained_s=sum(b.unexplained for b in parts),
        cause=what,
        cause_share=primary[top] / above if top and above else None,
    )
