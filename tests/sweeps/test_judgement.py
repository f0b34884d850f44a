"""The arithmetic of the judgement, on data whose answer is known: intervals, a run's verdict against the SLO,
and what a run says when it has no latency sample. (The search's own: tests/loadgen/test_search.py; the same logic on
real clusters: tests/e2e/test_shaped.py.)"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import replace

import pytest

from advisor.verdict import operating_lines
from core import stats
from loadgen.channel import Timing
from loadgen.rawrun import ProducerEnd
from loadgen.result import build
from loadgen.runner import RawRun
from loadgen.sustainable import Slo, judge_run
from loadgen.workload import parse_workload
from records.result import Latency, RunSummary
from records.summary import Summary
from records.trial import TrialRecord
from sweeps import confirm, space, timing
from tests.helpers import trial_record


def test_mean_interval_is_students_t() -> None:
    iv = stats.mean_interval([20.0, 22.0, 24.0])
    # mean 22, sd 2, t(2) = 4.303: 22 ± 4.303 × 2 / √3
    assert iv.estimate == 22 and iv.n == 3
    assert iv.low == pytest.approx(22 - 4.303 * 2 / 3**0.5) and iv.high == pytest.approx(22 + 4.303 * 2 / 3**0.5)
    one = stats.mean_interval([5.0])
    assert not one.has_interval and "no interval" in one.text()


def test_difference_beyond_and_within_noise() -> None:
    far = stats.difference([30.0, 31.0, 29.5], [10.0, 11.0, 10.5])
    assert far.excludes(0) and far.low is not None and far.low > 15
    near = stats.difference([20.0, 22.0, 21.0], [21.0, 20.5, 22.0])
    assert not near.excludes(0) and near.low is not None and near.low < 0 < near.high  # type: ignore[operator]


def test_ratio_interval_brackets_the_ratio_of_means() -> None:
    r = stats.ratio([40.0, 42.0, 41.0], [10.0, 10.5, 9.5])
    assert r is not None and r.estimate == pytest.approx(41 / 10)
    assert r.low is not None and r.high is not None and r.low < 4.1 < r.high and r.low > 3
    assert stats.ratio([1.0, 2.0], [0.0, 0.0]) is None  # no ratio to nothing


def test_pooled_sd_weights_groups_by_their_degrees_of_freedom() -> None:
    sd, df = stats.pooled_sd([[1.0, 3.0], [10.0, 10.0, 13.0]]) or (0, 0)
    want = ((statistics.variance([1.0, 3.0]) * 1 + statistics.variance([10.0, 10.0, 13.0]) * 2) / 3) ** 0.5
    assert df == 3 and sd == pytest.approx(want)


def test_no_latency_sample_is_said_not_printed_as_zero() -> None:
    w = parse_workload({"name": "u", "testDurationMinutes": 0.05})
    raw = RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=3_000_000_000), 0)
    raw.producers[0] = ProducerEnd(sent=10, outstanding=10, acked_map=bytes(10))
    s = build(raw).result.summary
    for lat in (s.publish_latency_ms, s.end_to_end_latency_ms):
        assert lat.count == 0 and lat.p99 is None and lat.max is None, lat
    assert s.publish_latency_ms.missing == "nothing was acknowledged"
    assert "waited longer than the window" in (s.end_to_end_latency_ms.missing or "")


def test_an_operating_point_run_holds_only_under_the_step_rules() -> None:
    ran = RunSummary(
        window_s=10,
        publish_errors=0,
        send_msg_s=1000.0,
        consume_msg_s=1000.0,
        end_to_end_latency_ms=Latency(count=10000, p99=80.0),
        publish_latency_ms=Latency(count=10000, p99=20.0),
    )
    assert judge_run(ran, 1000, Slo(p99_e2e_ms=100)) == ""
    slow = replace(ran, end_to_end_latency_ms=Latency(count=10000, p99=117.0))
    assert judge_run(slow, 1000, Slo()) == "p99 end-to-end 117.0 ms > 100 ms"
    assert "consumers fell behind" in judge_run(replace(ran, consume_msg_s=900.0), 1000, Slo())
    none = replace(ran, end_to_end_latency_ms=Latency(missing="no samples"))
    assert "no end-to-end latency sample" in judge_run(none, 1000, Slo())
    assert judge_run(ran, 1000, Slo(p99_e2e_ms=None, p99_publish_ms=10)) == "p99 publish 20.0 ms > 10 ms"
    # with headroom: 80 ms holds a 100-ms SLO but not 70 % of it (hold.headroom)
    assert judge_run(ran, 1000, Slo().scaled(0.7)) == "p99 end-to-end 80.0 ms > 70 ms"
    assert Slo(p99_e2e_ms=None, p99_publish_ms=50).scaled(0.5) == Slo(p99_e2e_ms=None, p99_publish_ms=25)
    op = {
        "held": True,
        "rate_msg_s": 6072.0,
        "mb_s": 6.2,
        "p99_e2e_ms": 71.5,
        "p99_publish_ms": None,
        "run_s": 10,
        "headroom": 0.7,
        "tries": [
            {"rate_msg_s": 6800.0, "held": False, "why": "p99 end-to-end 117.0 ms > 100 ms"},
            {"rate_msg_s": 6072.0, "held": True, "why": ""},
        ],
    }
    got = operating_lines(Summary.from_json({"study": "s", "operating_point": op}))
    assert got[0].startswith("operating point: 6,072 msg/s (6.20 MB/s received) held p99 end-to-end 71.5 ms in one")
    assert "judged against 70% of the SLO (hold.headroom)" in got[1]
    assert "6,800 msg/s: p99 end-to-end 117.0 ms > 100 ms" in got[2]
    missed_op = {**op, "held": False, "rate_msg_s": None, "tries": op["tries"][:1]}
    missed = operating_lines(Summary.from_json({"study": "s", "operating_point": missed_op}))
    assert missed[0].startswith("operating point: no fixed rate held in 1 run(s)")


def test_repeats_stay_interleaved_and_change_restart_only_values_once_per_round() -> None:
    """Two candidates with replica.fetch.max.bytes 5 MB (a rolling restart to change) and two without, listed
    mixed: every round measures each once, none twice in a row, and the restart-only value changes once per
    round (the mixed order would change it 11 times in 3 rounds, a minute of restart and warm-up each)."""
    big = {"replica.fetch.max.bytes": 5242880, "batch.size": 65536}
    todo = [("A", big), ("C", {"batch.size": 65536}), ("B", {**big, "linger.ms": 5}), ("D", {"linger.ms": 5})]
    order = confirm.rounds(todo, 3)
    for r in (1, 2, 3):
        assert sorted(label for rr, (label, _) in order if rr == r) == ["A", "B", "C", "D"]
    labels = [label for _, (label, _) in order]
    assert all(a != b for a, b in itertools.pairwise(labels)), labels
    restart = [confirm.canonical(space.split(cfg)["restart"]) for _, (_, cfg) in order]
    changes = sum(a != b for a, b in itertools.pairwise(restart))
    assert changes == 3, labels


def test_a_configuration_alone_in_its_restart_group_repeats_across_a_rounds_end_instead_of_restarting() -> None:
    """The sweep_overhead study's confirmation: Kafka's defaults and the producer stage's best share the
    broker's restart-only values, the replication stage's best (replica.fetch.max.bytes 5 MB) has its own.
    Alternating D Y X D Y X restarted the cluster 3 times and measured X twice right after a restart (89 and 73
    MB/s against 151 and 123 for Y); D Y X X Y D changes the value twice and measures X once after one."""
    x = {"replica.fetch.max.bytes": 5242880, "fetch.min.bytes": 65536}
    todo = [("D", {}), ("Y", {"batch.size": 651319}), ("X", x)]
    order = confirm.rounds(todo, 2)
    labels = [label for _, (label, _) in order]
    assert [sorted(label for rr, (label, _) in order if rr == r) for r in (1, 2)] == [["D", "X", "Y"]] * 2
    restart = [confirm.canonical(space.split(cfg)["restart"]) for _, (_, cfg) in order]
    assert sum(a != b for a, b in itertools.pairwise(restart)) == 2, labels
    assert labels[2:4] == ["X", "X"], labels
    # the brokers already run X's value (the last trial had it): the first round starts there, one restart fewer
    now = confirm.canonical(space.split(x)["restart"])
    started = [label for _, (label, _) in confirm.rounds(todo, 2, now)]
    assert started == ["X", "D", "Y", "D", "Y", "X"], started
    # without restart-only keys the rounds interleave and nothing runs twice in a row
    plain = confirm.rounds([("D", {}), ("Y", {"batch.size": 65536}), ("Z", {"linger.ms": 5})], 3)
    assert [label for _, (label, _) in plain] == ["D", "Y", "Z"] * 3


def test_the_blocks_are_randomized_reproducibly_and_still_roll_the_brokers_as_rarely() -> None:
    """With a seed (the sweep's) each block runs every configuration once in a new order: over 20 seeds every
    configuration leads a block, the same seed gives the same plan (a resumed sweep finds it), nothing runs twice
    in a row without a restart group forcing it, and the restart-only value still changes once per block."""
    plain = [("D", {}), ("Y", {"batch.size": 65536}), ("Z", {"linger.ms": 5}), ("W", {"acks": "all"})]
    leaders = set()
    for seed in range(20):
        order = confirm.rounds(plain, 4, seed=f"{seed}:confirm")
        assert order == confirm.rounds(plain, 4, seed=f"{seed}:confirm")
        blocks = [[label for rr, (label, _) in order if rr == r] for r in (1, 2, 3, 4)]
        assert all(sorted(b) == ["D", "W", "Y", "Z"] for b in blocks), blocks
        labels = [label for b in blocks for label in b]
        assert all(a != b for a, b in itertools.pairwise(labels)), labels
        leaders |= {b[0] for b in blocks}
    assert leaders == {"D", "W", "Y", "Z"}
    assert len({tuple(label for _, (label, _) in confirm.rounds(plain, 4, seed=s)) for s in range(20)}) > 10
    big = {"replica.fetch.max.bytes": 5242880, "batch.size": 65536}
    mixed = [("A", big), ("C", {"batch.size": 65536}), ("B", {**big, "linger.ms": 5}), ("D", {"linger.ms": 5})]
    for seed in range(20):
        order = confirm.rounds(mixed, 3, seed=seed)
        restart = [confirm.canonical(space.split(cfg)["restart"]) for _, (_, cfg) in order]
        assert sum(a != b for a, b in itertools.pairwise(restart)) == 3, order


def test_the_warm_up_check_says_when_the_rate_reached_the_windows_level() -> None:
    """Curves (each second's consumed bytes / the window's median second, through the window's first 3 s) shaped
    like the 38 trials of a dynamic sweep here (0.63, 0.87, 1.02, 1.00, 0.96 over a 5-s warm-up): at the level
    from second 2, so 2 s would have done; a 2-s warm-up on the same curves is about right; windows that began
    under the level ask for a longer warm-up; too few trials judge nothing; failed trials and trials with no
    curve are left out."""

    def trial(curve: list[float] | None, state: str = "complete") -> TrialRecord:
        return trial_record(state=state, measured={"warmup_curve": curve})

    ds = (-0.05, 0.0, 0.02, 0.05, 0.1)
    shaped = [trial([0.6 + d, 0.85 + d, 1.0 + d, 1.0 - d, 0.95 + d, 1.0, 1.0 + d, 1.0 - d]) for d in ds]
    got = timing.warmup_check([*shaped, trial([0.1] * 8, "failed"), trial(None)], 5)
    assert got is not None and got.trials == 5 and got.level_from == 2
    assert [s.n for s in got.seconds] == [5] * 8 and got.seconds[1].median == pytest.approx(0.87)
    assert got.verdict.startswith("longer than needed") and "a warm-up of 2 s instead of 5 s" in got.verdict
    two = timing.warmup_check([trial([0.6 + d, 0.85 + d, 1.0 + d, 1.0 - d, 0.95 + d]) for d in ds], 2)
    assert two is not None and two.verdict.startswith("about right"), two
    # at the level from second 0 (the 1-s warm-up of that sweep here: 0.91 | 1.01, 1.00, 1.00): 1 s is the least
    one = timing.warmup_check([trial([0.91 + d, 1.01, 1.0, 1.0]) for d in ds], 1)
    assert one is not None and one.level_from == 0 and one.verdict.startswith("about right"), one
    short = timing.warmup_check([trial([0.2, 0.4, 0.6, 0.8, 1.0, 1.0]) for _ in range(6)], 2)
    assert short is not None and short.level_from == 4
    assert "second 2 at 0.60" in short.verdict and "lengthen measurement.warmup_s" in short.verdict
    few = timing.warmup_check(shaped[:2], 5)
    assert few is not None and "too few to judge" in few.verdict
    assert timing.warmup_check([trial(None)], 5) is None


def test_the_time_around_a_trials_runs_is_a_restart_warm_up_only_when_it_had_one() -> None:
    """sweeps.timing.breakdown: what a trial spent outside its apply, runs and record is its restart warm-up (as
    its record gives it), its attempts set aside with the wait or warm-up after each (a disturbance, a compiling
    JIT) and, for the rest, the sweep's own work; a trial with no restart has no restart warm-up (a sweep with no
    restart-only key printed 0.1 s of it)."""
    ph = {"run": 12.0, "windows": 10.0, "warmup": 1.0, "create_topics": 0.1, "record": 0.2}
    restarted = trial_record(total_s=40.0, apply_s=5.0, phases_s=ph, restart_warmup={"s": 22.5})
    plain = trial_record(total_s=12.5, apply_s=0.1, phases_s=ph)
    again = trial_record(
        total_s=50.0,
        apply_s=0.1,
        phases_s=ph,
        jit_busy=[{"attempt": 1, "s": 30.0}],
        disturbed=[{"attempt": 2, "s": 7.0}],
    )
    b = timing.breakdown([restarted, plain, again], wall_s=107.0)
    sec = b.seconds
    assert sec["restart warm-up"] == pytest.approx(22.5) and sec["measured again"] == pytest.approx(37.0)
    assert sec["between trials"] == pytest.approx(
        (40 - 5 - 12 - 0.2 - 22.5) + (12.5 - 0.1 - 12 - 0.2) + (50 - 0.1 - 12 - 0.2 - 37) + 4.5
    )
    assert sum(sec.values()) == pytest.approx(107.0) and b.not_measuring == pytest.approx(1 - 30 / 107, abs=1e-4)


def test_a_searchs_unjudged_seconds_are_counted_between_its_steps_not_as_ready_wait() -> None:
    """Two steps from second 3: the first judged 4-7, the next (after a missed step: the drain) judged 11-13. Of
    the 11 seconds from 3 to 13, 7 were judged: 4 were between steps, the rest of the search run is ready wait."""
    steps = [
        {"rate_msg_s": 900, "start_s": 3, "judged_s": [4, 5, 6, 7]},
        {"rate_msg_s": 700, "start_s": 9, "judged_s": [11, 12, 13]},
    ]
    ph = {"run": 6.0, "windows": 3.0, "warmup": 1.0, "ramp": 20.0, "ramp_windows": 7.0, "ramp_warmup": 3.0}
    t = trial_record(total_s=27.0, apply_s=0.0, phases_s=ph, measured={"sustainable": {"steps": steps}})
    assert timing.unjudged_s(t) == 4.0
    sec = timing.breakdown([t], wall_s=27.0).seconds
    assert sec["between steps"] == 4.0 and sec["ready wait"] == pytest.approx(26 - 10 - 4 - 4)
