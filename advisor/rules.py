"""Recommendations with evidence, from a study's analysis tables.

Each rule reads the trials/params tables of the analysis (records.analysis) and returns advice that names
the trials it rests on, the measured difference, and what to expect. Rules that need a comparison the study
did not make say so instead of guessing.
"""

from __future__ import annotations

import statistics

import pandas as pd

from advisor import diagnose
from advisor.context import Context
from advisor.fixes import behind, binding_fix, consumer_fix, replication_fix, round_trips_advice
from advisor.latency import rule_latency
from advisor.noise import Effect, effects
from advisor.recommendation import SEVERITY_ORDER, Recommendation, without_causes
from advisor.setup import rule_controller, rule_durability, rule_recompression
from advisor.trials import best_trial, chosen_trial, complete, defaults_trial, no_rate_trial
from advisor.verdict import rule_confirmed
from brokerconf import catalogue
from core.acks import acks as producer_acks
from core.units import number_of
from records.analysis import trial_rows
from records.trialrow import TrialRow

DEFAULT_FETCHERS = 1
E2E_EXPLODES_MS = 1000.0  # end-to-end p99 above a second at max rate: records queue in the producer buffer


def fmt(v: float | None, unit: str = " MB/s") -> str:
    return "n/a" if v is None else f"{v:.2f}{unit}"


