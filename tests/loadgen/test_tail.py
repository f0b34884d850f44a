"""The tail budget (loadgen.tail) on a run whose seconds' evidence is known: each second over the SLO is matched
with the cause present in it or the second before, counted once for its primary cause; a loop stalled while it
waited for a CPU is starvation, not the harness; base rates come from the seconds that held."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.typed import to_json
from loadgen import recorder, tail
from loadgen.channel import Timing
from loadgen.rawrun import Evidence
from loadgen.runner import RawRun, Tick
from loadgen.tail import combine, words
from loadgen.workload import parse_workload
from records.seconds import BrokerSecond, HostSecond
from records.tail import TailBudget

Rows = Sequence[Mapping[str, Any]]


def _hist(p99_ms: float) -> bytes:
    h = recorder.new_histogram()
    for _ in range(97):
        recorder.record_ns(h, 3_000_000)
    for _ in range(3):
        recorder.record_ns(h, int(p99_ms * 1e6))
    return h.encode()


def budget(raw: RawRun, seconds: list[int], slo_ms: float, brokers: Rows, hosts: Rows) -> TailBudget:
    """loadgen.tail.budget on rows as the run's Parquet files hold them."""
    return tail.budget(raw, seconds, slo_ms, [BrokerSecond.of(r) for r in brokers], [HostSecond.of(r) for r in hosts])


def run(p99s: list[float], evidence: dict[int, dict[str, float]]) -> RawRun:
    w = parse_workload({"name": "t", "producerRate": 1000})
    raw = RawRun(w, ["t"], Timing(t0_ns=0), 0)
    for s, p in enumerate(p99s):
        raw.ticks.append(Tick("producer", 0, s, 1000, 0, 0, _hist(5), 0.0, 0.0, 0, 1000, None, Evidence()))
        ev = Evidence(**evidence.get(s, {}))
        raw.ticks.append(Tick("consumer", 0, s, 1000, 0, 0, _hist(p), 0.0, 0.0, 0, 0, None, ev))
    return raw


def test_each_second_over_the_slo_is_given_its_primary_cause() -> None:
    p99s = [20.0] * 12
    p99s[2] = p99s[5] = p99s[8] = p99s[10] = 150.0
    evidence = {
        5: {"loop_gap_ms": 140.0, "main_wait_ms": 135.0},  # waited for a CPU: starved
        8: {"loop_gap_ms": 60.0, "main_wait_ms": 1.0},
    }  # its own stall: the harness
    brokers: list[dict[str, Any]] = [
        {"second": 1, "broker_id": 1, "gc_pause_s_per_s": 0.045},  # the second before 2
        {"second": 6, "broker_id": 2, "gc_pause_s_per_s": 0.045},
    ]  # a second that held
    hosts: list[dict[str, Any]] = [{"second": s, "cpu_busy": 0.4, "cpu_pressure": 0.1} for s in range(12)]
    b = budget(run(p99s, evidence), list(range(12)), 100.0, brokers, hosts)
    assert b.seconds == 12 and b.above_slo == 4
    by = {c.cause: c for c in b.causes}
    assert by["broker_gc"].primary == 1 and by["broker_gc"].seconds == 1
    assert by["cpu"].primary == 1 and by["harness"].primary == 1
    assert (b.unexplained.seconds, b.unexplained.share) == (1, 0.25)  # second 10: nothing was there
    assert sum(c.share for c in b.causes) + b.unexplained.share == 1.0
    # a GC pause in a second that held counts against the cause's discrimination: its base rate
    assert by["broker_gc"].base_rate == 3 / 8  # seconds 1, 6 and 7 (each pause and the second after it)
    assert [p.primary for p in b.per_second] == ["broker_gc", "cpu", "harness", None]
    assert "link" in b.not_observed and "broker_jit" in b.not_observed
    assert TailBudget.from_json(to_json(b)) == b  # as result.json keeps it
    text = "\n".join(words(b))
    assert "4 of 12 s above p99 end-to-end 100 ms" in text and "unexplained: 25% (1 s)" in text


