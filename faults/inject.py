"""A fault schedule applied to the testbed while a run measures, and what each fault did.

The run's on_tick hook hands the injector the run's time line (loadgen.runner's `timing`) with its first tick;
a thread then applies each fault at its time, from the start of the measurement window. Every event records,
in seconds from the run's t0 (the per-second series' clock): when the fault was issued, when it took effect (the
broker process gone, the qdisc or route in place), when it was undone (the node started again, the link back),
and when the cluster was whole again: every partition with its full ISR, kept for SETTLE_S. `finish()`,
after the load, undoes whatever is still applied (a shutdown without +FOR, a fault the load outlived) and waits
for that health, so a run never leaves the testbed broken.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from cluster import admin as kadmin
from cluster import metrics
from faults.spec import Fault
from records.result import FaultEvent
from testbed import netns
from testbed.lifecycle import Testbed

Say = Callable[[str], None]
HEALTH_TIMEOUT_S = 180.0
SETTLE_S = 5.0  # the cluster is whole once every partition has kept its full ISR this long


def active_controller(tb: Testbed) -> int | None:
    """The testbed node that is the active KRaft controller now (its ActiveControllerCount is 1), or None."""
    for n in tb.state().nodes:
        with contextlib.suppress(OSError):
            if metrics.scrape(n.metrics_url, timeout_s=2).get("active_controller") == 1.0:
                return n.id
    return None


class Injector:
    def __init__(self, testbed: Testbed, faults: Sequence[Fault], say: Say = print) -> None:
        self.tb, self.faults, self.say = testbed, sorted(faults, key=lambda f: f.at_s), say
        self.topic = ""  # the run's first topic (a leader target is one of its partitions' leader)
        self.events = [FaultEvent(f.text, f.kind, "", [], 0.0) for f in self.faults]
        self._t0 = 0
        self._threads: list[threading.Thread] = []  # one per fault: faults whose times overlap overlap
        self._end = threading.Event()
        self._down: set[int] = set()  # stopped by a fault, not started again yet
        self._links: list[Fault] = []  # link faults in place
        self._lock = threading.Lock()
        self._admin = kadmin.admin_client(testbed.state().bootstrap_servers)

    # ---- the run's hook --------------------------------------------------------------------------
    def on_tick(self, raw: Any, tick: Any) -> None:
        if not self._threads and raw.timing.measure_start_ns:
            self.topic = raw.topics[0]
            self._t0 = raw.timing.t0_ns
            start = raw.timing.measure_start_ns
            for f, ev in zip(self.faults, self.events, strict=True):
                t = threading.Thread(target=self._at_its_time, args=(f, ev, start), name=f"fault {f.text}", daemon=True)
                self._threads.append(t)
                t.start()

    def _s(self) -> float:
        """Now, in seconds from the run's t0."""
        return round((time.time_ns() - self._t0) / 1e9, 3)

    def _at_its_time(self, f: Fault, ev: FaultEvent, measure_start_ns: int) -> None:
        """Apply `f` at its time from the window's start (and undo it after its duration): each fault in a thread
        of its own, so a fault is never held back by another still in place."""
        ev.planned_s = round((measure_start_ns - self._t0) / 1e9 + f.at_s, 3)
        wait = (measure_start_ns + f.at_s * 1e9 - time.time_ns()) / 1e9
        if wait > 0 and self._end.wait(wait):
            ev.error = "not applied: the load ended first"
            return
        try:
            self._apply(f, ev)
        except Exception as e:  # recorded: the run goes on, and finish() restores what it can
            ev.error = f"{type(e).__name__}: {e}"
            self.say(f"fault {f.text}: {ev.error}")

    # ---- applying one fault ----------------------------------------------------------------------
    def _resolve(self, f: Fault, ev: FaultEvent) -> list[int]:
        """The broker(s) the fault hits now; a leader or controller being elected is waited for (up to 60 s)."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return self._resolve_once(f, ev)
            except RuntimeError:
                if time.monotonic() > deadline or self._end.wait(0.5):
                    raise

    def _resolve_once(self, f: Fault, ev: FaultEvent) -> list[int]:
        if f.target == "leader":
            parts = {p.partition: p for p in kadmin.partitions(self._admin, self.topic)}
            p = parts.get(f.partition)
            if p is None or p.leader is None or p.leader < 0:
                raise RuntimeError(f"partition {f.partition} of {self.topic} has no leader now")
            ev.target = f"leader of partition {f.partition} of {self.topic}"
            return [int(p.leader)]
        if f.target == "controller":
            c = active_controller(self.tb)
            if c is None:
                raise RuntimeError("no node reports itself the active controller")
            ev.target = "active controller"
            return [c]
        ev.target = "broker " + "/".join(map(str, f.brokers))
        return list(f.brokers)

    def _apply(self, f: Fault, ev: FaultEvent) -> None:
        ev.brokers = self._resolve(f, ev)
        ev.issued_s = self._s()
        self.say(
            f"fault {f.text}: {f.kind} of {ev.target} (broker {'/'.join(map(str, ev.brokers))}) at {ev.issued_s:.1f} s"
        )
        if f.needs_shaped_network:
            self._link(f, ev, undo=False)
            ev.effect_s = self._s()
            if self._end.wait(f.for_s or 0):
                return  # the load ended: finish() undoes it
            self._link(f, ev, undo=True)
            ev.restored_s = self._s()
        else:
            b = ev.brokers[0]
            with self._lock:
                self._down.add(b)
            self.tb.stop(b, hard=f.hard)
            ev.effect_s = self._s()
            if not f.bounce and (f.for_s is None or self._end.wait(f.for_s)):
                return  # stays down until finish()
            self._start(b)
            ev.restored_s = self._s()
        self._healthy(ev)

    def _link(self, f: Fault, ev: FaultEvent, *, undo: bool) -> None:
        net = self.tb.network(self.tb.state())
        assert net is not None, "link faults need the shaped testbed (checked before the run)"
        hosts = [f"b{b}" for b in ev.brokers]
        if f.kind == "partition":
            netns.cut(net, hosts[0], hosts[1], undo=undo)
        elif f.kind == "loss":
            netns.drop_random(net, hosts[0], f.loss_pct, undo=undo)
        elif undo:
            netns.undo_degrade(net, hosts[0])
        else:
            netns.degrade(net, hosts[0], delay_ms=f.delay_ms)
        with self._lock:
            if undo:
                self._links = [g for g in self._links if g is not f]
            else:
                self._links.append(f)

    def _start(self, b: int) -> None:
        self.tb.start(b, progress=lambda m: None)
        with self._lock:
            self._down.discard(b)

    def _whole_since(self) -> float:
        """Wait until every partition has kept its full ISR for SETTLE_S; returns when that stretch began (s from
        t0). A stretch, not one look: a broker killed and started again at once still shows in the ISRs until
        the controller fences its old incarnation, and only then do they shrink and grow back (measured)."""
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        since: float | None = None
        lagging: list[Any] = []
        while time.monotonic() < deadline:
            try:
                lagging = kadmin.under_replicated(self._admin, timeout_s=5)
            except Exception:  # metadata briefly unavailable while a node starts
                lagging = ["metadata unavailable"]
            if lagging:
                since = None
            elif since is None:
                since = self._s()
            elif self._s() - since >= SETTLE_S:
                return since
            time.sleep(0.25)
        raise TimeoutError(f"the cluster was not whole {HEALTH_TIMEOUT_S:.0f} s after the fault: {lagging[:5]}")

    def _healthy(self, ev: FaultEvent) -> None:
        ev.healthy_s = self._whole_since()
        if ev.effect_s is not None:
            ev.recovery_s = round(ev.healthy_s - ev.effect_s, 3)

    # ---- after the load --------------------------------------------------------------------------
    def finish(self) -> list[FaultEvent]:
        """Undo what is still applied, wait until the cluster is whole, and return the events."""
        self._end.set()
        for t in self._threads:
            t.join(timeout=HEALTH_TIMEOUT_S + 120)
        with self._lock:
            down, links = sorted(self._down), list(self._links)
        for f in links:
            ev = next(e for g, e in zip(self.faults, self.events, strict=True) if g is f)
            self._link(f, ev, undo=True)
            ev.restored_s = self._s()
        for b in down:
            self._start(b)
            for ev in self.events:
                if b in ev.brokers and ev.restored_s is None and ev.effect_s is not None:
                    ev.restored_s = self._s()
        pending = [e for e in self.events if e.effect_s is not None and e.healthy_s is None]
        if pending or down or links:
            whole = self._whole_since()
            for ev in pending:
                ev.healthy_s = whole
                ev.recovery_s = round(whole - (ev.effect_s or 0.0), 3)
        return list(self.events)
