"""Frozen dataclasses to and from JSON, following their type hints: the one edge between a record kafkatune keeps
and its file (records/), so readers get attributes and dicts stay at the JSON edge.

`from_json(cls, doc)` builds `cls` from a mapping: nested dataclasses, `X | None`, `tuple[X, ...]`, `list[X]`
and `Mapping[str, X]` are followed; keys the class does not know are left out (a newer writer's extra fields);
a missing field takes its default, and so does a null one whose type does not admit None (writers put null where
they had nothing); one without a default is refused naming it. A field whose JSON name is not
a Python name (`from`) says so in its metadata: `field(metadata={"json": "from"})`. `to_json(obj)` is the
inverse, tuples written as lists.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from core.errors import UserError

T = TypeVar("T")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The class's resolved type hints (once per class: resolving them evaluates every annotation)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def json_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("json", f.name))


def from_json(cls: type[T], doc: Mapping[str, Any], where: str = "") -> T:
    """`cls` (a dataclass) from its JSON document; `where` names the document in an error."""
    if not isinstance(doc, Mapping):
        raise UserError(f"{where or cls.__name__}: expected an object, found {type(doc).__name__}")
    hints, args = _hints(cls), {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = json_name(f)
        defaulted = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name in doc and (doc[name] is not None or _optional(hints[f.name]) or not defaulted):
            args[f.name] = _value(hints[f.name], doc[name], f"{where}.{name}" if where else name)
        elif not defaulted:
            raise UserError(f"{where or cls.__name__}: lacks {name}")
    return cls(**args)


def _optional(hint: Any) -> bool:
    """Whether `hint` admits None (`X | None`, Optional[X], Any)."""
    if hint is Any:
        return True
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _value(hint: Any, v: Any, where: str) -> Any:
    """`v` as the type `hint` says: dataclasses built, sequences made tuples or lists, mappings followed."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if v is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _value(inner[0], v, where) if len(inner) == 1 else v
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_json(hint, v, where)
    if origin is tuple and v is not None:
        return tuple(_value(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
    if origin is list and v is not None:
        return [_value(args[0], x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin in (Mapping, dict) and v is not None and len(args) == 2:
        return {k: _value(args[1], x, f"{where}.{k}") for k, x in v.items()}
    return v


def to_json(obj: Any) -> Any:
    """A dataclass (or what it holds) as JSON data, with each field under its JSON name."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {json_name(f): to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [to_json(x) for x in obj]
    if isinstance(obj, Mapping):
        return {k: to_json(x) for k, x in obj.items()}
    return obj
