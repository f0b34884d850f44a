"""The limit of a sustainable-rate run read from its search's steps (advisor.limit): what rose from the highest step
that held to the lowest above it that missed, and where the time went at the lowest step when no rate held. On
per-second rows built here, each one changing one figure between two steps; the recorded in-flight plant is
tests/advisor/test_recorded_diagnosis.py's."""

from __future__ import annotations

from typing import Any

from advisor import limit
from records.result import Step
from records.run import Seconds
from tests.advisor.test_recorded_diagnosis import RECORDED
from tests.helpers import FIXTURES


def _step(rate: float, seconds: range, held: bool, p99: float) -> Step:
    sent = int(rate * len(seconds))
    return Step(rate, seconds.start, list(seconds), sent=sent, received=sent, p99_e2e_ms=p99, held=held)


def _broker(second: int, queue_ms: float = 0.1, remote_ms: float = 2.0, idle: float = 0.8) -> list[dict[str, Any]]:
    """Three brokers' rows for one second, 100 produce requests each: `queue_ms` and `remote_ms` per request."""
    return [
        {
            "broker_id": b,
            "second": second,
            "produce_requests_per_s": 100.0,
            "produce_queue_ms_per_s": 100 * queue_ms,
            "produce_local_ms_per_s": 100 * 0.5,
            "produce_remote_ms_per_s": 100 * remote_ms,
            "produce_response_queue_ms_per_s": 100 * 0.05,
            "produce_response_send_ms_per_s": 100 * 0.05,
            "request_handler_idle": idle,
            "network_processor_idle": 0.9,
            "bytes_in_per_s": 5e6,
            "replication_bytes_in_per_s": 5e6,
        }
        for b in (1, 2, 3)
    ]


def _producer(second: int, queue_ms: float = 5.0, behind_ms: float = 1.0) -> dict[str, Any]:
    return {"role": "producer", "second": second, "queue_p99_ms": queue_ms, "rtt_p99_ms": 4.0} | {
        "delay_max_ms": behind_ms
    }


HELD, MISSED = range(0, 5), range(7, 12)
STEPS = [_step(1000, HELD, True, 40.0), _step(1250, MISSED, False, 180.0)]


def test_a_handler_queue_that_grows_above_the_knee_names_the_request_handlers() -> None:
    brokers = [r for s in HELD for r in _broker(s)] + [r for s in MISSED for r in _broker(s, queue_ms=30.0)]
    samples = [_producer(s) for s in (*HELD, *MISSED)]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.bound == "request_handlers", d
    assert d.reason.startswith("from 1,000 msg/s (p99 40.0 ms), the highest step that held, to 1,250 msg/s"), d
    assert "queued for a request handler (num.io.threads) grew 0.1 -> 30.0 ms per produce request" in d.reason, d


def test_replication_wait_that_grows_names_replication_and_a_saturated_pool_or_link_comes_first() -> None:
    brokers = [r for s in HELD for r in _broker(s)] + [r for s in MISSED for r in _broker(s, remote_ms=40.0)]
    samples = [_producer(s) for s in (*HELD, *MISSED)]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.bound == "replication" and "waiting for the followers" in d.reason, d
    # the same steps with the pool at 10 % idle above the knee: the saturated resource is named
    busy = [r for s in HELD for r in _broker(s)] + [r for s in MISSED for r in _broker(s, remote_ms=40.0, idle=0.1)]
    d = limit.from_steps(STEPS, Seconds.of(busy, samples, []), None)
    assert d is not None and d.bound == "request_handlers" and "10% idle" in d.reason, d
    # ... and with 11-MB/s links (each broker takes 10 MB/s in: 91 %), the link; at 12 MB/s (83 %) it is not
    d = limit.from_steps(STEPS, Seconds.of(busy, samples, []), 11.0)
    assert d is not None and d.bound == "network_in" and "(in) carried 91% of its rate" in d.reason, d
    d = limit.from_steps(STEPS, Seconds.of(busy, samples, []), 12.0)
    assert d is not None and d.bound == "request_handlers", d


def test_records_waiting_in_the_producer_while_the_brokers_stay_flat_are_round_trips() -> None:
    brokers = [r for s in (*HELD, *MISSED) for r in _broker(s)]
    samples = [_producer(s) for s in HELD] + [_producer(s, queue_ms=150.0) for s in MISSED]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.bound == "none", d
    assert "the records waited in the producer (its queue p99 5 -> 150 ms" in d.reason, d
    # how busy each producer connection was at the missed step (a broker serves one request per connection at a time)
    assert "connection to the busiest broker carried 100 produce requests a second of 2.7 ms each, busy 27%" in d.reason


def test_a_producer_behind_its_schedule_with_nothing_else_rising_is_the_client() -> None:
    brokers = [r for s in (*HELD, *MISSED) for r in _broker(s)]
    samples = [_producer(s) for s in HELD] + [_producer(s, behind_ms=90.0) for s in MISSED]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.bound == "client" and "fell behind their schedule (1 -> 90 ms)" in d.reason, d


