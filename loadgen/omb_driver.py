"""OpenMessaging Benchmark driver files (`driver-kafka/kafka-throughput.yaml`, `driver-pulsar/pulsar.yaml`,
`driver-mqtt5/mqtt5.yaml`) as the driver, client configs and topic configs of a workload.

`driverClass` picks kafkatune's driver. A Kafka file's four properties texts go where OMB's Kafka driver puts
them: `commonConfig` into every client, `producerConfig` / `consumerConfig` into each kind, `topicConfig` into
the topics it creates; `replicationFactor` is the topics'. Pulsar's and MQTT's structured fields map onto the
keys kafkatune's drivers take. What the file sets and kafkatune cannot apply is said, field by field, in the
notes a run prints: the address of the system (kafkatune's target replaces it), and settings of OMB's Java
clients the Python ones have no equivalent for. A field OMB's driver does not know is an error, as is a
driverClass kafkatune has no driver for: a misspelled key is never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.files import read_yaml
from loadgen.workload import ConfigValue, Workload, parse_workload

KAFKA = "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver"
PULSAR = "io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver"
MQTT = "io.openmessaging.benchmark.driver.mqtt5.MqttBenchmarkDriver"
DRIVERS = {KAFKA: "kafka", PULSAR: "pulsar", MQTT: "mqtt"}

# Java client settings librdkafka spells otherwise, or has no equivalent for (None: not applied)
_JAVA_ONLY: dict[str, str | None] = {
    "max.request.size": "message.max.bytes",
    "default.api.timeout.ms": None,
}
# Java client settings whose range librdkafka caps lower: above the cap, the cap (a timeout of 20 min or 15)
_LIBRDKAFKA_MAX = {"request.timeout.ms": 900_000}
_ADDRESS = "the system's address: kafkatune's target (the testbed, --bootstrap or --inventory) replaces it"
_PULSAR_CLIENT = "a setting of OMB's Java client; kafkatune's Pulsar driver (the Python client) keeps its defaults"


@dataclass(frozen=True)
class DriverFile:
    """What a driver file asks of a run: kafkatune's driver, configs as strings, and notes on what is not applied."""

    path: str
    name: str
    driver: str
    replication_factor: int | None = None
    producer: dict[str, str] = field(default_factory=dict)
    consumer: dict[str, str] = field(default_factory=dict)
    topic: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def properties(text: str, where: str) -> dict[str, str]:
    """Java properties text (`key=value`, `key: value` or `key value`; `#` and `!` comments) as a dict."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        seps = [i for i in (line.find("="), line.find(":")) if i > 0]
        if seps:
            k, v = line[: min(seps)], line[min(seps) + 1 :]
        else:
            k, _, v = line.partition(" ")
        if not k.strip():
            raise UserError(f"{where}, line {n}: {raw!r} is not `key=value`")
        out[k.strip()] = v.strip()
    return out


def _text(doc: Mapping[str, Any], key: str, src: str) -> str:
    v = doc.get(key) or ""
    if not isinstance(v, str):
        raise UserError(f"{src}: {key} must be properties text (`key=value` lines), got {type(v).__name__}")
    return v


def _kafka(doc: Mapping[str, Any], src: str) -> DriverFile:
    # OMB's Kafka driver Config, plus the two every driver file has
    allowed = {
        "name",
        "driverClass",
        "replicationFactor",
        "topicConfig",
        "commonConfig",
        "producerConfig",
        "consumerConfig",
    }
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise UserError(f"{src}: {', '.join(unknown)}: not a field of OMB's Kafka driver (allowed: {sorted(allowed)})")
    notes: list[str] = []
    common = properties(_text(doc, "commonConfig", src), f"{src}: commonConfig")
    addr = common.pop("bootstrap.servers", None)
    if addr is not None:
        notes.append(f"commonConfig bootstrap.servers={addr}: not applied: {_ADDRESS}")
    maps = []
    for section in ("producerConfig", "consumerConfig"):
        conf = {**common, **properties(_text(doc, section, src), f"{src}: {section}")}
        for java, ours in _JAVA_ONLY.items():
            if java in conf:
                v = conf.pop(java)
                if ours is None:
                    notes.append(f"{section} {java}={v}: a Java client setting librdkafka has no equivalent for")
                else:
                    conf[ours] = v
                    notes.append(f"{section} {java}={v}: librdkafka calls it {ours}")
        for k, cap in _LIBRDKAFKA_MAX.items():
            if k in conf and conf[k].isdigit() and int(conf[k]) > cap:
                notes.append(f"{section} {k}={conf[k]}: above librdkafka's maximum, {cap} is used")
                conf[k] = str(cap)
        maps.append(conf)
    rf = doc.get("replicationFactor")
    if rf is not None and (not isinstance(rf, int) or rf < 1):
        raise UserError(f"{src}: replicationFactor must be a whole number ≥ 1, got {rf!r}")
    topic = properties(_text(doc, "topicConfig", src), f"{src}: topicConfig")
    return DriverFile(src, str(doc.get("name") or "Kafka"), "kafka", rf, maps[0], maps[1], topic, tuple(notes))


def _leaves(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# field -> ("producer" | "consumer", kafkatune's key) or the reason it is not applied
_PULSAR: dict[str, tuple[str, str] | str] = {
    "client.serviceUrl": _ADDRESS,
    "client.httpUrl": _ADDRESS,
    **{
        f"client.{k}": _PULSAR_CLIENT
        for k in (
            "clientMemoryLimitMB",
            "ioThreads",
            "connectionsPerBroker",
            "maxConcurrentLookupRequests",
            "tlsAllowInsecureConnection",
            "tlsEnableHostnameVerification",
            "tlsTrustCertsFilePath",
            "authentication.plugin",
            "authentication.data",
        )
    },
    "client.namespacePrefix": "topics go to kafkatune's namespace on the target (drivers/pulsar_driver.py)",
    "client.clusterName": "topics go to kafkatune's namespace on the target (drivers/pulsar_driver.py)",
    "client.topicType": "",  # checked: persistent only
    **{
        f"client.persistence.{k}": "a namespace policy its operator sets (the testbed's standalone has one bookie)"
        for k in ("ensembleSize", "writeQuorum", "ackQuorum", "deduplicationEnabled")
    },
    "producer.batchingEnabled": ("producer", "batching"),
    "producer.batchingMaxPublishDelayMs": ("producer", "batching.max.publish.delay.ms"),
    "producer.batchingMaxBytes": ("producer", "batching.max.bytes"),
    "producer.pendingQueueSize": ("producer", "max.pending.messages"),
    "producer.blockIfQueueFull": "kafkatune's producers always wait when the queue is full (the framework counts it)",
    "consumer.receiverQueueSize": ("consumer", "receiver.queue.size"),
    "consumer.subscriptionType": ("consumer", "type"),
}
_MQTT: dict[str, tuple[str, str] | str] = {
    "client.serverUri": _ADDRESS,
    "client.username": "",  # checked: empty only (kafkatune's MQTT driver connects without credentials)
    "client.password": "",
    "client.qos": ("both", "qos"),
    "client.topicPrefix": "topics are kafkatune's own (one per run)",
    "consumer.cleanSession": "kafkatune's MQTT consumers use clean sessions",
    "consumer.sessionExpiryInterval": "an MQTT 5 setting: kafkatune's MQTT driver speaks MQTT 3.1.1",
    "consumer.sessionExpiryIntervalSeconds": "an MQTT 5 setting: kafkatune's MQTT driver speaks MQTT 3.1.1",
    "consumer.receiveMaximum": "an MQTT 5 setting: kafkatune's MQTT driver speaks MQTT 3.1.1",
}


def _structured(
    doc: Mapping[str, Any], src: str, driver: str, table: Mapping[str, tuple[str, str] | str]
) -> DriverFile:
    leaves = _leaves({k: v for k, v in doc.items() if k not in ("name", "driverClass")})
    unknown = sorted(k for k in leaves if k not in table)
    if unknown:
        raise UserError(f"{src}: {', '.join(unknown)}: not a field of OMB's {driver} driver file")
    prod: dict[str, str] = {}
    cons: dict[str, str] = {}
    notes: list[str] = []
    for k, v in leaves.items():
        if v is None or v == "":
            continue
        how = table[k]
        if k == "client.topicType" and str(v) != "persistent":
            raise UserError(f"{src}: client.topicType {v}: kafkatune's Pulsar driver uses persistent topics only")
        if k in ("client.username", "client.password"):
            raise UserError(f"{src}: {k}: kafkatune's MQTT driver connects without credentials (leave it empty)")
        if isinstance(how, str):
            if how:
                notes.append(f"{k}={v}: not applied: {how}")
            continue
        val = str(v).lower() if isinstance(v, bool) or k == "consumer.subscriptionType" else str(v)
        if k == "producer.pendingQueueSize" and val == "0":
            notes.append(f"{k}=0: not applied: 0 means the client's default")
            continue
        for side, out in (("producer", prod), ("consumer", cons)):
            if how[0] in (side, "both"):
                out[how[1]] = val
    return DriverFile(
        src, str(doc.get("name") or driver), DRIVERS[str(doc["driverClass"])], None, prod, cons, {}, tuple(notes)
    )


def load_driver_file(path: Path) -> DriverFile:
    """An OMB driver file, checked before anything touches a system (a UserError names the field)."""
    doc = read_yaml(path)
    src = str(path)
    if not isinstance(doc, dict):
        raise UserError(f"{src}: an OMB driver file is a mapping (name, driverClass, …)")
    cls = doc.get("driverClass")
    if cls not in DRIVERS:
        known = ", ".join(f"{c.rsplit('.', 1)[1]} ({d})" for c, d in DRIVERS.items())
        raise UserError(f"{src}: driverClass {cls!r}: kafkatune has a driver for {known}")
    if cls == KAFKA:
        return _kafka(doc, src)
    return _structured(doc, src, "Pulsar" if cls == PULSAR else "MQTT", _PULSAR if cls == PULSAR else _MQTT)


def with_driver_file(w: Workload, d: DriverFile) -> tuple[Workload, list[str]]:
    """`w` run with driver file `d`: its driver, its configs under the workload's own (a key the workload also
    sets keeps the workload's value, and a note says so), its replication factor unless the workload gives one."""
    notes = list(d.notes)
    data = w.model_dump(exclude_unset=True)
    data["driver"] = d.driver
    if d.replication_factor is not None and w.replicationFactor is None:
        data["replicationFactor"] = d.replication_factor
    for key, from_file in (("producerConfig", d.producer), ("consumerConfig", d.consumer), ("topicConfig", d.topic)):
        own: dict[str, ConfigValue] = dict(getattr(w, key))
        for k in sorted(set(own) & set(from_file)):
            if str(own[k]).lower() != from_file[k].lower():
                notes.append(f"{key} {k}: the workload's {own[k]} wins over the driver file's {from_file[k]}")
        data[key] = {**from_file, **own}
    return parse_workload(data, f"{d.path} with the workload"), notes
