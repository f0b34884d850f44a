"""The bench workload file: OpenMessaging Benchmark's field names plus client and topic config maps.

Validated at the edge: an unknown field, a wrong type or an out-of-range value is a `UserError` that
names the field and what is allowed, raised before anything touches a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core import paths
from core.errors import UserError, validated
from core.files import read_yaml

# The smallest payload: an 8-byte header (producer id and sequence); from 16 B it carries the send time,
# from 20 B the full header. See loadgen.payload.
MIN_MESSAGE_BYTES = 8

ConfigValue = str | int | float | bool
# Every producer and consumer is a process: more than this is refused before anything is created.
MAX_CLIENT_PROCESSES = 1024


FAULT_DRAIN_IDLE_S = 60.0  # a run with faults drains until nothing arrived this long (Workload.with_faults)


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # free text, as OMB's ("1 topic / 6 partition / 100b"); run folders and topics use its `slug`
    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")] = "bench"
    driver: str = "kafka"
    topics: Annotated[int, Field(ge=1, le=1000)] = 1
    partitionsPerTopic: Annotated[int, Field(ge=1, le=10000)] = 1
    replicationFactor: Annotated[int, Field(ge=1)] | None = None
    messageSize: Annotated[int, Field(ge=MIN_MESSAGE_BYTES, le=64 * 1024 * 1024)] = 1024
    # random: incompressible bodies; text: word soup that lz4 halves. Never one body repeated.
    payloadContent: Literal["random", "text"] = "random"
    # OMB's payloads: every message carries the bytes of `payloadFile` (exactly messageSize of them; a relative
    # path is looked up as OMB does, from the working directory, then beside the workload file and one folder
    # up, where OMB's payload/ sits), or, with useRandomizedPayloads, one of randomizedPayloadPoolSize bodies
    # whose first randomBytesRatio of the bytes are random and the rest zeros (compressible by that much). The
    # first 20 bytes (fewer below 20 B) are kafkatune's header: producer id, sequence, send time (loadgen.payload).
    payloadFile: str | None = None
    useRandomizedPayloads: bool = False
    randomBytesRatio: Annotated[float, Field(ge=0, le=1)] = 0.0
    randomizedPayloadPoolSize: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    keyDistributor: Literal["NO_KEY", "KEY_ROUND_ROBIN", "RANDOM_NANO"] = "NO_KEY"
    subscriptionsPerTopic: Annotated[int, Field(ge=0, le=100)] = 1
    consumerPerSubscription: Annotated[int, Field(ge=1, le=256)] = 1
    producersPerTopic: Annotated[int, Field(ge=1, le=256)] = 1
    # msg/s for the whole workload. As OMB: 0 = discover the highest sustainable rate (loadgen.sustainable);
    # "max" = as fast as the producers can (the max-rate throughput, kafkatune's default when left out).
    producerRate: Annotated[float, Field(ge=0)] | Literal["max"] = "max"
    # > 0: a backlog run (OMB's buildAndDrainBacklog, loadgen.backlog): consumers pause after the warm-up until
    # the subscriptions owe this many GiB, then drain it to (1 − backlogDrainRatio) of it
    consumerBacklogSizeGB: Annotated[float, Field(ge=0)] = 0
    backlogDrainRatio: Annotated[float, Field(ge=0, le=1)] = 1.0
    testDurationMinutes: Annotated[float, Field(gt=0, le=24 * 60)] = 1
    warmupDurationMinutes: Annotated[float, Field(ge=0, le=60)] = 0
    drainTimeoutSeconds: Annotated[float, Field(gt=0, le=3600)] = 120
    # kafkatune's own: the drain also ends once no message arrived for this long (what is still owed is then
    # lost). A consumer whose partition's leader failed over can wait longer than that for it (a hard bounce of
    # a leader has left a partition unread past 10 s): runs with faults wait at least FAULT_DRAIN_IDLE_S
    # (with_faults).
    drainIdleSeconds: Annotated[float, Field(gt=0, le=3600)] = 10
    # kafkatune's own: an application's processing time per message (µs), spent in each consumer's handler
    # as a sleep (I/O, not CPU). 0 = none. It makes a consumer that cannot keep up, as a slow application does.
    consumerWorkMicros: Annotated[float, Field(ge=0, le=1_000_000)] = 0
    # kafkatune's own: time every acknowledgement at max rate too. Off (the default), a max-rate producer
    # counts its acknowledgements without a Python call per message (exact counts, failures still reported one
    # by one), and its publish latency, which at max rate is the wait in the client's own full queue, is not
    # measured. On, it costs about 0.8 µs of client CPU per message (drivers/kafka.py,
    # benchmarks/producer_vs_java.py). Fixed-rate and discovery runs always time every acknowledgement.
    publishLatencyAtMaxRate: bool = False
    producerConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    consumerConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    topicConfig: dict[str, ConfigValue] = Field(default_factory=dict)

    @field_validator("producerConfig", "consumerConfig", "topicConfig")
    @classmethod
    def _no_bootstrap(cls, v: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
        for k in v:
            if k in ("bootstrap.servers", "group.id"):
                raise ValueError(f"{k!r} is set by kafkatune (use --bootstrap), not in the workload")
        return v

    @model_validator(mode="after")
    def _payload_and_backlog(self) -> Workload:
        if self.builds_backlog and self.producerRate == 0:  # OMB refuses it too
            raise ValueError(
                "consumerBacklogSizeGB with producerRate 0: a rate cannot be discovered while a backlog builds"
            )
        if self.builds_backlog and self.subscriptionsPerTopic == 0:
            raise ValueError("consumerBacklogSizeGB needs subscriptionsPerTopic ≥ 1 (a backlog is owed to consumers)")
        procs = self.topics * (self.producersPerTopic + self.subscriptionsPerTopic * self.consumerPerSubscription)
        if procs > MAX_CLIENT_PROCESSES:
            raise ValueError(
                f"topics × (producersPerTopic + subscriptionsPerTopic × consumerPerSubscription) = {procs:,} client "
                f"processes (each producer and consumer is a process of its own): at most {MAX_CLIENT_PROCESSES}"
            )
        if self.useRandomizedPayloads and self.randomizedPayloadPoolSize < 1:
            raise ValueError("randomizedPayloadPoolSize: must be ≥ 1 with useRandomizedPayloads (the bodies to send)")
        if self.payloadFile is not None and "payloadContent" in self.model_fields_set:
            raise ValueError("payloadFile and payloadContent: give one (the file's bytes are the payload)")
        return self

    @property
    def slug(self) -> str:
        """The name as a folder and topic name (core.paths.slug)."""
        return paths.slug(self.name)

    @property
    def builds_backlog(self) -> bool:
        return self.consumerBacklogSizeGB > 0

    @property
    def payload_mode(self) -> str:
        """What the messages carry, in words."""
        if self.useRandomizedPayloads:
            return (
                f"{self.randomizedPayloadPoolSize} randomized bodies ({self.randomBytesRatio:.0%} random bytes, "
                "the rest zeros)"
            )
        if self.payloadFile is not None:
            return f"the bytes of {self.payloadFile}"
        return f"{self.payloadContent} bodies"

    def with_faults(self) -> Workload:
        """This workload as a run with faults drains it: a consumer whose partition's leader failed over may wait
        long for it, so the drain waits at least FAULT_DRAIN_IDLE_S for the next message."""
        return self.model_copy(update={"drainIdleSeconds": max(self.drainIdleSeconds, FAULT_DRAIN_IDLE_S)})

    def str_map(self, which: Literal["producerConfig", "consumerConfig", "topicConfig"]) -> dict[str, str]:
        m: dict[str, ConfigValue] = getattr(self, which)
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in m.items()}

    @property
    def fixed_rate(self) -> float:
        """The fixed publish rate (msg/s, whole workload), or 0.0 for the max-rate and discovery modes."""
        return 0.0 if self.producerRate == "max" else float(self.producerRate)

    @property
    def discovers_rate(self) -> bool:
        """producerRate 0: OMB's meaning, find the highest rate the system sustains (loadgen.sustainable)."""
        return self.producerRate == 0

    @property
    def rate_label(self) -> str:
        if self.producerRate == "max":
            return "max rate"
        return "sustainable-rate discovery" if self.discovers_rate else f"{self.fixed_rate:g} msg/s"

    @property
    def test_seconds(self) -> float:
        return self.testDurationMinutes * 60

    @property
    def warmup_seconds(self) -> float:
        return self.warmupDurationMinutes * 60


