"""The sustainable-rate search (loadgen.search) against a simulated cluster whose p99 at each rate is known: it
brackets, bisects and confirms; decides a clear step early; re-measures a rate that held once and says so; and
judges only a step's own settled seconds."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from loadgen import recorder
from loadgen.channel import Timing
from loadgen.runner import RawRun, Tick
from loadgen.search import LEAD_S, LOCAL_LEAD_S, Searcher, conclude
from loadgen.sustainable import Search, Slo, Sustainable
from loadgen.workload import parse_workload

P99 = Callable[[float, int], float]  # (rate, second) -> that second's p99 end-to-end, ms


def _hist(p99_ms: float) -> bytes:
    h = recorder.new_histogram()
    for _ in range(97):
        recorder.record_ns(h, 2_000_000)
    for _ in range(3):
        recorder.record_ns(h, int(p99_ms * 1e6))  # the top 3 %: the second's p99
    return h.encode()


def simulate(
    p99: P99, search: Search, u: float = 1000.0, *, lag: int = 0, seconds: int = 600, lead_s: int = LEAD_S
) -> Searcher:
    """Run a Searcher second by second against a cluster whose p99 is `p99`; the consumer receives `lag` seconds of
    each step's messages late (a backlog to drain) after a missed step."""
    w = parse_workload({"name": "s", "producerRate": 1, "warmupDurationMinutes": search.warmup_s / 60})
    sr = Searcher(w, u, search, Slo(p99_e2e_ms=100), say=lambda m: None, lead_s=lead_s)
    raw = RawRun(w, ["t"], Timing(t0_ns=0), 0)
    plan = [(0, sr.first)]

    def publish(second: int, msg_s: float) -> None:
        plan.append((second, msg_s))

    owed = 0
    for s in range(seconds):
        rate = next(r for at, r in reversed(plan) if at <= s)
        n = got = int(rate)
        if lag and sr.steps and not sr.steps[-1].held and s < sr.steps[-1].judged_s[-1] + lead_s + lag:
            got, owed = 0, owed + n  # after a miss, nothing arrives for a while: a backlog
        elif owed:
            got, owed = n + owed, 0
        lat = _hist(p99(rate, s))
        raw.ticks.append(Tick("producer", 0, s, n, n * 1024, 0, lat, 0.0, 0.0, 0, n))
        raw.ticks.append(Tick("consumer", 0, s, got, got * 1024, 0, lat, 0.0, 0.0, 0, 0))
        if sr(raw, publish):
            return sr
    raise AssertionError("the search never ended")


def knee(k: float) -> P99:
    """p99 = 100 ms at `k` msg/s, growing with the cube of the rate."""
    return lambda rate, s: 100.0 * (rate / k) ** 3


@pytest.mark.parametrize("lead_s", [LOCAL_LEAD_S, LEAD_S])
def test_it_brackets_bisects_and_confirms_just_below_the_knee(lead_s: int) -> None:
    s = Search(warmup_s=2, min_step_s=3, max_step_s=6)
    sr = simulate(knee(800.0), s, lead_s=lead_s)
    phases = [st.phase for st in sr.steps]
    assert phases[0] == "bracket" and "bisect" in phases and phases[-1] == "confirm", phases
    assert sr.answer is not None and sr.answer.held and sr.answer.phase == "confirm"
    ans = sr.answer.rate_msg_s
    assert ans <= 800 and 800 / ans <= (1 + s.resolution) ** 2, ans  # within the resolution of the knee
    lo_missed = min(st.rate_msg_s for st in sr.steps if not st.held)
    assert lo_missed / ans <= 1 + s.resolution  # the rate that missed just above it bounds it
    found = conclude(Sustainable(Slo(), s, 1024, 1000.0, 1.024), sr)
    assert found.rate_msg_s == ans and "held twice" in found.note and not found.remeasured
    # each step starts `lead_s` after the last second the one before it judged (nothing to drain here)
    assert all(b.start_s == a.judged_s[-1] + lead_s for a, b in itertools.pairwise(sr.steps)), sr.steps


