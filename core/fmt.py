"""Numbers as kafkatune prints them."""

from __future__ import annotations

from typing import Any


def num(v: Any, spec: str = "{:.2f}", missing: str = "–") -> str:
    """`v` formatted with `spec`, or `missing` when nothing was measured (None, NaN)."""
    if v is None or (isinstance(v, float) and v != v):
        return missing
    return spec.format(v)


def latency(h: Any, key: str) -> str:
    """One percentile of a latency summary (loadgen.recorder.summary_ms) in ms, or "not measured"."""
    v = h.get(key)
    return "not measured" if v is None else f"{v:.2f}"


def latency_line(label: str, h: Any) -> str:
    """`label` p50/p99/p99.9/max in ms, or why nothing was measured: never a number that was not measured."""
    if not h.get("count"):
        return f"{label} not measured: {h.get('missing', 'no samples')}"
    return f"{label} p50 {h['p50']:.2f}  p99 {h['p99']:.2f}  p99.9 {h['p99.9']:.2f}  max {h['max']:.2f}"


def si(v: float, _pos: int | None = None) -> str:
    """Sizes in bytes as Kafka's configs count them: 1048576 → 1M, 65536 → 64K (binary units)."""
    for unit, div in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if abs(v) >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:g}"