def test_a_run_that_held_throughout_has_an_empty_budget_and_budgets_add_up() -> None:
    calm = budget(run([20.0] * 5, {}), list(range(5)), 100.0, [], [])
    assert calm.above_slo == 0 and words(calm) == ["tail budget: 0 of 5 s above p99 end-to-end 100 ms"]
    hot = budget(run([150.0] * 3, {1: {"main_wait_ms": 80.0}}), list(range(3)), 100.0, [], [])
    c = combine([b.brief() for b in (calm, hot, hot)])
    assert c.runs == 3 and c.seconds == 11 and c.above_slo_s == 6
    assert c.primary_s["cpu"] == 4 and c.unexplained_s == 2  # seconds 1 and 2 of each hot run: 1 or its next
    assert c.cause is not None and "CPU" in c.cause and c.cause_share == 4 / 6


def test_a_compiling_jit_is_the_cause_of_the_cpu_starvation_it_brings() -> None:
    """A broker's JIT taking 0.3 core in a second whose CPUs were saturated: the compiler is named, not the
    starvation (the symptom both show); starvation alone, with nothing more specific present, is still named."""
    p99s = [20.0, 150.0, 20.0, 150.0]
    brokers: list[dict[str, Any]] = [{"second": 1, "broker_id": 2, "jit_compile_s_per_s": 0.3}]
    hosts: list[dict[str, Any]] = [{"second": s, "cpu_busy": 0.99, "cpu_pressure": 0.9} for s in range(4)]
    b = budget(run(p99s, {}), list(range(4)), 100.0, brokers, hosts)
    assert [(p.second, p.primary) for p in b.per_second] == [(1, "broker_jit"), (3, "cpu")]
    by = {c.cause: c for c in b.causes}
    assert by["cpu"].seconds == 2 and by["cpu"].primary == 1  # present in both, primary in one
    assert by["broker_jit"].primary == 1 and by["cpu"].base_rate == 1.0


def test_a_neighbour_taking_the_cpus_is_named_before_what_it_stretches() -> None:
    """Another process took 0.3 core in second 1, when a broker's JIT time also read high (compile time is elapsed
    time, and a starved compiler takes longer): the neighbour is the primary cause, by name; in second 3 it took
    under OTHER_CORES, so the JIT is."""
    p99s = [20.0, 150.0, 20.0, 150.0]
    brokers: list[dict[str, Any]] = [{"second": s, "broker_id": 1, "jit_compile_s_per_s": 0.6} for s in (1, 3)]
    hosts: list[dict[str, Any]] = [
        {"second": 0, "other_cpu": 0.01, "other_top": "sshd[7]"},
        {"second": 1, "other_cpu": 0.3, "other_top": "python3[42]"},
        {"second": 2, "other_cpu": 0.0, "other_top": ""},
        {"second": 3, "other_cpu": 0.05, "other_top": "sshd[7]"},
    ]
    b = budget(run(p99s, {}), list(range(4)), 100.0, brokers, hosts)
    assert [(p.second, p.primary) for p in b.per_second] == [(1, "neighbour"), (3, "broker_jit")]
    by = {c.cause: c for c in b.causes}
    assert by["neighbour"].processes == ("python3[42]",) and by["neighbour"].base_rate == 0.5  # 2 of 0, 2
    assert "other processes on this machine taking CPUs (python3[42]): 50%" in "\n".join(words(b))
    c = combine([b.brief()])
    assert c.cause is not None and c.primary_s["neighbour"] == c.primary_s["broker_jit"] == 1
    assert b.brief().processes == ("python3[42]",)


def test_a_moving_controller_is_named_in_the_second_it_moved() -> None:
    """The active controller moved from broker 1 to 2 in second 2 (each broker's ActiveControllerCount), and the
    brokers counted none in second 4: both seconds over the SLO are the quorum's, not unexplained."""
    p99s = [20.0, 20.0, 150.0, 20.0, 150.0, 20.0]
    brokers: list[dict[str, Any]] = []
    for s in range(6):
        lead = 1 if s < 2 else 2
        brokers += [
            {"second": s, "broker_id": b, "active_controller": float(b == lead), "active_controllers": 1.0}
            for b in (1, 2)
        ]
    brokers[8]["active_controllers"] = 0.0  # second 4, broker 1's row
    b = budget(run(p99s, {}), list(range(6)), 100.0, brokers, [])
    assert [(p.second, p.primary) for p in b.per_second] == [(2, "quorum"), (4, "quorum")]
    assert b.unexplained.seconds == 0
    assert "the active KRaft controller moving: 100%" in "\n".join(words(b))