def test_a_clear_step_is_decided_early_and_one_near_the_slo_runs_its_full_length() -> None:
    s = Search(warmup_s=2, min_step_s=3, max_step_s=8)
    sr = simulate(knee(800.0), s)
    for st in sr.steps:
        p = st.p99_e2e_ms or 0.0
        if p <= s.early_hold * 100 or p > s.early_miss * 100:
            assert st.early and len(st.judged_s) == s.judged_at_least(st.rate_msg_s), st
        else:
            assert not st.early and len(st.judged_s) == s.max_step_s, st


def test_a_step_is_long_enough_for_its_percentiles_tail() -> None:
    s = Search(min_step_s=5, max_step_s=30)
    assert s.judged_at_least(10_000) == 5  # 100 latencies a second beyond the p99
    assert s.judged_at_least(1_000) == 20  # 10 a second: 200 take 20 s
    assert s.judged_at_least(100) == 30  # capped


def test_a_rate_that_held_then_missed_is_measured_again_and_said_so() -> None:
    s = Search(warmup_s=2, min_step_s=3, max_step_s=4, max_steps=30)
    first: dict[float, int] = {}

    def flaky(rate: float, sec: int) -> float:  # 650-1,000 msg/s hold the first time they run, then miss
        if rate > 1000:
            return 300.0
        if rate < 650:
            return 5.0
        first.setdefault(rate, sec)
        return 5.0 if sec - first[rate] < 6 else 300.0

    sr = simulate(flaky, s)
    assert sr.remeasured and "held, then missed when measured again" in sr.remeasured[0]
    assert sr.answer is not None and sr.answer.rate_msg_s < 650  # the search went on below each of them
    confirms = [st for st in sr.steps if st.phase == "confirm"]
    assert len(confirms) == len(sr.remeasured) + 1 and not any(st.held for st in confirms[:-1])


def test_only_a_steps_settled_seconds_are_judged() -> None:
    s = Search(warmup_s=2, min_step_s=3, max_step_s=4)
    sr = simulate(knee(800.0), s, lag=3)
    for prev, st in zip(sr.steps, sr.steps[1:], strict=False):
        assert st.judged_s[0] > st.start_s  # its first second is the transition
        if not prev.held:  # after a miss, not until the consumers caught up
            assert st.judged_s[0] >= st.start_s + 2, (prev, st)


def test_no_rate_that_held_gives_no_answer_and_says_how_low_it_went() -> None:
    s = Search(warmup_s=2, min_step_s=2, max_step_s=3, max_steps=4)
    sr = simulate(lambda rate, sec: 500.0, s)
    found = conclude(Sustainable(Slo(), s, 1024, 1000.0, 1.024), sr)
    assert found.rate_msg_s is None and len(sr.steps) == 4 and "no step held" in found.note
    assert all(not st.held for st in sr.steps)
    assert [round(st.rate_msg_s) for st in sr.steps] == [round(700 / 1.25**i) for i in range(4)]
    # the bound an ablation counts such a run at (sweeps.confirm.at_most): the lowest rate tried, in MB/s
    assert found.below_mb_s == pytest.approx(700 / 1.25**3 * 1024 / 1e6), found.below_mb_s


def test_a_search_where_rates_held_once_only_is_bounded_by_the_highest_that_held() -> None:
    """Every rate holds the first time it runs and misses the next: no rate held twice, and none at or above the
    highest that held once did: that is the bound, not the lowest rate tried."""
    s = Search(warmup_s=2, min_step_s=2, max_step_s=3, max_steps=6)
    seen: dict[float, int] = {}

    def once(rate: float, sec: int) -> float:
        seen.setdefault(rate, sec)
        return 5.0 if sec - seen[rate] < 4 else 300.0

    sr = simulate(once, s)
    found = conclude(Sustainable(Slo(), s, 1024, 1000.0, 1.024), sr)
    held = [st.rate_msg_s for st in sr.steps if st.held]
    assert found.rate_msg_s is None and held and "the highest held once" in found.note, (found.note, sr.steps)
    assert found.below_mb_s == pytest.approx(max(held) * 1024 / 1e6), found.below_mb_s


