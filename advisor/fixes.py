"""The settings that move a bound or a latency part, with values within the catalogue's ranges and cross-key
rules (brokerconf.catalogue): the actions the advisor's rules and live advice recommend.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from advisor import diagnose
from brokerconf import catalogue
from core.units import number, number_of
from records.trialrow import TrialRow


def binding_fix(bound: str, t: TrialRow, brokers: int = 3, no_effect: Collection[str] = ()) -> dict[str, str]:
    """The settings that move `bound`, with values within the catalogue's ranges and rules (a thread pool
    doubles, Kafka's largest legal step; small batches: small_batch_fix; round trips: round_trips_fix, leaving out a
    key the study's ablations found without effect, `no_effect`)."""
    p = t.params
    if bound == "replication":
        return replication_fix(p, brokers)
    if bound in ("partitions", "consumer"):
        return consumer_fix(bound, p, brokers)
    if bound == "client":
        hot_consumer = (number(t.consumer_loop_cpu_max) or 0) >= diagnose.LOOP_HOT
        key = "consumers" if hot_consumer else "producers"
        return {key: str(2 * int(number_of(p, key) or 1))}
    if bound in ("request_handlers", "network_threads"):
        key = "num.io.threads" if bound == "request_handlers" else "num.network.threads"
        return {key: str(2 * current(p, key))}
    if bound == "small_batches":
        return small_batch_fix(p)
    if bound == "none":  # round trips set the rate: more requests in flight (round_trips_fix)
        return round_trips_fix(t, no_effect)
    if bound == "forced_flush":
        out = {}
        for scoped in diagnose.flush_settings(t):
            scope, key = scoped.split(" ", 1)
            default = catalogue.param(key).default if scope == "broker" else None
            out[key] = "(delete the topic override)" if scope == "topic" else str(default or "(unset: Kafka's default)")
        return out
    return {}


def current(p: Mapping[str, Any], key: str) -> int:
    """The integer value of catalogue key `key` in params `p`, else Kafka's default (0 when it has none)."""
    v, default = number_of(p, key), catalogue.param(key).default
    return int(v) if v is not None else (default if isinstance(default, int) else 0)


def inflight_fix(p: Mapping[str, Any]) -> dict[str, str]:
    """max.in.flight.requests.per.connection back to Kafka's default (5, the most the idempotent producer allows)
    when the configuration caps it lower; nothing otherwise."""
    key = "max.in.flight.requests.per.connection"
    default = catalogue.param(key).default
    return {key: str(default)} if isinstance(default, int) and current(p, key) < default else {}


def round_trips_fix(t: TrialRow, no_effect: Collection[str] = ()) -> dict[str, str]:
    """When round trips set a searched or max-rate run's rate: a producer capped below Kafka's in-flight default
    goes back to it (inflight_fix); otherwise twice the producer processes, each with its own connections and so
    its own requests in flight, unless the study measured producers without effect (`no_effect`). Nothing for a
    run held at a fixed rate: nothing there says more is wanted."""
    if t.rate_mode == "fixed-rate" and t.objective != "sustainable_mb_s":
        return {}
    capped = inflight_fix(t.params)
    if capped or "producers" in no_effect:
        return capped
    return {"producers": str(2 * current(t.params, "producers"))}


def small_batch_fix(p: Mapping[str, Any]) -> dict[str, str]:
    """Batches of at least 128 KiB and a linger of at least 5 ms; when the configuration already has both, its
    batches do not fill within the linger, so the linger doubles (up to 100 ms). Only keys that change are
    returned: a fix that repeats the current configuration would move nothing."""
    size, linger = current(p, "batch.size"), current(p, "linger.ms")
    out = {}
    if size < 131072:
        out["batch.size"] = str(size := 131072)
    if linger < 5:
        out["linger.ms"] = "5"
    elif not out and linger < 100:
        out["linger.ms"] = str(min(100, 2 * linger))
    memory = number_of(p, "buffer.memory")
    if memory is not None and memory < size:  # buffer.memory ≥ batch.size (catalogue.RULES)
        out["buffer.memory"] = str(size)
    return out


def _fetchers_above(cur: int, brokers: int) -> int:
    """The next fetcher count above `cur` that is not a multiple of the broker count (docs/reference.md §1)."""
    nxt = cur + 1
    while brokers > 1 and nxt % brokers == 0:
        nxt += 1
    return nxt


def replication_fix(p: Mapping[str, Any], brokers: int) -> dict[str, str]:
    """More fetcher threads than now (never fewer, never a multiple of the brokers), and replica fetches of at
    least two producer batches, with the response limit raised when the fetch would no longer fit in it
    (catalogue.RULES: replica.fetch.response.max.bytes ≥ replica.fetch.max.bytes)."""

    fetch = max(2 * current(p, "replica.fetch.max.bytes"), 2 * current(p, "batch.size"))
    fetch = min(fetch, catalogue.INT_MAX)
    out = {
        "num.replica.fetchers": str(_fetchers_above(current(p, "num.replica.fetchers"), brokers)),
        "replica.fetch.max.bytes": str(fetch),
    }
    if current(p, "replica.fetch.response.max.bytes") < fetch:
        out["replica.fetch.response.max.bytes"] = str(min(catalogue.INT_MAX, 4 * fetch))
    return out


