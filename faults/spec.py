"""A fault, as `kafkatune bench --fault` and a sweep spec's `faults` write it: `KIND[=VALUE]:TARGET@AT[+FOR]`.

    clean_shutdown:leader@5          SIGTERM the leader of partition 0 at 5 s into the measurement window; it
                                     stays down until the load ends (then it is started again)
    hard_shutdown:controller@5+10    SIGKILL the active controller at 5 s, start it again 10 s later
    clean_bounce:leader.2@5          stop the leader of partition 2 cleanly and start it again at once
    hard_bounce:broker3@5            SIGKILL broker 3 and start it again at once
    loss=5%:broker2@0+30             5 % packet loss on broker 2's link, both ways, for 30 s (shaped testbed)
    delay=20ms:broker2@0+30          20 ms more delay each way on broker 2's link (shaped testbed)
    partition:broker1/broker2@5+10   brokers 1 and 2 cannot reach each other for 10 s (shaped testbed)

Kafka's replication system test (replication_test.py in Kafka's kafkatest suite) names the four node faults
and their two targets the same way. AT and FOR are seconds (an `s` may follow).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from core.errors import EnvironmentProblem, UserError
from testbed import netns

NODE_FAULTS = ("clean_shutdown", "hard_shutdown", "clean_bounce", "hard_bounce")
LINK_FAULTS = ("loss", "delay", "partition")
KINDS = NODE_FAULTS + LINK_FAULTS
GRAMMAR = "KIND[=VALUE]:TARGET@AT[+FOR], e.g. hard_bounce:leader@5 or loss=5%:broker2@0+30"

_FAULT = re.compile(r"^(?P<kind>[a-z_]+)(?:=(?P<value>[^:]+))?:(?P<target>[^@]+)@(?P<at>[^+]+)(?:\+(?P<for>.+))?$")
_EXAMPLES = {
    "loss": "loss=5%:broker2@0+30",
    "delay": "delay=20ms:broker2@0+30",
    "partition": "partition:broker1/broker2@5+10",
}
_SECONDS = re.compile(r"^(\d+(?:\.\d+)?)s?$")


@dataclass(frozen=True)
class Fault:
    text: str  # as given
    kind: str  # one of KINDS
    target: str  # "leader" | "controller" | "broker" (node faults, loss, delay) | "pair" (partition)
    partition: int = 0  # target "leader": the partition whose leader
    brokers: tuple[int, ...] = ()  # target "broker": (id,); "pair": (a, b)
    at_s: float = 0.0  # seconds into the measurement window
    for_s: float | None = None  # how long it lasts; None: a bounce (at once) or a shutdown until the load ends
    loss_pct: float = 0.0
    delay_ms: float = 0.0

    @property
    def needs_shaped_network(self) -> bool:
        return self.kind in LINK_FAULTS

    @property
    def bounce(self) -> bool:
        return self.kind.endswith("_bounce")

    @property
    def hard(self) -> bool:
        return self.kind.startswith("hard_")


def _seconds(text: str, field: str, where: str) -> float:
    m = _SECONDS.match(text.strip())
    if not m:
        raise UserError(f"{where}: {field} {text!r} is not a number of seconds ({GRAMMAR})")
    return float(m.group(1))


def _broker(text: str, where: str, node_fault: bool = False) -> int:
    m = re.fullmatch(r"broker(\d+)", text)
    if not m:
        allowed = "leader, leader.P (partition P's), controller or brokerN" if node_fault else "brokerN (broker1, …)"
        raise UserError(f"{where}: target {text!r}: {allowed}")
    return int(m.group(1))


def parse(text: str, where: str = "--fault") -> Fault:
    """One fault; a UserError that names the part that is wrong and what is allowed."""
    m = _FAULT.match(text.strip())
    if not m:
        raise UserError(f"{where}: {text!r} is not a fault: {GRAMMAR}")
    kind, value, target = m.group("kind"), m.group("value"), m.group("target")
    if kind not in KINDS:
        raise UserError(f"{where}: unknown fault {kind!r}; known: {', '.join(KINDS)}")
    at = _seconds(m.group("at"), "AT", where)
    dur = _seconds(m.group("for"), "FOR", where) if m.group("for") is not None else None
    f = Fault(text=text, kind=kind, target="broker", at_s=at, for_s=dur)
    if kind in NODE_FAULTS:
        if value is not None:
            raise UserError(f"{where}: {kind} takes no value (got ={value})")
        if kind.endswith("_bounce") and dur is not None:
            raise UserError(f"{where}: {kind} starts the node again at once: no +FOR (a shutdown takes one)")
        lm = re.fullmatch(r"leader(?:\.(\d+))?", target)
        if lm:
            return replace(f, target="leader", partition=int(lm.group(1) or 0))
        if target == "controller":
            return replace(f, target="controller")
        return replace(f, brokers=(_broker(target, where, node_fault=True),))
    if dur is None:
        raise UserError(
            f"{where}: {kind} needs +FOR, how long it lasts (e.g. {kind}{'=5%' if kind == 'loss' else ''}…@0+30)"
        )
    if kind == "partition":
        if value is not None:
            raise UserError(f"{where}: partition takes no value (got ={value})")
        a, _, b = target.partition("/")
        if not b:
            raise UserError(f"{where}: partition needs two brokers: broker1/broker2")
        pair = (_broker(a, where), _broker(b, where))
        if pair[0] == pair[1]:
            raise UserError(f"{where}: partition between {target}: two different brokers")
        return replace(f, target="pair", brokers=pair)
    if value is None:
        raise UserError(f"{where}: {kind} needs a value (e.g. {_EXAMPLES[kind]})")
    if kind == "loss":
        vm = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
        if not vm or not 0 < float(vm.group(1)) <= 100:
            raise UserError(f"{where}: loss={value}: a percentage above 0 and at most 100, e.g. loss=5%")
        f = replace(f, loss_pct=float(vm.group(1)))
    else:
        vm = re.fullmatch(r"(\d+(?:\.\d+)?)ms", value)
        if not vm or not 0 < float(vm.group(1)) <= 10_000:
            raise UserError(f"{where}: delay={value}: milliseconds above 0 and at most 10000, e.g. delay=20ms")
        f = replace(f, delay_ms=float(vm.group(1)))
    return replace(f, brokers=(_broker(target, where),))


def check_schedule(
    faults: list[Fault], window_s: float, shaped: bool, brokers: list[int], where: str = "--fault"
) -> None:
    """Refuse, before anything runs, a fault the target cannot take: outside the window, a link fault on the
    loopback testbed, a broker that does not exist."""
    for f in faults:
        if f.at_s >= window_s:
            raise UserError(f"{where}: {f.text}: starts at {f.at_s:g} s, after the {window_s:g}-s measurement window")
        if f.needs_shaped_network and not shaped:
            raise UserError(
                f"{where}: {f.text}: link faults need the shaped testbed (kafkatune testbed up --network shaped)"
            )
        if f.kind == "delay" and (why := netns.delay_missing()):
            raise EnvironmentProblem(f"{where}: {f.text}: {why}")
        for b in f.brokers:
            if b not in brokers:
                raise UserError(f"{where}: {f.text}: no broker {b} (the cluster has {', '.join(map(str, brokers))})")
