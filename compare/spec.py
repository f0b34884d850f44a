"""The `kafkatune compare` spec: which systems, and which of the published methods to run on each.

    name: compare-demo
    systems:                      # each: a driver, where its server is, and client configs
      - {name: kafka-acks-all, driver: kafka, producerConfig: {acks: all, linger.ms: 1}}
      - {name: mqtt-qos1, driver: mqtt, producerConfig: {qos: 1}, consumerConfig: {qos: 1}}
    throughput: {sizes: {min: 8, max: 1048576}, repeats: 3, seconds: 3}     # NTU: back-to-back
    pingpong: {size: 64, messages: 1000, repeats: 3}                         # NTU: RTT/2
    native: {iperf3: true, sockperf: true, seconds: 3}                       # the floor under the harness
    fixedRate: {size: 100, rate: 50000, partitions: [1, 6, 16], seconds: 10} # OMB
    iot: {periodic: {...}, sporadic: {...}}                                  # IoT patterns

Every section is optional except `systems`; a raw-TCP baseline (driver `tcp`) runs through the same
harness unless `baseline: false`. Validated before anything starts: a bad field is one line naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.errors import UserError, validated
from core.files import read_yaml
from drivers.api import available_drivers, load_driver
from loadgen.workload import MIN_MESSAGE_BYTES, ConfigValue

Name = Annotated[str, Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9._-]+$")]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class System(_M):
    name: Name
    driver: str
    server: Literal["testbed", "mosquitto", "zenoh", "pulsar", "none"] | None = None
    common: dict[str, ConfigValue] = Field(default_factory=dict)
    producerConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    consumerConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    topicConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    # merged over producerConfig for the ping-pong only (e.g. no batching delay for one message at a time)
    pingpongProducerConfig: dict[str, ConfigValue] = Field(default_factory=dict)
    replicationFactor: Annotated[int, Field(ge=1)] | None = None

    @field_validator("driver")
    @classmethod
    def _known(cls, v: str) -> str:
        known = available_drivers()
        if v not in known:
            raise ValueError(f"unknown driver {v!r}; installed: {', '.join(known)}")
        return v

    @property
    def server_kind(self) -> str:
        """Where its server comes from when `common` does not name its address (the driver says by default)."""
        return self.server or load_driver(self.driver).local_server

    @property
    def partitioned(self) -> bool:
        return load_driver(self.driver).partitioned


class Sizes(_M):
    min: Annotated[int, Field(ge=MIN_MESSAGE_BYTES)] = 8
    max: Annotated[int, Field(ge=MIN_MESSAGE_BYTES, le=64 * 1024 * 1024)] = 1024 * 1024

    @model_validator(mode="after")
    def _order(self) -> Sizes:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self

    def values(self) -> list[int]:
        """Powers of two from min to max (min and max included when they are not powers of two)."""
        out, p = [self.min], 1
        while p <= self.min:
            p *= 2
        while p < self.max:
            out.append(p)
            p *= 2
        if self.max != self.min:
            out.append(self.max)
        return out


class Throughput(_M):
    sizes: Sizes | list[Annotated[int, Field(ge=MIN_MESSAGE_BYTES, le=64 * 1024 * 1024)]] = Sizes()
    repeats: Annotated[int, Field(ge=1, le=50)] = 3
    seconds: Annotated[float, Field(ge=1, le=600)] = 3  # measured per run
    warmupSeconds: Annotated[float, Field(ge=0, le=120)] = 1
    producers: Annotated[int, Field(ge=1, le=64)] = 1  # processes
    consumers: Annotated[int, Field(ge=1, le=64)] = 1
    trim: tuple[Annotated[float, Field(ge=0, le=50)], Annotated[float, Field(ge=50, le=100)]] = (1.0, 99.0)
    drainTimeoutSeconds: Annotated[float, Field(gt=0, le=600)] = 30

    def size_list(self) -> list[int]:
        return sorted(set(self.sizes)) if isinstance(self.sizes, list) else self.sizes.values()


class PingPong(_M):
    size: Annotated[int, Field(ge=MIN_MESSAGE_BYTES, le=1024 * 1024)] = 64
    messages: Annotated[int, Field(ge=10, le=1_000_000)] = 1000
    warmupMessages: Annotated[int, Field(ge=0, le=100_000)] = 100
    repeats: Annotated[int, Field(ge=1, le=50)] = 3
    replyTimeoutSeconds: Annotated[float, Field(gt=0, le=60)] = 5


class Native(_M):
    iperf3: bool = True
    sockperf: bool = True
    seconds: Annotated[float, Field(ge=1, le=60)] = 3


class FixedRate(_M):
    size: Annotated[int, Field(ge=16, le=1024 * 1024)] = 100
    rate: Annotated[float, Field(gt=0, le=10_000_000)] = 50_000
    partitions: list[Annotated[int, Field(ge=1, le=1000)]] = [1, 6, 16]
    seconds: Annotated[float, Field(ge=1, le=3600)] = 10
    warmupSeconds: Annotated[float, Field(ge=0, le=600)] = 2
    producers: Annotated[int, Field(ge=1, le=64)] = 1
    consumers: Annotated[int, Field(ge=1, le=64)] = 1


class Periodic(_M):
    size: Annotated[int, Field(ge=16, le=1024 * 1024)] = 64
    rates: list[Annotated[float, Field(gt=0, le=1_000_000)]] = [10, 100, 1000, 5000]
    seconds: Annotated[float, Field(ge=1, le=600)] = 5
    warmupSeconds: Annotated[float, Field(ge=0, le=60)] = 1


class Sporadic(_M):
    periodicSize: Annotated[int, Field(ge=16, le=1024 * 1024)] = 64
    periodicRate: Annotated[float, Field(gt=0, le=100_000)] = 100
    burstSize: Annotated[int, Field(ge=16, le=64 * 1024 * 1024)] = 65536
    burstRate: Annotated[float, Field(ge=0)] = 0  # 0: as fast as the system takes it
    burstStartSeconds: Annotated[float, Field(ge=1, le=600)] = 3
    burstSeconds: Annotated[float, Field(ge=1, le=600)] = 3
    seconds: Annotated[float, Field(ge=3, le=1200)] = 10  # the periodic flow's measured time

    @model_validator(mode="after")
    def _fits(self) -> Sporadic:
        if self.burstStartSeconds + self.burstSeconds > self.seconds:
            raise ValueError("burstStartSeconds + burstSeconds must end within seconds (the periodic flow)")
        return self


class Iot(_M):
    periodic: Periodic | None = Periodic()
    sporadic: Sporadic | None = Sporadic()


class CompareSpec(_M):
    name: Name = "compare"
    systems: Annotated[list[System], Field(min_length=1)]
    baseline: bool = True  # the raw-TCP run through the same harness
    throughput: Throughput | None = Throughput()
    pingpong: PingPong | None = PingPong()
    native: Native | None = Native()
    fixedRate: FixedRate | None = None
    iot: Iot | None = None

    @model_validator(mode="after")
    def _unique(self) -> CompareSpec:
        names = [s.name for s in self.systems]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"system names must be unique (repeated: {', '.join(dup)})")
        if self.baseline and "tcp" in names:
            raise ValueError("'tcp' is the name of the baseline system; rename yours or set baseline: false")
        return self

    def all_systems(self) -> list[System]:
        """The spec's systems, then the raw-TCP baseline."""
        return [*self.systems, *([System(name="tcp", driver="tcp")] if self.baseline else [])]

    def selected(self, only: Sequence[str] | None = None) -> list[System]:
        """The systems a run covers: all of them, or those named in `only` (`--system`), in spec order."""
        systems = self.all_systems()
        if not only:
            return systems
        unknown = sorted(set(only) - {s.name for s in systems})
        if unknown:
            raise UserError(
                f"--system: {', '.join(unknown)} not in the spec (systems: {', '.join(s.name for s in systems)})"
            )
        return [s for s in systems if s.name in only]


def parse(data: object, source: str = "compare spec") -> CompareSpec:
    return validated(CompareSpec, data, source, "a mapping with at least `systems`")


def load(path: Path) -> CompareSpec:
    return parse(read_yaml(path), str(path))
