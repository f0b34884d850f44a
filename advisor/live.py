"""Advice on a live cluster (`kafkatune advise --bootstrap`): its brokers' configs, and a few seconds of
its broker metrics when their exporters are known.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from advisor import diagnose
from advisor.context import Context
from advisor.fixes import binding_fix
from advisor.recommendation import Recommendation
from advisor.rules import fmt, rule_replica_fetchers
from advisor.setup import rule_durability
from brokerconf.apply import BrokerConfigs
from brokerconf.catalogue import READ_BACK_KEYS
from cluster import metrics, target
from core.errors import EnvironmentProblem
from core.units import MB, number_of
from records.profile import ClusterProfile
from records.trialrow import TrialRow
from spark.series import EVIDENCE, evidence

Progress = Callable[[str], None]


def live_config_rules(configs: dict[str, dict[str, str | None]], brokers: int) -> list[Recommendation]:
    """Rules that need only the brokers' current configs (`kafkatune advise --bootstrap`)."""
    recs: list[Recommendation] = []
    rows: list[dict[str, Any]] = [
        {"trial_id": f"broker {b}", "state": "complete", "mb_s": None, "params": dict(c)} for b, c in configs.items()
    ]
    recs += rule_replica_fetchers(pd.DataFrame(rows), Context(brokers=brokers))
    flushed = [r for r in rows if (e := diagnose.flush_every(r["params"])) is not None and e <= diagnose.FSYNC_EVERY]
    if flushed:
        recs.append(
            Recommendation(
                "fsync-per-message",
                "log.flush.interval.messages forces an fsync every few messages: leave it at the default and rely "
                "on replication (RF 3, min.insync.replicas 2) for durability",
                action={"log.flush.interval.messages": "9223372036854775807 (default)"},
                evidence=[
                    f"{r['trial_id']}: log.flush.interval.messages={r['params']['log.flush.interval.messages']}"
                    for r in flushed
                ],
                trials=[r["trial_id"] for r in flushed],
                severity="high",
            )
        )
    # judged by the RF the brokers give topics created without one (read back), when they agree on it
    rfs = {number_of(c, "default.replication.factor") for c in configs.values()}
    if len(rfs) == 1 and (rf := rfs.pop()) is not None:
        recs += rule_durability(pd.DataFrame(rows), Context(brokers=brokers, rf=int(rf)))
    small = [r for r in rows if (number_of(r["params"], "replica.fetch.max.bytes") or 1048576) < 1048576]
    if small:
        recs.append(
            Recommendation(
                "replica-fetch-small",
                "replica.fetch.max.bytes is below Kafka's 1 MiB default: followers fetch in small pieces",
                action={"replica.fetch.max.bytes": "1048576 or more (≥ the producers' batch.size)"},
                evidence=[
                    f"{r['trial_id']}: replica.fetch.max.bytes={r['params']['replica.fetch.max.bytes']}" for r in small
                ],
                trials=[r["trial_id"] for r in small],
                severity="medium",
            )
        )
    return recs


@dataclass(frozen=True)
class LiveSample:
    """A few seconds of a live cluster's broker metrics as one row (summarize): what the diagnosis reads of them
    (`row`, as a trials-table row of a run nobody recorded; its `broker`: the configs the brokers run with), how
    many seconds were sampled, and the most partitions under-replicated in any of them."""

    row: TrialRow
    seconds: int
    under_replicated_max: int = 0


def live_metric_rules(sample: LiveSample, profile: ClusterProfile | None) -> list[Recommendation]:
    """Rules over a few seconds of live broker metrics (idle fractions, under-replicated partitions)."""
    recs: list[Recommendation] = []
    row, secs = sample.row, sample.seconds
    t = dataclasses.replace(row, state="complete", mb_s=row.produce_mb_s or 0.0)
    d = diagnose.binding(t, profile)
    ev = [
        f"over {secs} s: produce {fmt(row.produce_mb_s)}, busiest broker in {fmt(row.broker_in_max_mb_s)}, "
        f"request handlers {fmt((row.request_handler_idle or 0) * 100, ' %')} idle, "
        f"network processors {fmt((row.network_processor_idle or 0) * 100, ' %')} idle"
    ]
    if time_spent := diagnose.where_time_goes(t):
        ev.append(time_spent)
    if d.bound in ("request_handlers", "network_threads", "disk", "network_in", "network_out", "forced_flush"):
        key = {"request_handlers": "num.io.threads", "network_threads": "num.network.threads"}.get(d.bound)
        action = {key: "×2 (a dynamic config; change in ×2 steps)"} if key else {}
        if d.bound == "forced_flush":
            action = binding_fix("forced_flush", t) or {"flush.messages": "delete the topics' overrides"}
        recs.append(
            Recommendation(
                "live-binding",
                f"Now bound by {d.bound}: {d.reason}",
                action=action,
                evidence=ev,
                severity="high",
            )
        )
    if sample.under_replicated_max > 0:
        recs.append(
            Recommendation(
                "live-isr",
                f"{sample.under_replicated_max} partition(s) under-replicated while sampled: followers are behind"
                + (f" (up to {lag:,.0f} messages)" if (lag := row.replica_lag_max) is not None else ""),
                action={
                    "replica.fetch.max.bytes": "raise (≥ batch.size)",
                    "num.replica.fetchers": "raise (not a multiple of the broker count)",
                },
                evidence=ev,
                severity="high",
            )
        )
    if (bad := row.controller_bad_seconds) is not None:
        ev.append(f"active controller: exactly one in {secs - bad} of {secs} s")
    if bad:
        recs.append(
            Recommendation(
                "live-controller",
                f"For {bad} s of {secs} the brokers' ActiveControllerCount did not add up to one: "
                "the KRaft quorum lost its leader (or had two); the controllers' logs say why",
                evidence=ev,
                severity="high",
            )
        )
    if not recs:
        recs.append(Recommendation("live-ok", f"No broker resource saturated while sampled ({d.reason})", evidence=ev))
    return recs


