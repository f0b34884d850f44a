"""Search spaces and configurations: Optuna distributions from a stage, full trial configs, baselines.

A trial's configuration is always complete: Kafka's defaults for every client key, overlaid by the
workload's own client config, the spec's `fixed`, the best of earlier stages, the stage's `fixed`,
and what the sampler suggested, in that order. Broker keys a trial does not set run with the
pre-sweep snapshot's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution

from brokerconf import catalogue
from records.snapshot import BrokerSnapshot
from sweeps import current
from sweeps.spec import Spec
from sweeps.stages import Choices, IntRange, Stage

Config = dict[str, int | str]

# Published starting points every sweep is compared against (all with acks=all: synchronous replication).
BASELINE_CONFIGS: dict[str, Config] = {
    # Apache Kafka's Java-client and broker defaults.
    "kafka-defaults": {},
    # OpenMessaging Benchmark's Kafka throughput driver profile (driver-kafka/kafka-throughput.yaml).
    "omb-throughput": {"linger.ms": 1, "batch.size": 1048576},
    # Confluent's "optimize for throughput" guidance: batch.size 100-200 KB, linger.ms 10-100, lz4.
    "confluent-throughput": {"batch.size": 200000, "linger.ms": 50, "compression.type": "lz4"},
}


def distributions(stage: Stage) -> dict[str, BaseDistribution]:
    out: dict[str, BaseDistribution] = {}
    for k, v in stage.params.items():
        p = catalogue.param(k)
        if isinstance(v, IntRange):
            out[k] = IntDistribution(v.low, v.high, log=v.log, step=v.step or 1)
        elif isinstance(v, Choices):
            vals: list[str | int] = [str(c) if p.kind == "choice" else int(c) for c in v.choices]
            out[k] = CategoricalDistribution(vals)
        else:
            out[k] = CategoricalDistribution([v])
    return out


def suggest(trial: optuna.trial.BaseTrial, stage: Stage) -> Config:
    return {k: trial._suggest(k, d) for k, d in distributions(stage).items()}  # type: ignore[attr-defined]


def _typed(k: str, v: Any) -> int | str:
    return int(v) if catalogue.param(k).kind == "int" else str(v)


def client_defaults() -> Config:
    return {p.name: p.default for p in catalogue.CATALOGUE.values() if p.apply == "client" and p.default is not None}


def assemble(
    spec: Spec, stage_fixed: Mapping[str, Any], carried: Mapping[str, Any], suggested: Mapping[str, Any]
) -> Config:
    """The complete configuration of one trial (see the module docstring for the order)."""
    w = spec.base_workload()
    cfg: Config = client_defaults()
    clients = {**w.str_map("producerConfig"), **w.str_map("consumerConfig")}
    for layer in (
        {k: v for k, v in clients.items() if k in catalogue.CATALOGUE},
        spec.fixed,
        carried,
        stage_fixed,
        suggested,
    ):
        for key, val in layer.items():
            cfg[key] = _typed(key, val)
    return cfg


def _shape(spec: Spec) -> Config:
    """The spec's fixed workload shape (partitions, producers, consumers): every baseline runs it."""
    return {k: _typed(k, v) for k, v in spec.fixed.items() if catalogue.param(k).scope in ("workload", "topic")}


def baseline(spec: Spec, name: str) -> Config:
    """A published baseline: Kafka's defaults plus the published profile, acks=all, the spec's workload shape.

    Kafka's defaults include the dynamic broker keys the spec sweeps, set to Kafka's default: otherwise they would
    run at whatever the cluster runs now (that is the `current` baseline's, current_baseline). Restart-only keys
    keep the cluster's own values here, as a default would cost each baseline a rolling restart."""
    cfg: Config = {**client_defaults(), **_shape(spec)}
    swept = (catalogue.param(k) for k in sorted(spec.all_keys()))
    cfg.update({p.name: p.default for p in swept if p.apply == "dynamic" and p.default is not None})
    cfg.update(BASELINE_CONFIGS[name])
    cfg["acks"] = "all"
    return cfg


def current_baseline(spec: Spec, snapshot: BrokerSnapshot, partitions: int | None) -> tuple[Config, list[str]]:
    """The `current` baseline (sweeps.current): the clients' defaults, the workload's client config and the spec's
    workload shape, overlaid with the users' client files, the brokers' live non-default keys and the partitions of
    `current.topic` (`partitions`). Returns it with the client keys the files set that kafkatune left out."""
    w = spec.base_workload()
    cfg: Config = client_defaults()
    clients = {**w.str_map("producerConfig"), **w.str_map("consumerConfig")}
    cfg.update({k: _typed(k, v) for k, v in clients.items() if k in catalogue.CATALOGUE})
    cfg.update(_shape(spec))
    files, left_out = current.client_config(spec.current) if spec.current else ({}, [])
    cfg.update(files)
    cfg.update(current.broker_config(snapshot))
    if partitions is not None:
        cfg["partitions"] = partitions
    return cfg, left_out


def split(cfg: Mapping[str, int | str]) -> dict[str, dict[str, str]]:
    """Group a configuration by how it is applied: producer, consumer, workload, dynamic, restart."""
    out: dict[str, dict[str, str]] = {"producer": {}, "consumer": {}, "workload": {}, "dynamic": {}, "restart": {}}
    for k, v in cfg.items():
        p = catalogue.param(k)
        if p.apply == "client":
            out[p.scope][k] = str(v)
        elif p.apply in ("workload", "topic"):
            out["workload"][k] = str(v)
        else:
            out[p.apply][k] = str(v)
    return out
