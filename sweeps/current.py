"""The `current` baseline: the configuration the cluster and its clients run now, measured like every baseline.

    current:
      producer: producer.properties   # the producers' config file (relative to the spec's folder)
      consumer: consumer.properties   # the consumers' config file
      topic: orders                   # a topic whose partition count the workload takes

Client keys come from the users' .properties files: the ones kafkatune sweeps (brokerconf.catalogue) are applied,
checked against their legal values when the spec is read; the others (serializers, security, client.id) are named
and left out, never their values, which may be secrets. Broker keys come from the pre-sweep snapshot (the brokers'
live configs, brokerconf.apply.Configs.snapshot): every catalogue key the brokers run at other than Kafka's
default, so the baseline's record says what the cluster ran. Without a `current` section the baseline is the
clients' defaults on the brokers as they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from confluent_kafka.admin import AdminClient
from pydantic import BaseModel, ConfigDict, Field

from brokerconf import catalogue, properties
from cluster import admin as kadmin
from core.errors import UserError
from records.snapshot import DEFAULT, BrokerSnapshot, Setting

NAME = "current"
UNKNOWN = Setting(None, "")  # a key a broker's snapshot lacks (taken by an older release): not set there


class Current(BaseModel):
    """The spec's `current` section: where the clients' configs and the workload's topic are read from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    producer: Annotated[str, Field(min_length=1)] | None = None
    consumer: Annotated[str, Field(min_length=1)] | None = None
    topic: Annotated[str, Field(min_length=1)] | None = None

    def resolved(self, base: Path) -> Current:
        """The section with its files' paths made absolute against `base` (the spec file's folder)."""

        def at(p: str | None) -> str | None:
            return p if p is None or Path(p).is_absolute() else str(base / p)

        return self.model_copy(update={"producer": at(self.producer), "consumer": at(self.consumer)})


def client_config(cur: Current, source: str = "spec") -> tuple[dict[str, int | str], list[str]]:
    """The catalogue keys the files set, typed, and the names of the keys left out (sorted). Raises UserError naming
    the file, the key and what is allowed, for a value out of range or a key of the other client."""
    cfg: dict[str, int | str] = {}
    left_out: set[str] = set()
    for scope in ("producer", "consumer"):
        path = getattr(cur, scope)
        if path is None:
            continue
        where = f"{source}: current.{scope} ({path})"
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise UserError(f"{where}: cannot read it: {e.strerror}") from None
        for k, v in properties.parse_text(text, where).items():
            p = catalogue.CATALOGUE.get(k)
            if p is None or p.apply != "client":
                left_out.add(k)
                continue
            if p.scope != scope:
                raise UserError(f"{where}: {k} is a {p.scope} setting: put it in current.{p.scope}")
            value: int | str = v
            if p.kind == "int":
                if not v.strip().lstrip("-").isdigit():
                    raise UserError(f"{where}: {k}={v!r}: must be an integer in [{p.low}, {p.high}]")
                value = int(v)
            if (why := p.check(value)) is not None:
                raise UserError(f"{where}: {k}={v!r}: must be {why}")
            cfg[k] = value
    return cfg, sorted(left_out)


def broker_config(snapshot: BrokerSnapshot) -> dict[str, int | str]:
    """The catalogue broker keys the snapshot's brokers run at other than Kafka's default, typed: a dynamic key set
    on every broker to one value (static or dynamic; a key the brokers disagree on is left out, each broker then
    keeps its own value as in every trial), and the restart-only keys every broker's file sets to one value."""
    out: dict[str, str] = {}
    for key in catalogue.DYNAMIC_KEYS:
        seen = [b.get(key, UNKNOWN) for b in snapshot.brokers.values()]
        values = {s.value for s in seen}
        set_here = seen and all(s.source != DEFAULT for s in seen)
        if set_here and len(values) == 1 and (v := values.pop()) is not None:
            out[key] = v
    out.update(_restart_overrides(snapshot.restart_overrides))
    typed = {k: int(v) if catalogue.param(k).kind == "int" else str(v) for k, v in out.items()}
    return {k: v for k, v in typed.items() if str(v) != str(catalogue.param(k).default)}


def _restart_overrides(snap: Any) -> dict[str, str]:
    """The restart-only keys of a snapshot's `restart_overrides`: the testbed's one set for every node, or a remote
    cluster's per broker id (brokerconf.restarts), where only a key every broker sets to one value counts."""
    if not isinstance(snap, Mapping):
        return {}
    hosts = list(snap.values())
    if not hosts or not all(isinstance(h, Mapping) for h in hosts):  # the testbed's
        return {k: str(v) for k, v in snap.items() if k in catalogue.CATALOGUE}
    out: dict[str, str] = {}
    for k in set.intersection(*(set(h) for h in hosts)) & set(catalogue.CATALOGUE):
        vals = {h[k] for h in hosts}
        if len(vals) == 1 and None not in vals:
            out[k] = str(vals.pop())
    return out


def topic_partitions(admin: AdminClient, topic: str) -> int:
    """The live topic's partition count; UserError when the cluster has no such topic."""
    parts = kadmin.partitions(admin, topic)
    if not parts:
        raise UserError(f"current.topic: the cluster has no topic {topic!r}")
    return len(parts)