def consumer_fix(bound: str, p: Mapping[str, Any], brokers: int) -> dict[str, str]:
    """Partitions for every consumer and broker (a multiple of the brokers, so leaders stay balanced), then
    twice the consumers, up to the partitions."""

    def count(key: str) -> int:
        return max(1, int(number_of(p, key) or 1))

    parts, cons, prods = count("partitions"), count("consumers"), count("producers")
    want_cons = cons if bound == "partitions" else 2 * cons
    want_parts = max(parts, brokers, want_cons, prods)
    want_parts = -(-want_parts // brokers) * brokers
    out = {"partitions": str(want_parts)} if want_parts > parts else {}
    if want_cons > cons:
        out["consumers"] = str(want_cons)
    return out


def behind(t: TrialRow) -> tuple[float, float] | None:
    """(produced, consumed) MB/s of a trial whose consumers fell behind: as the load generator counted them
    (acknowledged vs received), else as the brokers did (bytes in vs bytes out to consumers)."""
    for a, b in (("publish_mb_s", "client_consume_mb_s"), ("produce_mb_s", "consume_mb_s")):
        pub, con = number(getattr(t, a)), number(getattr(t, b))
        if pub and con is not None:
            return (pub, con) if con < diagnose.CONSUMER_BEHIND * pub else None
    return None


def slo_budget_ms(t: TrialRow, slo_ms: float | None, wait_ms: float) -> float | None:
    """What a wait of `wait_ms` (a linger, a fetch wait) may take so the run's p99 end-to-end meets `slo_ms`: half
    of what the SLO leaves after the rest of the record's p99 time (the p99 less that wait), so the run-to-run
    spread has room. None without an SLO or a measured p99; 0 when the rest alone breaks the SLO."""
    p99 = number(t.e2e_p99_ms)
    if slo_ms is None or p99 is None:
        return None
    return max(0.0, (slo_ms - max(0.0, p99 - wait_ms)) / 2)


def linger_fix(t: TrialRow, slo_ms: float | None) -> dict[str, str]:
    """A linger sized to the SLO's budget (slo_budget_ms), below the current one; a tenth of it without an SLO."""
    linger = number_of(t.params, "linger.ms") or 0.0
    budget = slo_budget_ms(t, slo_ms, linger)
    return {"linger.ms": str(int(min(linger - 1, budget if budget is not None else linger / 10)))}


def fetch_fix(t: TrialRow, slo_ms: float | None, brokers: int) -> dict[str, str]:
    """A consumer whose records wait before its handler: a fetch.min.bytes above 1 makes the broker hold each
    fetch until that much arrived or fetch.wait.max.ms passed, so it goes back to 1 (Kafka's default) and the
    wait is capped at the SLO's budget; with fetches already answered at once the wait is the consumer's own
    (its loop, its share of partitions): more consumers."""
    p = t.params
    if (number_of(p, "fetch.min.bytes") or 1) > 1:
        wait = number_of(p, "fetch.wait.max.ms")
        wait = 500.0 if wait is None else wait  # Kafka's default fetch.wait.max.ms
        out = {"fetch.min.bytes": "1"}
        budget = slo_budget_ms(t, slo_ms, wait)
        if budget is not None and wait > budget:
            out["fetch.wait.max.ms"] = str(int(budget))
        return out
    return consumer_fix("consumer", p, brokers)


def latency_fix(part: str, t: TrialRow, brokers: int = 3, slo_ms: float | None = None) -> dict[str, str]:
    """The setting that moves the latency part `part` (advisor.latency.LATENCY_PARTS) down, with a legal value;
    the waits a client is configured to make are sized to the budget the SLO (`slo_ms`, p99 end-to-end) leaves."""
    p = t.params
    if part == "client_queue_ms":
        linger = number_of(p, "linger.ms")
        queue = number(t.client_queue_ms) or 0
        if linger is not None and linger >= 1 and queue <= 2 * linger + diagnose.QUEUE_SLACK_MS:  # the linger's wait
            return linger_fix(t, slo_ms)
        return {"producer rate": "lower: records queue behind a full batch pipeline (the sustainable rate)"}
    if part == "produce_queue_ms":
        return binding_fix("request_handlers", t)
    if part == "produce_response_queue_ms":
        return binding_fix("network_threads", t)
    if part == "produce_local_ms":
        return binding_fix("forced_flush", t) or {"log dirs": "faster disks (the leader's append is slow)"}
    if part == "produce_remote_ms":
        return {"num.replica.fetchers": replication_fix(p, brokers)["num.replica.fetchers"]}
    if part == "consumer_ms":
        return consumer_fix("consumer", p, brokers) if behind(t) else fetch_fix(t, slo_ms, brokers)
    return {}


def round_trips_advice(no_effect: Collection[str], best: TrialRow) -> str:
    """The advice when nothing saturates, leaving out the levers the study's ablations found without effect
    (`no_effect`); a producer capped below Kafka's in-flight default is named first (inflight_fix)."""
    params = best.params
    capped = inflight_fix(params)
    if capped:
        key = next(iter(capped))
        now = params.get(key)
        inflight = number(best.client_inflight)
        seen = f" (the producer had {inflight:.1f} in flight, median)" if inflight is not None else ""
        return (
            f"No resource is saturated: the rate is set by round trips, and {key}={now} lets each broker "
            f"connection carry {now} request(s) at a time{seen}: raise it to {capped[key]}, Kafka's default"
        )
    levers = [k for k in ("batch.size", "linger.ms") if k not in no_effect]
    more = round_trips_fix(best, no_effect).get("producers")
    if more:
        lever = f"{more} producer processes keep twice the"
    else:  # producers the study measured without effect are not offered again, in words either
        lever = "more partitions keep more" if "producers" in no_effect else "more partitions and producers keep more"
    return (
        f"No resource is saturated: the rate is set by round trips (acks=all waits for the followers): {lever} "
        "requests in flight"
        + (f"; a larger {' and '.join(levers)} makes each trip carry more" if levers else "")
        + (f" ({', '.join(sorted(no_effect))}: measured without effect here)" if no_effect else "")
    )