def rule_best_config(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """The confirmed configuration of a sweep, else the best of two or more measured runs. Never for one run: the
    best of one compares nothing, and its settings may be the very cause the other rules name (a bench run of
    batch.size=1024 was once told to apply batch.size=1024)."""
    if ctx.sweep and ctx.confirmed:
        return rule_confirmed(ctx.sweep)
    best, dflt = best_trial(trials), defaults_trial(trials)
    if not best or len(trials) < 2:
        return []
    if dflt:
        changed = {k: v for k, v in best.params.items() if dflt.params.get(k) != v}
    else:  # no defaults trial: what it set against Kafka's defaults (client settings of the workload included)
        known = catalogue.defaults()
        changed = {k: v for k, v in best.params.items() if k in known and str(known[k]) != str(v)}
    ev = [
        f"{best.trial_id}: {fmt(best.mb_s)}"
        + (f" ({best.fraction_of_ceiling:.0%} of the ceiling)" if best.fraction_of_ceiling else "")
    ]
    gain = None
    if dflt:
        ev.append(f"Kafka defaults ({dflt.trial_id}): {fmt(dflt.mb_s)}")
        gain = best.rate - dflt.rate
    return [
        Recommendation(
            "best-config",
            f"Apply the best measured configuration ({len(changed)} key(s) differ from Kafka's defaults)",
            action=changed,
            evidence=ev,
            trials=[best.trial_id] + ([dflt.trial_id] if dflt else []),
            expected_gain_mb_s=gain,
            # without Kafka's defaults measured there is nothing to compare it with: information only
            severity=("high" if gain and gain > 0.2 * dflt.rate else "medium") if dflt else "info",
        )
    ]


def rule_binding(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """What the study's run (trials.chosen_trial, the one its headline reads) was bound by, and what moves that
    limit."""
    best = chosen_trial(trials, ctx.sweep) or no_rate_trial(trials)
    if not best or not best.bound:
        return []
    b, why = best.bound, best.bound_reason or ""
    frac = best.fraction_of_ceiling
    at = f" at {frac:.0%} of the ceiling" if frac else ""
    advice: str = {
        "network_in": "The network binds: more throughput needs more brokers or faster NICs (`kafkatune plan`)",
        "network_out": "Broker egress binds (replication + consumers): more brokers or faster NICs",
        "degraded_link": "A link drops packets: repair or replace the named host's NIC, cable or switch port (no "
        "setting recovers what the link loses)",
        "forced_flush": "Forced log flushes bind: remove the flush settings (RF 3 with min.insync.replicas 2 "
        "makes data durable by replication)",
        "disk": "The disk binds: faster or more log dirs",
        "request_handlers": "Request handler threads are saturated: raise num.io.threads",
        "network_threads": "Network threads are saturated: raise num.network.threads",
        "cpu": "The machine's CPU binds (clients and brokers share it): give the brokers their own hosts or cores",
        "small_batches": "Small produce requests bind: raise batch.size and linger.ms (fewer, larger requests)",
        "replication": "Followers fall out of the ISR: more replica fetchers and larger replica fetches",
        "partitions": "Too few partitions for the clients and brokers: more partitions (a multiple of the brokers)",
        "consumer": "The consumers fall behind: more consumers (and partitions for them)",
        "client": "The load generator was the limit: add producer processes or client hosts",
        "none": round_trips_advice(ctx.no_effect, best)
        if best.rate_mode != "fixed-rate" or best.objective == "sustainable_mb_s"
        else "No resource is saturated at this fixed rate: a max-rate or sustainable-rate run finds the limit",
        "unknown": "Nothing can be named without evidence: run the workload with `kafkatune bench` (broker metrics "
        "and client statistics are recorded) for a diagnosis",
    }[b]
    action = binding_fix(b, best, ctx.brokers, ctx.no_effect)
    return [
        Recommendation(
            "binding-resource",
            advice,
            action=action,
            evidence=[f"{best.trial_id}{at}: bound by {b}: {why}"],
            trials=[best.trial_id],
            # what limits the cluster is the answer a diagnosis owes, a link included (its fix is hardware, and
            # it outranks advice about how to run below it); only "unknown" names nothing
            severity="info" if b == "unknown" else "medium",
        )
    ]


def rule_params(found: list[Effect], confirmed: bool = False) -> list[Recommendation]:
    """Per swept parameter: the value with the highest mean, its measured delta, and an edge warning.

    These are search marginals (other keys varied too); in a study with ablations they are information only:
    the causal effects are the ablations' (rule_confirmed)."""
    out = []
    for e in found:
        if e.delta <= 0:
            continue
        best, worst = e.best, e.worst
        title = f"{e.param} = {best.value} (stage {e.stage})"
        ev = [
            f"{e.param}={r.value}: {r.mean_mb_s:.2f} MB/s mean over {r.trials} trial(s) ({', '.join(r.trial_ids[:4])})"
            for r in (best, worst)
        ]
        if e.at_edge:
            title += ": the highest value tested was best; the range may be too narrow"
            ev.append("the best value is at the top of the tested range")
        if e.noise is not None:
            ev.append(
                f"difference {e.delta:.2f} MB/s vs the spread between the windows of one run {e.noise:.2f} MB/s "
                "(run-to-run noise is larger)"
                + (": within noise, re-measure before relying on it" if e.within_noise else "")
            )
        if confirmed:
            ev.append("a search marginal: the ablations measured each key's own effect (see best-config)")
        out.append(
            Recommendation(
                "param-effect",
                title,
                action={e.param: str(best.value)},
                evidence=ev,
                trials=list(best.trial_ids[:4]),
                expected_gain_mb_s=e.delta,
                severity="medium"
                if not confirmed and not e.within_noise and e.delta > 0.05 * best.mean_mb_s
                else "info",
            )
        )
    return out


def rule_replica_fetchers(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    n = ctx.brokers

    def fetchers(t: TrialRow) -> float:
        return number_of(t.params, "num.replica.fetchers") or DEFAULT_FETCHERS

    def multiple(t: TrialRow) -> bool:
        return fetchers(t) > DEFAULT_FETCHERS and fetchers(t) % n == 0

    flagged = [(t, int(fetchers(t))) for t in trial_rows(trials) if multiple(t)]
    if not flagged:
        return []
    done = trial_rows(complete(trials))
    mult = [t.rate for t in done if multiple(t)]
    other = [t.rate for t in done if not multiple(t)]
    values = sorted({f for _, f in flagged})
    ev = [
        f"num.replica.fetchers={', '.join(map(str, values))} is a multiple of the broker count {n}: fetcher "
        "threads are assigned by partition hash, so some get only partitions led by one broker and others sit "
        "idle (docs/reference.md §1)"
    ]
    gain = None
    if mult and other:
        ev.append(
            f"measured: multiples {statistics.mean(mult):.2f} MB/s mean ({len(mult)} trials) vs others "
            f"{statistics.mean(other):.2f} ({len(other)})"
        )
        gain = statistics.mean(other) - statistics.mean(mult)
    suggest = values[-1] + 1 if (values[-1] + 1) % n else values[-1] + 2
    return [
        Recommendation(
            "replica-fetchers-multiple",
            f"Avoid num.replica.fetchers that are multiples of the broker count ({n}): use e.g. {suggest}",
            action={"num.replica.fetchers": str(suggest)},
            evidence=ev,
            trials=[t.trial_id for t, _ in flagged][:6],
            expected_gain_mb_s=gain,
            severity="medium",
        )
    ]


def rule_replication(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """Followers not keeping up: replicate rate below (r−1)× produce, or under-replicated seconds."""
    rf = ctx.rf
    lagging = []
    for t in trial_rows(complete(trials)):
        ratio = t.replication_ratio
        ur = t.under_replicated_seconds or 0
        acks = producer_acks(t.params)
        if (ratio is not None and ratio < 0.9 * (rf - 1)) or ur > 0 or (t.isr_shrinks or 0) > 0:
            lagging.append((t, ratio, ur, acks))
    if not lagging:
        return []
    ev = [
        f"{t.trial_id} (acks={a}): replicate/produce = {fmt(r, '')} (expected {rf - 1}), "
        f"{ur} s with under-replicated partitions"
        for t, r, ur, a in lagging[:6]
    ]
    worst = min(lagging, key=lambda x: x[1] if x[1] is not None else 0.0)[0]
    action = replication_fix(worst.params, ctx.brokers)
    return [
        Recommendation(
            "replication-lag",
            f"Followers fell behind in {len(lagging)} trial(s) (ISR stalls): raise replica fetch sizes and fetchers",
            action=action,
            evidence=ev,
            trials=[t.trial_id for t, *_ in lagging][:6],
            severity="high" if any(a in ("all", "-1") for *_, a in lagging) else "medium",
        )
    ]


def rule_consumers(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """Trials whose consumers fell behind what the producers had acknowledged."""
    lag = [(t, b) for t in trial_rows(complete(trials)) if (b := behind(t))]
    if not lag:
        return []
    t, (pub, con) = max(lag, key=lambda x: x[1][0] - x[1][1])
    bound = "partitions" if t.bound == "partitions" else "consumer"
    return [
        Recommendation(
            "consumer-lag",
            f"Consumers fell behind in {len(lag)} trial(s): "
            + ("more partitions, one for each consumer" if bound == "partitions" else "more consumers"),
            action=consumer_fix(bound, t.params, ctx.brokers),
            evidence=[
                f"{x.trial_id}: consumed {c:.2f} MB/s of {p:.2f} MB/s produced"
                + (f" ({x.bound_reason})" if x.bound in ("consumer", "partitions") else "")
                for x, (p, c) in lag[:5]
            ],
            trials=[x.trial_id for x, _ in lag][:6],
            expected_gain_mb_s=pub - con,
            severity="medium",
        )
    ]


def rule_producer_buffer(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """Max-rate runs whose records waited seconds in a full producer buffer: the rate to run at instead is the
    operating point of a sustainable-rate sweep, else 80 % of the best max rate (an assumption, said)."""

    def max_rate(t: TrialRow) -> float:  # the rate the latency belongs to: the max-rate run's, not a search's
        return float(t.throughput_mb_s or t.rate)

    full = [
        t
        for t in trial_rows(complete(trials))
        if (t.buffer_full_events or 0) > 0 and (t.e2e_p99_ms or 0) > E2E_EXPLODES_MS
    ]
    if not full:
        return []
    worst = max(full, key=lambda t: t.e2e_p99_ms or 0.0)
    calm = [t for t in trial_rows(complete(trials)) if not t.buffer_full_events and t.e2e_p99_ms]
    ev = [
        f"{t.trial_id}: producer buffer full {t.buffer_full_events} times, "
        f"e2e p99 {(t.e2e_p99_ms or 0.0) / 1000:.1f} s at {max_rate(t):.2f} MB/s (the maximum rate)"
        for t in sorted(full, key=lambda t: -(t.e2e_p99_ms or 0.0))[:4]
    ]
    if calm:
        c = min(calm, key=lambda t: t.e2e_p99_ms or 0.0)
        rate = c.sustainable_mb_s or c.mb_s
        ev.append(f"without a full buffer ({c.trial_id}): e2e p99 {c.e2e_p99_ms:.0f} ms at {rate:.2f} MB/s")
    op = ctx.sweep.operating_point if ctx.sweep else None
    if op and op.held and op.rate_msg_s is not None and op.mb_s is not None:
        held = next((x.trial_id for x in op.tries if x.held), None) or "the operating point"
        action = {"target rate": f"{op.rate_msg_s:,.0f} msg/s ({op.mb_s:.2f} MB/s): held the SLO ({held})"}
    else:
        best = best_trial(trials) or max(full, key=max_rate)
        action = {"target rate": f"≤ {0.8 * max_rate(best):.1f} MB/s (80 % of {best.trial_id}'s maximum rate)"}
    return [
        Recommendation(
            "producer-buffer-saturation",
            "At the maximum rate records wait in the producer buffer and latency explodes (the 53 s case of "
            "docs/reference.md §1): run below it, at a rate measured to hold the SLO, or cap buffer.memory",
            action=action,
            evidence=ev,
            trials=[t.trial_id for t in full][:6],
            severity="high" if (worst.e2e_p99_ms or 0.0) > 10 * E2E_EXPLODES_MS else "medium",
        )
    ]


def rule_fsync(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """Trials whose brokers flushed the log for every other produce request or more, the fsyncs taking a material
    share of their time (measured: LogFlushStats against the produce requests), with the settings that forced
    it, and the cost against trials without."""
    done = trial_rows(complete(trials))
    flushed = [t for t in done if diagnose.forced_flush(t, ctx.brokers)]
    if not flushed:
        return []
    unflushed = [t for t in done if t.log_flushes_per_request is not None and t not in flushed]
    ev = [
        f"{t.trial_id}: {t.log_flushes_per_request:.2f} log flushes per produce request "
        f"({', '.join(f'{k}={v}' for k, v in diagnose.flush_settings(t).items()) or 'no flush setting read back'}): "
        f"{t.mb_s:.2f} MB/s"
        for t in flushed[:4]
    ]
    gain = None
    if unflushed:
        a, b = statistics.mean(t.rate for t in flushed), statistics.mean(t.rate for t in unflushed)
        ev.append(f"mean with forced flushes {a:.2f} MB/s vs {b:.2f} MB/s without ({len(unflushed)} trials)")
        gain = b - a
    return [
        Recommendation(
            "fsync-per-message",
            "A forced fsync per message costs throughput; with RF 3 and min.insync.replicas 2 durability comes "
            "from replication: leave the flush settings at their defaults",
            action=binding_fix("forced_flush", flushed[0]),
            evidence=ev,
            trials=[t.trial_id for t in flushed][:6],
            expected_gain_mb_s=gain,
            severity="high",
        )
    ]


def rule_compression(trials: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    odd = [
        t
        for t in trial_rows(complete(trials))
        if t.produce_mb_s and t.publish_mb_s and t.produce_mb_s < 0.2 * t.publish_mb_s
    ]
    if not odd:
        return []
    return [
        Recommendation(
            "compressible-payload",
            "Compressed trials moved ≤ 20 % of their payload bytes over the wire: their MB/s depend on how "
            "compressible the test payload is; measure with your own data before adopting compression",
            evidence=[
                f"{t.trial_id}: payload {t.publish_mb_s:.2f} MB/s, broker bytes in {t.produce_mb_s:.2f} MB/s"
                for t in odd[:4]
            ],
            trials=[t.trial_id for t in odd][:6],
            severity="medium",
        )
    ]


STUDY_RULES = (
    rule_binding,
    rule_durability,
    rule_latency,
    rule_replica_fetchers,
    rule_fsync,
    rule_replication,
    rule_consumers,
    rule_producer_buffer,
    rule_compression,
    rule_recompression,
    rule_controller,
)


def recommend(trials: pd.DataFrame, params: pd.DataFrame, ctx: Context) -> list[Recommendation]:
    """All rules over one study's tables, most important first."""
    recs: list[Recommendation] = []
    recs += rule_best_config(complete(trials), ctx)
    for r in STUDY_RULES:
        recs += r(trials, ctx)
    confirmed = ctx.confirmed
    recs += rule_params(effects(trials, params), confirmed=confirmed)
    if not confirmed:  # a confirmed key's effect was measured on its own: it matches the recommended files
        recs = [without_causes(r, recs) if r.rule == "best-config" else r for r in recs]
    return sorted(recs, key=lambda r: (SEVERITY_ORDER[r.severity], -(r.expected_gain_mb_s or 0)))
