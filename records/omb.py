"""OpenMessaging Benchmark's result document (`omb-result.json`): OMB's `TestResult`, field for field.

The field list is OMB's `benchmark-framework/.../TestResult.java` (openmessaging/benchmark, commit 8559989).
Every list holds one value per window of `WINDOW_S` seconds of the measured phase (OMB collects its
statistics every 10 s, and its `bin/create_charts.py` plots window i at 10·i seconds). Units, as OMB's:

    publishRate, publishErrorRate, consumeRate       msg/s (err/s)
    backlog                                          messages (subscriptions × sent − received, cumulative)
    publishLatency*, endToEndLatency*                ms
    publishDelayLatency*                             µs (Avg a double, the percentiles whole µs)
    aggregated*Quantiles                             {percentile: value}, in the unit of the same latency

A value kafkatune did not measure (no send time in a payload under 16 B, no schedule to be late against at
the maximum rate, a window in which nothing arrived) is `null`, never a 0 that reads as a measurement:
OMB's own reader (Jackson) takes `null` in a list as a missing value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from core import files
from core.errors import UserError
from core.typed import from_json
from core.units import MB
from records.result import Latency, RunResult, RunSummary

OMB_RESULT = "omb-result.json"
WINDOW_S = 10
PCTS = ("50pct", "75pct", "95pct", "99pct", "999pct", "9999pct")

# name -> kind: "str", "int", "float" (number or null), "list[float]", "list[int]", "map[float]", "map[int]"
FIELDS: dict[str, str] = {
    "workload": "str",
    "driver": "str",
    "messageSize": "int",
    "topics": "int",
    "partitions": "int",
    "producersPerTopic": "int",
    "consumersPerTopic": "int",
    "publishRate": "list[float]",
    "publishErrorRate": "list[float]",
    "consumeRate": "list[float]",
    "backlog": "list[int]",
}
for _prefix in ("publishLatency", "publishDelayLatency", "endToEndLatency"):
    _int = _prefix == "publishDelayLatency"  # OMB keeps publish delay percentiles as whole µs (List<Long>)
    FIELDS[f"{_prefix}Avg"] = "list[float]"
    for _p in (*PCTS, "Max"):
        FIELDS[f"{_prefix}{_p}"] = "list[int]" if _int else "list[float]"
for _prefix in ("aggregatedPublishLatency", "aggregatedPublishDelayLatency", "aggregatedEndToEndLatency"):
    _int = _prefix == "aggregatedPublishDelayLatency"
    FIELDS[f"{_prefix}Avg"] = "float"
    for _p in (*PCTS, "Max"):
        FIELDS[f"{_prefix}{_p}"] = "int" if _int else "float"
    FIELDS[f"{_prefix}Quantiles"] = "map[int]" if _int else "map[float]"


def _is(kind: str, v: Any) -> bool:
    num = (int, float)
    if kind == "str":
        return isinstance(v, str)
    if kind == "int":
        return v is None or (isinstance(v, int) and not isinstance(v, bool))
    if kind == "float":
        return v is None or (isinstance(v, num) and not isinstance(v, bool))
    if kind.startswith("list["):
        return isinstance(v, list) and all(_is(kind[5:-1], x) for x in v)
    if kind.startswith("map["):
        if not isinstance(v, dict):
            return False
        try:
            [float(k) for k in v]
        except ValueError:
            return False
        return all(_is(kind[4:-1], x) for x in v.values())
    raise ValueError(kind)


def problems(doc: Any) -> list[str]:
    """What keeps `doc` from being an OMB TestResult: missing fields and fields of the wrong type."""
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    out = [f"{k}: missing (OMB's TestResult has it: {kind})" for k, kind in FIELDS.items() if k not in doc]
    out += [
        f"{k}: expected {FIELDS[k]}, got {type(doc[k]).__name__}"
        for k in FIELDS
        if k in doc and not _is(FIELDS[k], doc[k])
    ]
    return out


def read_omb(path: Path) -> dict[str, Any]:
    """An OMB result file, checked field by field (a UserError names every field that is wrong)."""
    doc = files.read_json_object(path)
    bad = problems(doc)
    if bad:
        shown = "; ".join(bad[:6]) + (f"; and {len(bad) - 6} more" if len(bad) > 6 else "")
        raise UserError(f"{path}: not an OpenMessaging Benchmark result: {shown}")
    return doc


def write_omb(run_dir: Path, doc: dict[str, Any]) -> None:
    files.write_json(run_dir / OMB_RESULT, doc)


def windows(doc: dict[str, Any]) -> int:
    """How many windows the document holds."""
    return len(doc.get("publishRate") or [])


# kafkatune's latency figures (records.result.Latency, by JSON name) and the OMB aggregated field of each
_SUMMARY_KEYS = {
    "mean": "Avg",
    "p50": "50pct",
    "p75": "75pct",
    "p95": "95pct",
    "p99": "99pct",
    "p99.9": "999pct",
    "p99.99": "9999pct",
    "max": "Max",
}


def _latency_summary(doc: dict[str, Any], prefix: str, scale: float) -> Latency:
    found = {
        key: v * scale
        for key, suffix in _SUMMARY_KEYS.items()
        if isinstance(v := doc.get(f"{prefix}{suffix}"), int | float)
    }
    missing = None if "p99" in found else "not in the OpenMessaging Benchmark result"
    return from_json(Latency, {**found, "missing": missing}, prefix)


def _mean(xs: list[Any]) -> float | None:
    vals = [float(x) for x in xs if isinstance(x, int | float)]
    return sum(vals) / len(vals) if vals else None


def result_fields(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """OMB's fields as an imported run's result.json keeps them: all but `backlog`, OMB's per-window series, a name
    result.json gives a backlog run's parts (records.result.BacklogParts); omb-result.json keeps the series."""
    return {k: v for k, v in doc.items() if k != "backlog"}


def imported_result(doc: dict[str, Any], source: str) -> RunResult:
    """The record of an OMB result `doc` (read from `source`): what kafkatune reads of OMB's fields, and a summary
    derived from them. Rates are the mean of the windows; what OMB does not record (loss and duplicate counts,
    broker metrics, per-second samples, p90) is None and said in `warnings`."""
    size = int(doc["messageSize"])
    pub, con = _mean(doc["publishRate"]), _mean(doc["consumeRate"])
    summary = RunSummary(
        window_s=WINDOW_S * windows(doc),
        mode="omb-import",
        publish_msg_s=pub,
        publish_mb_s=pub * size / MB if pub is not None else None,
        consume_msg_s=con,
        consume_mb_s=con * size / MB if con is not None else None,
        publish_error_rate=_mean(doc["publishErrorRate"]),
        latency_measured=doc.get("aggregatedPublishLatency99pct") is not None,
        publish_latency_ms=_latency_summary(doc, "aggregatedPublishLatency", 1.0),
        publish_delay_ms=_latency_summary(doc, "aggregatedPublishDelayLatency", 1e-3),
        end_to_end_latency_ms=_latency_summary(doc, "aggregatedEndToEndLatency", 1.0),
        warnings=(
            f"imported from an OpenMessaging Benchmark result ({source}): {windows(doc)} windows of {WINDOW_S} s; "
            "OMB records no loss count, broker metrics or per-second samples, so none is shown",
        ),
    )
    return replace(RunResult.from_json(result_fields(doc), source), summary=summary, imported_from=source)
