"""Numbers as kafkatune prints them."""

from __future__ import annotations

from typing import Any


def num(v: Any, spec: str = "{:.2f}", missing: str = "–") -> str:
    """`v` formatted with `spec`, or `missing` when nothing was measured (None, NaN)."""
    if v is None or (isinstance(v, float) and v != v):
        return missing
    return spec.format(v)


def si(v: float, _pos: int | None = None) -> str:
    """Sizes in bytes as Kafka's configs count them: 1048576 → 1M, 65536 → 64K (binary units)."""
    for unit, div in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if abs(v) >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:g}"
