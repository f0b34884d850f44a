"""The limit of a sustainable-rate run, read from its search's steps: what rose from the highest step that held to
the lowest step above it that missed; for a run where no step held, what took the time at its lowest step.

A step that held saturates nothing by definition (its p99 stayed within the SLO), so the run's figures over all its
steps say little about what stops it; the step above it, where the p99 broke, shows which part of a record's time
grew. Each step's evidence is the mean over its judged seconds of the per-second records (records.run.seconds): the
brokers' time per produce request by part (cluster.metrics.PRODUCE_TIMES), their request-handler and network-thread
idle, the busiest link (a shaped link's own counters, cluster.hoststats, else the busiest broker's bytes in over
the profile's measured link rate), the producers' own queue and round-trip p99 (librdkafka's statistics) and how
far they fell behind their schedule, and what the consumers received of what was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.diagnose import IDLE_LOW, MACHINE_HOT, SATURATED, TIME_PARTS, Diagnosis
from core.units import MB
from loadgen.tail import CONNECTION_BUSY
from records import run as runs
from records import trial as trials
from records.result import Step
from records.seconds import BrokerSecond, HostSecond

# A link is where records queue when it averages at least LINK_BUSY of its rate and its fullest tenth of a second
# (cluster.hoststats.LINK_EVERY_S) reached LINK_PEAK of it in at least LINK_BURSTS of the step's seconds: in the
# recorded shaped sweep (tests/fixtures/recorded/shaped-tuned) every repeat's first missed step above its answer
# had its busiest link at 0.70-0.96 of its rate on average, at its rate in 80-100 % of its seconds.
LINK_BUSY, LINK_PEAK, LINK_BURSTS = 0.7, 0.95, 0.5
# A part of the time that grew by less than this (ms) between the two steps did not move the p99.
ROSE_MS = 5.0
# Consumers that received less than this share of what was sent in a step fell behind in it.
RECEIVED_LOW = 0.9
# Which bound each part of a produce request's time names when it is the part that grew.
PART_BOUND = {
    "produce_queue_ms": "request_handlers",
    "produce_local_ms": "forced_flush",
    "produce_remote_ms": "replication",
    "produce_response_queue_ms": "network_threads",
    "produce_response_send_ms": "network_threads",
}


@dataclass(frozen=True)
class StepEvidence:
    """One search step's measured figures, each None when the records do not carry it."""

    rate_msg_s: float
    p99_e2e_ms: float | None
    held: bool
    parts_ms: Mapping[str, float]  # the brokers' mean time per produce request, by part (TIME_PARTS)
    handler_idle: float | None  # the least idle broker's request-handler pool
    network_idle: float | None  # the least idle broker's network processors
    link: float | None  # the busiest link's mean share of its rate
    link_name: str  # which link and direction ("" when not known by name)
    link_bursts: float | None  # the share of the step's seconds in which that link's peak reached LINK_PEAK
    client_queue_ms: float | None  # the producers' worst per-second queue p99 (records waiting in the client)
    rtt_ms: float | None  # the producers' worst per-second request round trip p99
    behind_ms: float | None  # the producers' worst per-second delay behind their schedule
    received: float | None  # what the consumers received over what the producers sent in the step
    cpu: float | None = None  # the machine's busy CPU share (the brokers' machine, when they run on this one)
    # the busiest broker's produce requests a second per producer connection, its time per request (ms), and their
    # product: the share of the time each connection had a request there (_connection)
    connection: tuple[float, float, float] | None = None

    def connection_words(self) -> str:
        """The busiest producer connection in words ("" when not measured)."""
        if self.connection is None:
            return ""
        per_s, ms, busy = self.connection
        return (
            f"each producer connection to the busiest broker carried {per_s:.0f} produce requests a second of "
            f"{ms:.1f} ms each, busy {busy:.0%} of the time (a broker serves one request per connection at a time)"
        )

    @property
    def broker_ms(self) -> float:
        return sum(self.parts_ms.values())

    def words(self) -> str:
        p99 = f"p99 {self.p99_e2e_ms:.1f} ms" if self.p99_e2e_ms is not None else "no p99"
        return f"{self.rate_msg_s:,.0f} msg/s ({p99})"