def test_a_search_without_an_answer_says_when_the_tail_is_not_load() -> None:
    """No rate held: when the steps' p99 does not grow with the rate, the answer says the tail is not load and that
    a lower rate will not hold either (loadgen.knee); when it grows steeply, the search only ran out of steps."""
    s = Search(warmup_s=2, min_step_s=2, max_step_s=3, max_steps=4)
    flat = conclude(Sustainable(Slo(), s, 1024, 1000.0, 1.024), simulate(lambda rate, sec: 500.0, s))
    assert flat.rate_msg_s is None and "slope 0.00 of log p99 on log rate over 4 steps" in flat.note, flat.note
    assert flat.note.endswith("the tail is not load, and a lower rate will not hold it either"), flat.note
    steep = conclude(Sustainable(Slo(), s, 1024, 1000.0, 1.024), simulate(knee(100.0), s))
    assert steep.rate_msg_s is None and "no step held" in steep.note and "not load" not in steep.note, steep.note


def test_a_second_is_judged_only_once_every_worker_reported_it() -> None:
    w = parse_workload({"name": "s", "producerRate": 1, "producersPerTopic": 2, "warmupDurationMinutes": 0})
    sr = Searcher(w, 100_000.0, Search(warmup_s=0, min_step_s=2, max_step_s=3), Slo(), say=lambda m: None)
    raw = RawRun(w, ["t"], Timing(t0_ns=0), 0)
    for sec in range(3):  # 70,000 msg/s, the first step (0.7 × the probe)
        raw.ticks.append(Tick("producer", 0, sec, 35_000, 0, 0, _hist(5), 0.0, 0.0, 0, 35_000))
        raw.ticks.append(Tick("consumer", 0, sec, 70_000, 0, 0, _hist(5), 0.0, 0.0, 0, 0))
    assert not sr(raw, lambda s, r: None) and sr.open.judged == []  # producer 1 has not reported
    for sec in range(3):
        raw.ticks.append(Tick("producer", 1, sec, 35_000, 0, 0, _hist(5), 0.0, 0.0, 0, 35_000))
    sr(raw, lambda s, r: None)
    assert sr.steps and sr.steps[0].judged_s == [1, 2] and sr.steps[0].held


@pytest.mark.parametrize("u", [1000.0, 12_000.0])
def test_it_never_goes_above_its_cap(u: float) -> None:
    s = Search(warmup_s=2, min_step_s=2, max_step_s=3)
    sr = simulate(lambda rate, sec: 5.0, s, u=u)  # nothing is ever slow
    assert sr.at_top and sr.answer is not None
    assert max(st.rate_msg_s for st in sr.steps) == pytest.approx(s.cap * u)


def test_an_overloaded_step_misses_at_once_and_a_transient_second_does_not_end_a_step() -> None:
    """Every second beyond `early_miss` of the SLO is the load: the step misses after its least seconds, so it
    leaves no longer backlog behind; a transient second that carries a short step's p99 over does not end it,
    and a step below the knee with such a second still holds."""
    s = Search(warmup_s=2, min_step_s=2, max_step_s=8, max_steps=12)
    u = 100_000.0  # enough latencies a second: judged_at_least is min_step_s at every rate tried

    def p99(rate: float, sec: int) -> float:
        if rate > 80_000:
            return 400.0  # beyond the knee: every second
        return 400.0 if sec % 5 == 3 else 10.0  # below it: one transient second in five

    sr = simulate(p99, s, u)
    assert all(s.judged_at_least(st.rate_msg_s) == 2 for st in sr.steps)
    over = [st for st in sr.steps if st.rate_msg_s > 80_000]
    assert over and all(not st.held and st.early and len(st.judged_s) == 2 for st in over), over
    under = [st for st in sr.steps if st.rate_msg_s <= 80_000]
    assert under and all(st.held for st in under), under  # never missed on one second
    assert any(any(x % 5 == 3 for x in st.judged_s[:2]) and len(st.judged_s) > 2 for st in under), under
    assert sr.answer is not None and 70_000 <= sr.answer.rate_msg_s <= 80_000, sr.steps
