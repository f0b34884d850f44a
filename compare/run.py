"""`kafkatune compare`: the same workloads on every system, through the same harness, side by side.

Methods (docs/reference.md §2-4), one module each: throughput and pingpong (NTU), native (the iperf3 and
sockperf floors), fixed_rate (OMB), iot (periodic and sporadic flows). This module runs them over every
system of a spec and keeps comparison.json up to date after each (records.comparison).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from compare import fixed_rate, iot, native, pingpong, throughput
from compare.harness import Say, SystemTarget, Tick, targets
from compare.spec import CompareSpec, System
from core.errors import UserError
from drivers import api
from records import comparison as comparisons
from records.comparison import Comparison
from records.comparison import System as SystemRow


def steps(spec: CompareSpec, systems: list[System]) -> int:
    n_systems = len(systems)
    n = 0
    if spec.throughput:
        n += len(spec.throughput.size_list()) * spec.throughput.repeats * n_systems
    if spec.pingpong:
        n += spec.pingpong.repeats * n_systems
    if spec.fixedRate:
        n += sum(len(spec.fixedRate.partitions) if s.partitioned else 1 for s in systems)
    if spec.iot and spec.iot.periodic:
        n += len(spec.iot.periodic.rates) * n_systems
    if spec.iot and spec.iot.sporadic:
        n += n_systems
    return n


def validate_systems(spec: CompareSpec, only: list[str] | None = None) -> None:
    """Each system's client configs checked by its own driver before anything runs (no server contacted)."""
    for s in spec.selected(only):
        common = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in s.common.items()}
        pc = {k: str(v) for k, v in s.producerConfig.items()}
        cc = {k: str(v) for k, v in s.consumerConfig.items()}
        try:
            drv = api.load_driver(s.driver)(common)
            try:
                drv.validate(pc, cc)
                if s.pingpongProducerConfig:
                    drv.validate({**pc, **{k: str(v) for k, v in s.pingpongProducerConfig.items()}}, cc)
            finally:
                drv.close()
        except UserError as e:
            raise UserError(f"systems.{s.name} ({s.driver}): {e}") from None


def _methods(t: SystemTarget, spec: CompareSpec, out: Path, doc: Comparison, say: Say, tick: Tick) -> Comparison:
    """Every method the spec asks for on one system: `doc` with its rows added, saved after each method."""
    args = (t, spec, out, say, tick)
    methods: tuple[tuple[object, Callable[[Comparison], Comparison]], ...] = (
        (spec.throughput, lambda d: replace(d, throughput=(*d.throughput, *throughput.throughput(*args)))),
        (spec.pingpong, lambda d: replace(d, pingpong=(*d.pingpong, pingpong.pingpong(*args)))),
        (spec.fixedRate, lambda d: replace(d, fixed_rate=(*d.fixed_rate, *fixed_rate.fixed_rate(*args)))),
        (spec.iot and spec.iot.periodic, lambda d: replace(d, iot_periodic=(*d.iot_periodic, *iot.periodic(*args)))),
        (spec.iot and spec.iot.sporadic, lambda d: replace(d, iot_sporadic=(*d.iot_sporadic, iot.sporadic(*args)))),
    )
    for wanted, add in methods:
        if wanted:
            doc = add(doc)
            comparisons.write_comparison(out, doc)
    return doc


def compare(
    spec: CompareSpec,
    out: Path,
    *,
    state_dir: Path | None = None,
    say: Say = print,
    tick: Tick = lambda: None,
    only: list[str] | None = None,
) -> Comparison:
    """Run every method on every system; write out/comparison.json and return it."""
    out.mkdir(parents=True, exist_ok=True)
    comparisons.write_spec(out, spec.model_dump_json(indent=2))
    doc = Comparison(name=spec.name, started=_now(), spec=json.loads(spec.model_dump_json()))
    validate_systems(spec, only)  # and an unknown --system name is refused here
    if spec.native:
        say("native floors (iperf3, sockperf) on 127.0.0.1")
        doc = replace(doc, native=native.native(spec, say))
        comparisons.write_comparison(out, doc)
    with targets(spec, state_dir, say, only) as ts:
        for t in ts:
            s = t.system
            doc = replace(doc, systems=(*doc.systems, SystemRow(t.name, s.driver, s.server_kind, s.partitioned)))
            say(f"{t.name} ({s.driver})")
            doc = _methods(t, spec, out, doc, say, tick)
    doc = replace(doc, finished=_now())
    comparisons.write_comparison(out, doc)
    return doc


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def succeeded(doc: Comparison) -> bool:
    """Whether any run of any system produced a figure (a spec with no such method asks for none)."""
    ran = len(doc.throughput) + len(doc.pingpong) + len(doc.fixed_rate)
    figures = [
        *(r.msg_s for r in doc.throughput if not r.error),
        *(r.p50_us for r in doc.pingpong if not r.error),
        *(r.publish_msg_s for r in doc.fixed_rate if not r.error),
    ]
    return not ran or any(figures)
