"""`kafkatune compare`: the same workloads on every system, through the same harness, side by side.

Methods (docs/reference.md §2-4), one module each: throughput and pingpong (NTU), native (the iperf3 and
sockperf floors), fixed_rate (OMB), iot (periodic and sporadic flows). This module runs them over every
system of a spec and keeps comparison.json up to date after each (records.comparison).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from compare import fixed_rate, iot, native, pingpong, throughput
from compare.harness import Say, SystemTarget, Tick, targets
from compare.spec import CompareSpec, System
from core.errors import UserError
from drivers import api
from records import comparison as comparisons


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


def _methods(t: SystemTarget, spec: CompareSpec, out: Path, doc: dict[str, Any], say: Say, tick: Tick) -> None:
    """Every method the spec asks for on one system, its rows added to `doc`, which is saved after each."""
    methods = (
        (spec.throughput, "throughput", lambda: throughput.throughput(t, spec, out, say, tick)),
        (spec.pingpong, "pingpong", lambda: [pingpong.pingpong(t, spec, out, say, tick)]),
        (spec.fixedRate, "fixed_rate", lambda: fixed_rate.fixed_rate(t, spec, out, say, tick)),
        (spec.iot and spec.iot.periodic, "iot_periodic", lambda: iot.periodic(t, spec, out, say, tick)),
        (spec.iot and spec.iot.sporadic, "iot_sporadic", lambda: [iot.sporadic(t, spec, out, say, tick)]),
    )
    for wanted, key, run in methods:
        if wanted:
            doc[key] += run()
            comparisons.write_comparison(out, doc)


def compare(
    spec: CompareSpec,
    out: Path,
    *,
    state_dir: Path | None = None,
    say: Say = print,
    tick: Tick = lambda: None,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Run every method on every system; write out/comparison.json and return it."""
    out.mkdir(parents=True, exist_ok=True)
    comparisons.write_spec(out, spec.model_dump_json(indent=2))
    doc: dict[str, Any] = {
        "name": spec.name,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spec": json.loads(spec.model_dump_json()),
        "systems": [],
        "throughput": [],
        "pingpong": [],
        "native": {},
        "fixed_rate": [],
        "iot_periodic": [],
        "iot_sporadic": [],
    }
    validate_systems(spec, only)  # and an unknown --system name is refused here

    def save() -> None:
        comparisons.write_comparison(out, doc)

    if spec.native:
        say("native floors (iperf3, sockperf) on 127.0.0.1")
        doc["native"] = native.native(spec, say)
        save()
    with targets(spec, state_dir, say, only) as ts:
        for t in ts:
            doc["systems"].append(
                {
                    "name": t.name,
                    "driver": t.system.driver,
                    "server": t.system.server_kind,
                    "partitioned": t.system.partitioned,
                }
            )
            say(f"{t.name} ({t.system.driver})")
            _methods(t, spec, out, doc, say, tick)
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return doc


def succeeded(doc: dict[str, Any]) -> bool:
    """Whether any run of any system produced a figure (a spec with no such method asks for none)."""
    ran = [r for k in ("throughput", "pingpong", "fixed_rate") for r in doc[k]]
    return not ran or any(
        not r.get("error") and (r.get("msg_s") or r.get("p50_us") or r.get("publish_msg_s")) for r in ran
    )
