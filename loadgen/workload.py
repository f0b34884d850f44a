"""The bench workload file: OpenMessaging Benchmark's field names plus client and topic config maps.

Validated at the edge: an unknown field, a wrong type or an out-of-range value is a `UserError` that
names the field and what is allowed, raised before anything touches a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.errors import validated
from core.files import read_yaml

# The smallest payload: an 8-byte header (producer id and sequence); from 16 B it carries the send time,
# from 20 B the full header. See loadgen.payload.
MIN_MESSAGE_BYTES = 8

ConfigValue = str | int | float | bool


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")] = "bench"
    driver: str = "kafka"
    topics: Annotated[int, Field(ge=1, le=1000)] = 1
    partitionsPerTopic: Annotated[int, Field(ge=1, le=10000)] = 1
    replicationFactor: Annotated[int, Field(ge=1)] | None = None
    messageSize: Annotated[int, Field(ge=MIN_MESSAGE_BYTES, le=64 * 1024 * 1024)] = 1024
    # random: incompressible bodies; text: word soup that lz4 halves. Never one body repeated.
    payloadContent: Literal["random", "text"] = "random"
    keyDistributor: Literal["NO_KEY", "KEY_ROUND_ROBIN", "RANDOM_NANO"] = "NO_KEY"
    subscriptionsPerTopic: Annotated[int, Field(ge=0, le=100)] = 1
    consumerPerSubscription: Annotated[int, Field(ge=1, le=256)] = 1
    producersPerTopic: Annotated[int, Field(ge=1, le=256)] = 1
    # msg/s for the whole workload. As OMB: 0 = discover the highest sustainable rate (loadgen.sustainable);
    # "max" = as fast as the producers can (the max-rate throughput, kafkatune's default when left out).
    producerRate: Annotated[float, Field(ge=0)] | Literal["max"] = "max"
    consumerBacklogSizeGB: Annotated[float, Field(ge=0, le=0)] = 0  # backlog runs: not supported yet
    testDurationMinutes: Annotated[float, Field(gt=0, le=24 * 60)] = 1
    warmupDurationMinutes: Annotated[float, Field(ge=0, le=60)] = 0
    drainTimeoutSeconds: Annotated[float, Field(gt=0, le=3600)] = 120
    # kafkatune's own: an application's processing time per message (µs), spent in each consumer's handler
    # as a sleep (I/O, not CPU). 0 = none. It makes a consumer that cannot keep up, as a slow application does.
    consumerWorkMicros: Annotated[float, Field(ge=0, le=1_000_000)] = 0
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
    return parse_workload(read_yaml(path), str(path))