def configured(producer: dict[str, Any], consumer: dict[str, Any], e2e_ms: float, queue_ms: float) -> RawRun:
    """Five seconds over the SLO: producers whose records waited `queue_ms` in their queue against 20-ms round trips
    and a 5-ms publish p99, consumers at `e2e_ms`, under the given client configs."""
    w = parse_workload({"name": "t", "producerRate": 1000, "producerConfig": producer, "consumerConfig": consumer})
    raw = RawRun(w, ["t"], Timing(t0_ns=0), 0)
    tail = {"queue_p99_ms": queue_ms, "rtt_p99_ms": 20.0}
    for s in range(5):
        raw.ticks.append(Tick("producer", 0, s, 1000, 0, 0, _hist(5), 0.0, 0.0, 0, 1000, None, Evidence(**tail)))
        raw.ticks.append(Tick("consumer", 0, s, 1000, 0, 0, _hist(e2e_ms), 0.0, 0.0, 0, 0, None, Evidence()))
    return raw


def test_a_wait_the_clients_were_configured_to_make_is_named_over_the_events_it_hides() -> None:
    """linger.ms=1000 with records a second in the producer's queue, and fetch.min.bytes=10 MB with a 500-ms fetch
    wait and records half a second from their acknowledgement to the consumer: every second over the SLO is the
    setting's, though a broker also paused for GC in one of them. The same figures without the setting name neither
    (a queue or a consumer lag alone says where the time went, not why), nor does a wait set below a fifth of the
    SLO."""
    gc: list[dict[str, Any]] = [{"second": 2, "broker_id": 1, "gc_pause_s_per_s": 0.045}]
    linger = budget(configured({"linger.ms": 1000}, {}, 1000.0, 990.0), list(range(5)), 100.0, gc, [])
    assert [p.primary for p in linger.per_second] == ["linger"] * 5
    assert "the producer's linger (linger.ms: records wait for their batch): 100%" in "\n".join(words(linger))
    fetch = {"fetch.min.bytes": 10485760, "fetch.wait.max.ms": 500}
    held = budget(configured({}, fetch, 505.0, 3.0), list(range(5)), 100.0, gc, [])
    assert [p.primary for p in held.per_second] == ["fetch_wait"] * 5
    for bare in (configured({}, {}, 1000.0, 990.0), configured({"linger.ms": 10}, {}, 1000.0, 990.0)):
        b = budget(bare, list(range(5)), 100.0, gc, [])
        assert {p.primary for p in b.per_second} == {None, "broker_gc"}, b.per_second
        assert "linger" in b.not_observed and "fetch_wait" in b.not_observed


def _requests(second: int, broker: int, ms: float) -> dict[str, Any]:
    """A broker's second whose produce requests took `ms` together: two parts and the total Kafka also keeps."""
    return {
        "second": second,
        "broker_id": broker,
        "produce_requests_per_s": 300.0,
        "produce_local_ms_per_s": ms / 3,
        "produce_remote_ms_per_s": 2 * ms / 3,
        "produce_total_ms_per_s": ms,
    }


def test_a_producer_connection_near_its_limit_is_named_before_a_link_at_its_peak() -> None:
    """Second 1: the one producer's requests were at broker 2 for 900 ms of the second (0.9 of its connection, above
    CONNECTION_BUSY) while a link peaked at 96 % of its rate: the connection is the primary cause. Second 3: 700 ms
    (0.7; counted with Kafka's total as well it would read 1.4): nothing. With a second producer process each
    connection carries half of it: not near its limit."""
    p99s = [20.0, 150.0, 20.0, 150.0]
    brokers = [_requests(1, 2, 900.0), _requests(1, 1, 300.0), _requests(3, 2, 700.0)]
    hosts: list[dict[str, Any]] = [{"second": 1, "link_veth1_peak_out": 0.96}]
    raw = run(p99s, {})
    b = budget(raw, list(range(4)), 100.0, brokers, hosts)
    assert [(p.second, p.primary) for p in b.per_second] == [(1, "connection"), (3, None)]
    by = {c.cause: c for c in b.causes}
    assert by["connection"].seconds == 1 and by["link"].seconds == 1 and by["connection"].base_rate == 0.5
    assert "a producer connection near its one-request-at-a-time limit" in "\n".join(words(b))
    raw.ticks.append(Tick("producer", 1, 1, 1000, 0, 0, _hist(5), 0.0, 0.0, 0, 1000, None, Evidence()))
    two = budget(raw, list(range(4)), 100.0, brokers, hosts)
    assert [(p.second, p.primary) for p in two.per_second] == [(1, "link"), (3, None)]
