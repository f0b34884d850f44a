"""A driver's producer or consumer settings as a typed record: each field names its config key, its default and,
for a choice, the values allowed. `settings(cls, conf, ...)` checks a workload's `producerConfig` or
`consumerConfig` against it and builds it, so every key a driver reads has one place that says its type and
default, and a wrong key or value is refused (naming the field and what is allowed) before anything connects.

    @dataclass(frozen=True)
    class Producer:
        qos: int = key("qos", 1, choices=("0", "1", "2"))
        max_queued: int = key("max.queued", 100000)  # no choices: a positive integer

A bool field's values are "true" and "false"; an int field without choices takes a positive integer; a str field
takes one of its choices.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from core.errors import UserError

T = TypeVar("T")
BOOL = ("true", "false")


def key(name: str, default: Any, choices: tuple[str, ...] | None = None) -> Any:
    """A settings field read from config key `name`: `default` when the key is absent."""
    return dataclasses.field(default=default, metadata={"key": name, "choices": choices})


def known(cls: type) -> list[str]:
    """The config keys `cls` reads, in its field order."""
    return [f.metadata["key"] for f in dataclasses.fields(cls)]


def settings(cls: type[T], conf: Mapping[str, str], where: str, system: str) -> T:
    """`cls` from `conf` (a workload's producerConfig or consumerConfig, `where`): each key known to `system`'s
    driver, each value of the field's kind; the field's default for a key not given."""
    hints = typing.get_type_hints(cls)
    by_key = {f.metadata["key"]: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    args: dict[str, object] = {}
    for k, v in conf.items():
        if k not in by_key:
            raise UserError(f"{where}: unknown {system} key {k!r}; known: {', '.join(known(cls))}")
        f, text = by_key[k], str(v)
        kind = hints[f.name]
        allowed = BOOL if kind is bool else f.metadata["choices"]
        if allowed and text not in allowed:
            raise UserError(f"{where}: {k} must be one of {', '.join(allowed)} (got {v!r})")
        if kind is int and not allowed and (not text.isdigit() or int(text) < 1):
            raise UserError(f"{where}: {k} must be a positive integer (got {v!r})")
        args[f.name] = text == "true" if kind is bool else int(text) if kind is int else text
    return cls(**args)