def parse_workload(data: object, source: str = "workload") -> Workload:
    return validated(Workload, data, source, "a mapping of OMB workload fields", allowed=Workload.model_fields)


def load_workload(path: Path) -> Workload:
    """A workload file, its payloadFile (if any) resolved to an existing file of messageSize bytes."""
    w = parse_workload(read_yaml(path), str(path))
    if w.payloadFile is None or w.useRandomizedPayloads:  # OMB sends the randomized bodies then
        return w
    found = payload_path(w.payloadFile, path)
    size = found.stat().st_size
    if size != w.messageSize:
        raise UserError(f"{path}: payloadFile {w.payloadFile!r} has {size} bytes; messageSize is {w.messageSize}")
    return w.model_copy(update={"payloadFile": str(found)})


def payload_path(name: str, workload_file: Path) -> Path:
    """Where OMB would find `name` (the working directory), else beside the workload file or one folder up."""
    p = Path(name)
    tried = [p] if p.is_absolute() else [Path.cwd() / p, workload_file.parent / p, workload_file.parent.parent / p]
    for c in tried:
        if c.is_file():
            return c.resolve()
    raise UserError(f"{workload_file}: payloadFile {name!r} not found (looked for {', '.join(map(str, tried))})")


def with_overrides(
    w: Workload, test_minutes: float | None = None, warmup_minutes: float | None = None, backlog_gb: float | None = None
) -> Workload:
    """`w` with its test and warm-up durations and its backlog size replaced (command-line overrides: a published
    workload scaled to the machine, the file unchanged), validated as the file is."""
    data = w.model_dump(exclude_unset=True)
    for key, v in (
        ("testDurationMinutes", test_minutes),
        ("warmupDurationMinutes", warmup_minutes),
        ("consumerBacklogSizeGB", backlog_gb),
    ):
        if v is not None:
            data[key] = v
    return parse_workload(data, "--test-minutes/--warmup-minutes/--backlog-gb")
