"""`kafkatune advise --bootstrap`'s rules, on what they read: the brokers' configs, and seconds of the brokers'
metrics summarized into one row. The metrics here are the per-broker seconds of a real search run recorded on the
shaped testbed (tests/fixtures/recorded/shaped-tuned), summarized as a live sample is; the live path itself (a
sampler on the brokers' endpoints) runs in tests/advisor/test_diagnosis.py."""

from __future__ import annotations

import statistics
from typing import Any

import pyarrow.parquet as pq

from advisor.live import live_config_rules, live_metric_rules, summarize
from records.profile import read_profile
from tests.helpers import FIXTURES

RECORDED = FIXTURES / "recorded" / "shaped-tuned"


def _seconds() -> list[dict[str, Any]]:
    """The per-broker seconds of one recorded search run (its ramp), as cluster.metrics.rates rows."""
    return pq.read_table(RECORDED / "trials" / "confirm-001" / "ramp" / "broker_metrics.parquet").to_pylist()


def test_seconds_of_broker_metrics_summarize_to_per_second_sums_and_the_busiest_broker() -> None:
    rows = _seconds()
    got = summarize(rows)
    row = got.row
    seconds: dict[int, list[dict]] = {}
    for r in rows:
        seconds.setdefault(round(r["t_ns"] / 1e9), []).append(r)
    assert got.seconds == len(seconds) > 30
    produce = statistics.mean(sum(r["bytes_in_per_s"] for r in s) / 1e6 for s in seconds.values())
    busiest = statistics.mean(
        max(r["bytes_in_per_s"] + r["replication_bytes_in_per_s"] for r in s) / 1e6 for s in seconds.values()
    )
    assert abs((row.produce_mb_s or 0) - produce) < 1e-9 and abs((row.broker_in_max_mb_s or 0) - busiest) < 1e-9
    # one active controller every second, nothing under-replicated: a healthy quorum below its knee
    assert row.controller_bad_seconds == 0 and got.under_replicated_max == 0
    assert 0 < (row.request_handler_idle or 0) <= 1 and (row.produce_total_ms or 0) > 0


def test_a_recorded_run_below_its_knee_is_not_bound_and_says_what_its_links_carried() -> None:
    rows = _seconds()
    got = summarize(rows)
    profile = read_profile(RECORDED / "profile.json")
    assert profile is not None
    (rec,) = [r for r in live_metric_rules(got, profile) if r.rule.startswith("live")]
    assert rec.rule == "live-ok", rec
    links = round(100 * (got.row.broker_in_max_mb_s or 0) / profile.network["nic_mb_s_measured"])
    assert f"links at {links}%" in rec.title, (links, rec.title)
    assert f"exactly one in {got.seconds} of {got.seconds} s" in rec.evidence[-1]
    # the same seconds with one broker's controller count at 0: the quorum had no leader, named as such
    broken = summarize([{**r, "active_controllers": 0} if r["broker_id"] == 1 else r for r in rows])
    assert broken.row.controller_bad_seconds == broken.seconds
    assert any(r.rule == "live-controller" for r in live_metric_rules(broken, profile))


def test_small_replica_fetches_and_per_message_fsync_are_flagged_from_configs_alone() -> None:
    configs: dict[str, dict[str, str | None]] = {
        b: {"replica.fetch.max.bytes": "65536", "log.flush.interval.messages": "1", "num.replica.fetchers": "1"}
        for b in ("1", "2", "3")
    }
    rules = {r.rule: r for r in live_config_rules(configs, 3)}
    assert rules["replica-fetch-small"].trials == ["broker 1", "broker 2", "broker 3"]
    assert rules["fsync-per-message"].severity == "high"
    fine = {b: {"replica.fetch.max.bytes": "1048576", "log.flush.interval.messages": None} for b in ("1", "2", "3")}
    assert not {"replica-fetch-small", "fsync-per-message"} & {r.rule for r in live_config_rules(fine, 3)}