def sample(urls: Mapping[int, str], seconds: float) -> LiveSample:
    """`seconds` of broker metrics as one row: produce rate, the busiest broker's in/out, idle fractions."""
    sampler = metrics.BrokerMetricsSampler(urls).start()
    time.sleep(seconds)
    rows = metrics.rates(sampler.stop())
    if not rows:
        raise EnvironmentProblem(f"no broker metrics could be read from {', '.join(urls.values())}")
    return summarize(rows)


def summarize(rows: list[metrics.MetricRow]) -> LiveSample:
    """Per-broker-second metric rows (cluster.metrics.rates; a run's broker_metrics.parquet) as the one row the
    live rules read: per-second sums and busiest-broker figures averaged over the seconds, worst cases kept."""
    by_t: defaultdict[int, list[metrics.MetricRow]] = defaultdict(list)
    for r in rows:
        by_t[round((r["t_ns"] or 0) / 1e9)].append(r)

    def avg(vals: list[float]) -> float | None:
        return statistics.mean(vals) if vals else None

    def busiest(s: list[metrics.MetricRow], a: str, b: str) -> float:
        return max((_of(r, a) + _of(r, b)) / MB for r in s)

    def seen(col: str) -> list[float]:
        return [v for r in rows if (v := r.get(col)) is not None]

    per_s = list(by_t.values())
    totals = {f"sum_{c}": sum(_of(r, c) for r in rows) for c in EVIDENCE if any(c in r for r in rows)}
    produce = avg([sum(_of(r, "bytes_in_per_s") for r in s) / MB for s in per_s])
    row = {
        # the brokers' counters over the sample, as spark.series.evidence reads a trial's window
        **evidence({**totals, "measure_seconds": len(per_s), "produce_mb_s": produce}),
        "produce_mb_s": produce,
        "broker_in_max_mb_s": avg([busiest(s, "bytes_in_per_s", "replication_bytes_in_per_s") for s in per_s]),
        "broker_out_max_mb_s": avg([busiest(s, "bytes_out_per_s", "replication_bytes_out_per_s") for s in per_s]),
        "request_handler_idle": avg(seen("request_handler_idle")),
        "network_processor_idle": avg(seen("network_processor_idle")),
        "replica_lag_max": max(seen("replica_max_lag"), default=None),
        "controller_bad_seconds": _controller_bad_seconds(per_s),
    }
    worst = max(seen("under_replicated"), default=0)
    return LiveSample(TrialRow.of(row), len(per_s), int(worst))


def _of(r: metrics.MetricRow, col: str) -> float:
    """A row's figure, 0 where the row has none."""
    return r.get(col) or 0.0


def _controller_bad_seconds(per_s: list[list[metrics.MetricRow]]) -> int | None:
    """Seconds whose brokers' ActiveControllerCount did not add up to one; None when the samples do not say
    (cluster.metrics leaves it out when no scraped node is the controller)."""
    seen = [[r["active_controllers"] for r in s if r.get("active_controllers") is not None] for s in per_s]
    if not any(seen):
        return None
    return sum(1 for xs in seen if any(x != 1 for x in xs))


def advise(
    bootstrap: str, metrics_urls: list[str], state_dir: Path, seconds: float, progress: Progress = print
) -> list[Recommendation]:
    """Config rules on every broker at `bootstrap`, and metric rules over `seconds` of its metrics: from
    `metrics_urls` (one per broker, in broker id order), or the testbed's when it is that cluster."""
    try:
        bc = BrokerConfigs.connect(bootstrap, progress=progress)
    except Exception as e:
        raise EnvironmentProblem(f"--bootstrap {bootstrap} is not reachable: {e}") from None
    configs = bc.read_back(list(READ_BACK_KEYS))
    recs = live_config_rules(configs, len(bc.broker_ids))
    urls: dict[int, str] = {}
    profile = None
    if metrics_urls:
        urls = dict(zip(sorted(bc.broker_ids), metrics_urls, strict=False))
    elif (tb := target.testbed_serving(state_dir, bootstrap)) is not None:
        urls, profile = dict(tb.metrics_urls), tb.profile
    if urls:
        progress(f"sampling broker metrics for {seconds:g} s …")
        # what forced flushes name as their cause: one broker's configs (a key read back without a value is unset)
        broker = {k: v for k, v in next(iter(configs.values()), {}).items() if v is not None}
        got = sample(urls, seconds)
        recs += live_metric_rules(dataclasses.replace(got, row=dataclasses.replace(got.row, broker=broker)), profile)
    else:
        progress("no metrics endpoints (--metrics-url): advice from configs only")
    return recs