def test_a_run_where_no_step_held_is_judged_on_its_lowest_step_never_silent() -> None:
    steps = [_step(1000, HELD, False, 900.0), _step(800, MISSED, False, 700.0)]
    brokers = [r for s in (*HELD, *MISSED) for r in _broker(s, queue_ms=60.0)]
    samples = [_producer(s) for s in (*HELD, *MISSED)]
    d = limit.from_steps(steps, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.bound == "request_handlers", d
    assert d.reason.startswith("no step held, down to 800 msg/s (p99 700.0 ms)"), d
    # a rate that held once and missed when measured again is not an answer either
    again = [_step(800, HELD, True, 90.0), _step(1000, range(6, 9), False, 300.0), _step(800, MISSED, False, 200.0)]
    d = limit.from_steps(again, Seconds.of(brokers, samples, []), None)
    assert d is not None and d.reason.startswith("no rate held again when measured again, down to 800 msg/s"), d


def test_a_search_that_held_at_its_cap_has_no_limit_to_name() -> None:
    assert limit.from_steps([_step(1000, HELD, True, 40.0)], Seconds.of([], [], []), None) is None
    assert limit.from_steps([], Seconds.of([], [], []), None) is None


def test_the_recorded_in_flight_plant_is_read_from_its_own_seconds() -> None:
    d = limit.of_trial(RECORDED / "inflight-one", None)
    assert d is not None and d.bound == "none", d
    assert "from 46,025 msg/s" in d.reason and "48,665 msg/s" in d.reason, d


def _host(second: int, out: float, peak: float) -> dict[str, Any]:
    """The shaped testbed's host row: broker 2's link out at `out` of its rate, its fullest 0.1 s at `peak`."""
    return {"second": second, "link_b2_out": out, "link_b2_peak_out": peak, "link_b2_in": 0.3, "link_b2_peak_in": 0.4}


def test_a_shaped_link_at_its_rate_in_bursts_is_the_network_even_below_85_percent_on_average() -> None:
    """The shaped tuned sweep's 6-partition searches missed with their busiest link out at 79-88 % on average and
    at its rate within every second: the link, not the producer, where records queued."""
    brokers = [r for s in (*HELD, *MISSED) for r in _broker(s)]
    samples = [_producer(s) for s in HELD] + [_producer(s, queue_ms=150.0) for s in MISSED]
    host = [_host(s, 0.6, 0.8) for s in HELD] + [_host(s, 0.8, 1.02) for s in MISSED]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, host), None)
    assert d is not None and d.bound == "network_out", d
    assert "the busiest link (b2 out) carried 80% of its rate, at its rate in bursts in 100% of the seconds" in d.reason
    calm = [_host(s, 0.6, 0.8) for s in (*HELD, *MISSED)]  # the same wait in the producer, the link calm: round trips
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, calm), None)
    assert d is not None and d.bound == "none", d


def test_the_recorded_shaped_sweeps_repeats_are_bound_by_their_links() -> None:
    """Kafka's defaults (1 partition: the leader's link out carries the replication to both followers and the
    consumer) and the tuned configuration, recorded on 12-MB/s shaped links: every confirmation repeat's search
    missed at its link (tests/fixtures/recorded/shaped-tuned)."""
    trials = FIXTURES / "recorded" / "shaped-tuned" / "trials"
    for d in sorted(trials.glob("confirm-*")):
        found = limit.of_trial(d, None)
        assert found is not None and found.bound == "network_out", (d.name, found)


def test_a_machine_out_of_cpu_above_the_knee_is_named_and_its_cpu_is_shown_otherwise() -> None:
    """The loopback testbed shares two cores among brokers and clients: a missed step with the machine's CPUs at
    95 % is bound by them; below 90 % the CPU is only reported beside the brokers' time."""
    brokers = [r for s in (*HELD, *MISSED) for r in _broker(s)]
    samples = [_producer(s) for s in HELD] + [_producer(s, queue_ms=150.0) for s in MISSED]
    host = [{"second": s, "cpu_busy": 0.6} for s in HELD] + [{"second": s, "cpu_busy": 0.95} for s in MISSED]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, host), None)
    assert d is not None and d.bound == "cpu" and "the machine's CPUs were 95% busy" in d.reason, d
    host = [{"second": s, "cpu_busy": 0.6} for s in HELD] + [{"second": s, "cpu_busy": 0.85} for s in MISSED]
    d = limit.from_steps(STEPS, Seconds.of(brokers, samples, host), None)
    assert d is not None and d.bound == "none" and "the machine's CPUs 60% -> 85% busy" in d.reason, d


def test_a_producer_connection_busy_all_the_time_is_named_when_no_rate_held() -> None:
    """A broker serves one request per connection at a time: one producer sending each broker 100 produce requests a
    second of 9.7 ms each keeps its connections busy 97 % of the time, which no broker figure shows as saturated;
    with 2.7-ms requests (27 %) the lowest step is named by where its time went, as before."""
    step = _step(1000, HELD, False, 300.0)
    busy = [r for s in HELD for r in _broker(s, remote_ms=9.0)]
    d = limit.from_steps([step], Seconds.of(busy, [_producer(s, queue_ms=100.0) for s in HELD], []), None)
    assert d is not None and d.bound == "none", d
    assert "carried 100 produce requests a second of 9.7 ms each, busy 97% of the time" in d.reason, d
    two = [_producer(s, queue_ms=100.0) | {"worker": w} for s in HELD for w in (0, 1)]  # two connections each
    d = limit.from_steps([step], Seconds.of(busy, two, []), None)
    assert d is not None and d.bound != "none", d  # 50 requests a second each: 48 % busy
    idle = [r for s in HELD for r in _broker(s)]
    d = limit.from_steps([step], Seconds.of(idle, [_producer(s, queue_ms=100.0) for s in HELD], []), None)
    assert d is not None and d.bound == "client" and "busy" not in d.reason, d
