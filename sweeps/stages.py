"""A sweep's parameter space: ranges and choices of catalogue keys, and the stages that sweep them (sweeps.spec
puts them in a spec; every value is checked against the catalogue's legal range when the spec is read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from brokerconf import catalogue

Scalar = str | int


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntRange(_Model):
    low: int
    high: int
    log: bool = False
    step: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _order(self) -> IntRange:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high})")
        if self.log and self.step not in (None, 1):
            raise ValueError("log and step cannot be combined")
        if self.log and self.low < 1:
            raise ValueError("log scale needs low ≥ 1")
        return self


class Choices(_Model):
    choices: Annotated[list[Scalar], Field(min_length=1)]


ParamSpec = IntRange | Choices | Scalar


def check_params(params: Mapping[str, ParamSpec], where: str) -> None:
    for k, v in params.items():
        if k not in catalogue.CATALOGUE:
            raise ValueError(f"{where}: unknown key {k!r} (sweepable: {', '.join(catalogue.CATALOGUE)})")
        p = catalogue.CATALOGUE[k]
        if isinstance(v, IntRange):
            if p.kind == "choice":
                raise ValueError(f"{where}.{k}: takes choices ({', '.join(p.choices)}), not a range")
            for end in (v.low, v.high):
                if (why := p.check(end)) is not None:
                    raise ValueError(f"{where}.{k}: {end} is out of range: must be {why}")
        elif isinstance(v, Choices):
            for c in v.choices:
                if (why := p.check(c if p.kind == "int" else str(c))) is not None:
                    raise ValueError(f"{where}.{k}: choice {c!r} is not allowed: must be {why}")
        else:
            if (why := p.check(v if p.kind == "int" else str(v))) is not None:
                raise ValueError(f"{where}.{k}: {v!r} is not allowed: must be {why}")


class Params(_Model):
    """A model whose `params` and `fixed` name catalogue keys with legal values (checked on validation)."""

    @field_validator("params", "fixed", mode="after", check_fields=False)
    @classmethod
    def _known(cls, v: dict[str, ParamSpec], info: ValidationInfo) -> dict[str, ParamSpec]:
        check_params(v, str(info.field_name))
        return v


class Stage(Params):
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")]
    params: Annotated[dict[str, ParamSpec], Field(min_length=1)]
    fixed: dict[str, Scalar] = Field(default_factory=dict)
    trials: Annotated[int, Field(ge=1, le=10000)]

    @model_validator(mode="after")
    def _disjoint(self) -> Stage:
        both = set(self.params) & set(self.fixed)
        if both:
            raise ValueError(f"{', '.join(sorted(both))}: both swept and fixed in stage {self.name!r}")
        return self


def bounds(values: Mapping[str, ParamSpec]) -> dict[str, tuple[int, int]]:
    """Each int key's lowest and highest value in a stage (for the catalogue's cross-key rules)."""
    out: dict[str, tuple[int, int]] = {}
    for k, v in values.items():
        if catalogue.CATALOGUE[k].kind != "int":
            continue
        if isinstance(v, IntRange):
            out[k] = (v.low, v.high)
        elif isinstance(v, Choices):
            ints = [int(c) for c in v.choices]
            out[k] = (min(ints), max(ints))
        else:
            out[k] = (int(v), int(v))
    return out