def _mean(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _worst(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return max(vals) if vals else None


def _links(host: Sequence[HostSecond], judged: set[int]) -> tuple[float | None, str, float | None]:
    """The busiest shaped link over the `judged` seconds: its mean share of its rate, its name and direction, and
    the share of seconds its peak reached LINK_PEAK (None, "", None without shaped links)."""
    rows = [r for r in host if r.second in judged]
    names = {k for r in rows for k in r.link}
    means = {k: m for k in names if (m := _mean([r.link.get(k) for r in rows])) is not None}
    if not means:
        return None, "", None
    busiest = max(means, key=means.__getitem__)
    peaks = [r.link_peak.get(busiest) for r in rows]
    bursts = sum(1 for p in peaks if p is not None and p >= LINK_PEAK) / len(rows)
    return means[busiest], " ".join(busiest), bursts


def _connection(bs: Sequence[BrokerSecond], producers: int) -> tuple[float, float, float] | None:
    """StepEvidence.connection from the brokers' per-second rows and the producer processes (one connection each
    to every broker); None without produce requests."""
    busiest = None
    for b in {r.broker_id for r in bs}:
        rows = [r for r in bs if r.broker_id == b]
        requests = sum(r.produce_requests_per_s or 0.0 for r in rows)
        if not requests:
            continue
        ms = sum(r.request_ms for r in rows) / requests
        per_s = requests / len(rows) / max(1, producers)
        if busiest is None or per_s * ms > busiest[0] * busiest[1]:
            busiest = (per_s, ms, per_s * ms / 1000)
    return busiest


def evidence(step: Step, run: runs.Seconds, nic: float | None) -> StepEvidence:
    """`step` from the per-second rows of its judged seconds."""
    judged = set(step.judged_s)
    bs = [r for r in run.brokers if r.second in judged]
    producers = [r for r in run.samples if r.second in judged and r.role == "producer"]
    requests = sum(r.produce_requests_per_s or 0.0 for r in bs)
    ms = {k: sum(r.produce_ms_per_s[k] for r in bs if k in r.produce_ms_per_s) for k in TIME_PARTS}
    parts = {k: v / requests for k, v in ms.items()} if requests else {}
    ids = {r.broker_id for r in bs}

    def least(idle: Callable[[BrokerSecond], float | None]) -> float | None:
        means = [_mean([idle(r) for r in bs if r.broker_id == b]) for b in ids]
        return min((m for m in means if m is not None), default=None)

    link, link_name, bursts = _links(run.host, judged)
    if link is None and nic and bs:  # no shaped link: the busiest broker's bytes in over the measured link rate
        per = [(r.bytes_in_per_s or 0.0) + (r.replication_bytes_in_per_s or 0.0) for r in bs]
        link, link_name = max(per) / MB / nic, "in"
    sent, got = step.sent, step.received
    return StepEvidence(
        rate_msg_s=float(step.rate_msg_s),
        p99_e2e_ms=step.p99_e2e_ms,
        held=step.held,
        parts_ms=parts,
        handler_idle=least(lambda r: r.request_handler_idle),
        network_idle=least(lambda r: r.network_processor_idle),
        link=link,
        link_name=link_name,
        link_bursts=bursts,
        client_queue_ms=_worst([r.queue_p99_ms for r in producers]),
        rtt_ms=_worst([r.rtt_p99_ms for r in producers]),
        behind_ms=_worst([r.delay_max_ms for r in producers]),
        received=got / sent if sent else None,
        cpu=_mean([r.cpu_busy for r in run.host if r.second in judged]),
        connection=_connection(bs, len({r.worker for r in producers})),
    )


def _saturated(e: StepEvidence) -> Diagnosis | None:
    """A resource at its limit in the step, whatever the step before it showed."""
    if e.link is not None and (e.link >= SATURATED or (e.link >= LINK_BUSY and (e.link_bursts or 0) >= LINK_BURSTS)):
        bound = "network_out" if e.link_name.endswith("out") else "network_in"
        bursts = f", at its rate in bursts in {e.link_bursts:.0%} of the seconds" if e.link_bursts else ""
        return Diagnosis(bound, f"the busiest link ({e.link_name}) carried {e.link:.0%} of its rate{bursts}")
    if e.handler_idle is not None and e.handler_idle < IDLE_LOW:
        return Diagnosis("request_handlers", f"the request handler pool was {e.handler_idle:.0%} idle (num.io.threads)")
    if e.network_idle is not None and e.network_idle < IDLE_LOW:
        return Diagnosis("network_threads", f"the network processors were {e.network_idle:.0%} idle")
    if e.cpu is not None and e.cpu >= MACHINE_HOT / 100:
        return Diagnosis("cpu", f"the machine's CPUs were {e.cpu:.0%} busy (clients and brokers share them)")
    if e.received is not None and e.received < RECEIVED_LOW:
        return Diagnosis("consumer", f"the consumers received {e.received:.0%} of what was sent (the backlog grew)")
    return None


def _grew(a: float | None, b: float | None) -> float:
    return (b or 0.0) - (a or 0.0)


def compare(held: StepEvidence, missed: StepEvidence) -> Diagnosis:
    """What rose from `held` to `missed`: a resource at its limit first, then the part of a record's time that grew
    most, in the brokers (per produce request) or in the producers (their queue, their schedule)."""
    at = f"from {held.words()}, the highest step that held, to {missed.words()}, the lowest above it that missed"
    found = _saturated(missed)
    if found is not None:
        return Diagnosis(found.bound, f"{at}: {found.reason}")
    broker = {k: _grew(held.parts_ms.get(k), missed.parts_ms.get(k)) for k in TIME_PARTS}
    part, by = max(broker.items(), key=lambda kv: kv[1])
    client = _grew(held.client_queue_ms, missed.client_queue_ms)
    total = f"the brokers' time per produce request {held.broker_ms:.1f} -> {missed.broker_ms:.1f} ms"
    if held.cpu is not None and missed.cpu is not None:
        total += f" and the machine's CPUs {held.cpu:.0%} -> {missed.cpu:.0%} busy"
    if client >= ROSE_MS and client > 2 * max(by, 0.0):
        rtt = (
            f", its requests' round trip p99 {held.rtt_ms:.0f} -> {missed.rtt_ms:.0f} ms"
            if held.rtt_ms is not None and missed.rtt_ms is not None
            else ""
        )
        # the connection's busy share says how near its one-request-at-a-time limit the round trips ran
        conn = f"; {missed.connection_words()}" if missed.connection is not None else ""
        return Diagnosis(  # "none": no broker resource saturated; round trips set the rate (advisor.rules)
            "none",
            f"{at}: the records waited in the producer (its queue p99 {held.client_queue_ms or 0:.0f} -> "
            f"{missed.client_queue_ms or 0:.0f} ms{rtt}) while {total}: no broker resource saturated, the "
            f"producer's round trips set the pace (requests in flight, batching){conn}",
        )
    if by >= ROSE_MS or (by > 0 and by >= 0.5 * _grew(held.broker_ms, missed.broker_ms) and by >= 1.0):
        return Diagnosis(
            PART_BOUND[part],
            f"{at}: {TIME_PARTS[part]} grew {held.parts_ms.get(part, 0.0):.1f} -> {missed.parts_ms.get(part, 0.0):.1f} "
            f"ms per produce request ({total})",
        )
    behind = _grew(held.behind_ms, missed.behind_ms)
    if behind >= ROSE_MS:
        return Diagnosis(
            "client",
            f"{at}: the producers fell behind their schedule ({held.behind_ms or 0:.0f} -> {missed.behind_ms or 0:.0f} "
            f"ms) while {total}: the load generator, not the cluster, could not keep the rate",
        )
    grew = f"the producers' queue p99 grew {client:.0f} ms"
    return Diagnosis("unknown", f"{at}: nothing measured rose enough to name ({total}; {grew})")


def lowest(e: StepEvidence, why: str = "no step held") -> Diagnosis:
    """A run where no rate held, judged on its lowest step: what was at its limit, or where the time went."""
    at = f"{why}, down to {e.words()}"
    found = _saturated(e)
    if found is not None:
        return Diagnosis(found.bound, f"{at}: {found.reason}")
    if e.parts_ms:
        part, ms = max(e.parts_ms.items(), key=lambda kv: kv[1])
        if e.client_queue_ms is None or ms * 2 >= e.client_queue_ms:
            return Diagnosis(
                PART_BOUND[part],
                f"{at}: most of a produce request's time was {TIME_PARTS[part]}, {ms:.1f} of {e.broker_ms:.1f} ms",
            )
    if e.connection is not None and e.connection[2] >= CONNECTION_BUSY:  # round trips set the rate: advisor.rules
        return Diagnosis(
            "none",
            f"{at}: {e.connection_words()}, so requests waited in its socket: fewer, larger "
            "requests (linger.ms, batch.size) or more producers carry more",
        )
    if e.client_queue_ms is not None:
        return Diagnosis(
            "client",
            f"{at}: the records waited {e.client_queue_ms:.0f} ms (p99) in the producer, the brokers took "
            f"{e.broker_ms:.1f} ms per produce request",
        )
    return Diagnosis("unknown", f"{at}: the records carry no broker or client figures to name a cause")


def from_steps(steps: Sequence[Step], run: runs.Seconds, nic: float | None) -> Diagnosis | None:
    """The limit of a search run from its recorded steps; None when it has no steps, or no missed step above the
    highest that held (the search stopped at its cap: nothing above it was tried)."""
    if not steps:
        return None
    missed_at = {s.rate_msg_s for s in steps if not s.held}
    held = [s for s in steps if s.held and s.rate_msg_s not in missed_at]  # held, never missed again
    if not held:
        why = "no rate held again when measured again" if any(s.held for s in steps) else "no step held"
        return lowest(evidence(min(steps, key=lambda s: s.rate_msg_s), run, nic), why)
    top = max(held, key=lambda s: s.rate_msg_s)
    above = [s for s in steps if not s.held and s.rate_msg_s > top.rate_msg_s]
    if not above:
        return None
    missed = min(above, key=lambda s: s.rate_msg_s)
    return compare(evidence(top, run, nic), evidence(missed, run, nic))


def of_trial(trial_dir: Path, nic: float | None) -> Diagnosis | None:
    """The limit of the search a trial ran: a sweep trial's (its trial.json steps, its ramp/ run's seconds) or a
    bench run's (its result.json steps and seconds); None without a search."""
    rec = trials.read_trial(trial_dir)
    if rec is not None:
        steps, run = rec.steps, trial_dir / trials.SEARCH_RUN
    elif runs.has_result(trial_dir):
        found = runs.read_result(trial_dir).sustainable
        steps, run = list(found.steps) if found else [], trial_dir
    else:
        return None
    if not steps or not runs.has_result(run):
        return None
    return from_steps(steps, runs.seconds(run), nic)
