"""core.typed: a record from its JSON by its type hints; a null where the type admits none takes the default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from core.errors import UserError
from core.typed import from_json, to_json


@dataclass(frozen=True)
class Inner:
    n: int = 0


@dataclass(frozen=True)
class Doc:
    name: str
    rates: Mapping[str, float] = field(default_factory=dict)
    inner: Inner = Inner()
    maybe: float | None = 1.5
    items: tuple[Inner, ...] = ()


def test_a_null_takes_the_default_unless_the_type_admits_none() -> None:
    d = from_json(Doc, {"name": "a", "rates": None, "inner": None, "maybe": None, "items": None, "extra": 1})
    assert d == Doc("a", {}, Inner(), None, ())  # writers put null where they had nothing
    assert from_json(Doc, {"name": "b", "rates": {"x": 2.0}, "items": [{"n": 3}]}) == Doc(
        "b", {"x": 2.0}, items=(Inner(3),)
    )


def test_a_required_field_is_refused_by_name_when_missing_and_kept_when_null() -> None:
    with pytest.raises(UserError, match=r"result\.json: lacks name"):
        from_json(Doc, {}, "result.json")
    assert from_json(Doc, {"name": None}).name is None  # an older record's null stays what it was


def test_to_json_is_the_inverse() -> None:
    d = Doc("c", {"x": 1.0}, Inner(2), None, (Inner(4),))
    assert from_json(Doc, to_json(d)) == d
