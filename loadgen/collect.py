"""The coordinator's side of a run while it goes: waiting until every worker is ready, then reading what the workers
report (ticks, counts, final reports), steering a steered run, and ending the drain once everything acknowledged
arrived (loadgen.runner starts and stops the run around it).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import Any

from core.errors import RunFailed
from loadgen.backlog import Backlog
from loadgen.channel import Channel
from loadgen.rawrun import DrainEnd, Evidence, ProducerEnd, Publish, RawRun, Steer, Tick, View, ended
from loadgen.workload import Workload


def steered(steer: Steer, publish: Publish, stop_when: Callable[[RawRun], bool] | None) -> Callable[[RawRun], bool]:
    """One `stop_when` that asks `steer` (which may publish a rate) and then `stop_when`."""

    def ask(raw: RawRun) -> bool:
        return steer(raw, publish) or (stop_when is not None and stop_when(raw))

    return ask


def await_ready(q: Any, n_prod: int, n_cons: int, procs: list[Any], timeout_s: float) -> None:
    ready: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout_s
    while len(ready) < n_prod + n_cons:
        if time.monotonic() > deadline:
            missing = n_prod + n_cons - len(ready)
            raise RunFailed(
                f"{missing} worker(s) not ready after {timeout_s:.0f} s "
                "(consumer group not assigned, or client cannot connect)"
            )
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            dead = [p.name for p in procs if not p.is_alive()]
            if dead:
                raise RunFailed(f"worker(s) exited while starting: {', '.join(dead)}") from None
            continue
        if msg[0] == "error":
            raise RunFailed(f"{msg[1]} {msg[2]} failed while starting:\n{msg[3]}")
        if msg[0] == "ready":
            ready.add((msg[1], msg[2]))


# the drain ends once every acknowledged record arrived and nothing more did for this long (a late duplicate)
DRAIN_QUIET_S = 0.3


def _take(
    msg: tuple[Any, ...],
    raw: RawRun,
    ch: Channel,
    counted: dict[int, int],
    backlog: Backlog | None,
    on_tick: View | None,
    stop_when: Callable[[RawRun], bool] | None,
) -> bool:
    """One message from a worker into the run: a tick, a consumer's count of distinct records, a worker's end (a
    worker's error raises RunFailed). True when the consumers made progress (the drain's idle clock restarts)."""
    kind = msg[0]
    if kind == "error":
        raise RunFailed(f"{msg[1]} {msg[2]} failed:\n{msg[3]}")
    if kind == "tick":
        tk = Tick(*msg[1:-1])  # the last field is the evidence, a dict on the queue and the wire
        tk.evidence = Evidence.from_json(msg[-1]) if msg[-1] is not None else None
        raw.ticks.append(tk)
        if backlog is not None:
            backlog.count(tk.role, tk.msgs)
        if on_tick:
            on_tick(raw, tk)
        if stop_when and raw.stopped_early_at is None and stop_when(raw):
            raw.stopped_early_at = tk.second
            ch.stop_producers.set()
        return tk.role == "consumer" and bool(tk.msgs)
    if kind == "count" and counted.get(msg[2]) != msg[3]:
        counted[msg[2]] = msg[3]
        return True
    if kind == "done":
        end = ended(msg[1], msg[3])
        if isinstance(end, ProducerEnd):
            raw.producers[msg[2]] = end
        else:
            raw.consumers[msg[2]] = end
    return False


def collect(
    raw: RawRun,
    ch: Channel,
    procs: list[Any],
    counts: tuple[int, int],
    on_tick: View | None,
    stop_when: Callable[[RawRun], bool] | None,
    backlog: Backlog | None = None,
    drain: bool = True,
) -> None:
    w, q, stop_consumers = raw.workload, ch.q, ch.stop_consumers
    n_prod, n_cons = counts
    produce_end = raw.timing.produce_end_ns
    drain_deadline: float | None = None
    last_change = time.monotonic()
    counted: dict[int, int] = {}  # each consumer's distinct records after the producers' end
    while True:
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            msg = None
        if msg is not None and _take(msg, raw, ch, counted, backlog, on_tick, stop_when):
            last_change = time.monotonic()
        if backlog is not None:
            backlog.step()
        if len(raw.consumers) == n_cons and len(raw.producers) == n_prod:
            return
        if time.time_ns() > produce_end + 120e9 + w.drainTimeoutSeconds * 1e9 and len(raw.producers) < n_prod:
            raise RunFailed("producers did not finish flushing in time")
        if len(raw.producers) == n_prod and not stop_consumers.is_set():
            now = time.monotonic()
            if drain_deadline is None:
                drain_deadline = now + w.drainTimeoutSeconds
                t_drain = now
            acked = sum(p.acked for p in raw.producers.values())
            idle = now - last_change
            subs = max(1, w.subscriptionsPerTopic)
            # distinct records (ConsumerState.distinct): a consumer that re-read after its group rebalanced (a
            # broker bounced) counts its duplicates in its ticks, and their sum could reach the acknowledged count
            # while records behind a moved partition leader were still to come
            arrived = sum(counted.values()) if len(counted) == n_cons else 0
            why = drain_end(w, drain, arrived >= acked * subs, idle, now > drain_deadline)
            if why is not None:
                raw.drain_s = now - t_drain
                raw.drain_ended = why
                stop_consumers.set()
        dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
        if dead:
            raise RunFailed(f"worker {dead[0].name} died with exit code {dead[0].exitcode}")


def drain_end(w: Workload, drain: bool, all_arrived: bool, idle_s: float, past_deadline: bool) -> DrainEnd | None:
    """Why the consumers stop now that the producers are done, or None to keep reading. "arrived" is the one a
    complete run should give; "idle" (drainIdleSeconds of quiet) and "timeout" (drainTimeoutSeconds) mean some
    acknowledged record had not arrived, which the loss accounting then reports."""
    if w.subscriptionsPerTopic == 0:
        return "no-consumers"
    if not drain:
        return "not-drained"
    if all_arrived and idle_s > DRAIN_QUIET_S:
        return "arrived"
    if idle_s > w.drainIdleSeconds:
        return "idle"
    return "timeout" if past_deadline else None
