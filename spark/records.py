"""Read a study's (or a single bench run's) record files into one flat row per trial.

Only files are read: `trials/*/trial.json` and `result.json` (a sweep), or `result.json` and
`workload.yaml` (a `kafkatune bench` run), plus `summary.json`, `spec.yaml` and `profile.json`. The heavy
per-second Parquet files are left to Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.errors import UserError

# Latency columns taken from result.json (OMB field names), in ms.
LATENCY = {
    "publish_p50_ms": "aggregatedPublishLatency50pct",
    "publish_p99_ms": "aggregatedPublishLatency99pct",
    "publish_p999_ms": "aggregatedPublishLatency999pct",
    "publish_max_ms": "aggregatedPublishLatencyMax",
    "e2e_p50_ms": "aggregatedEndToEndLatency50pct",
    "e2e_p99_ms": "aggregatedEndToEndLatency99pct",
    "e2e_p999_ms": "aggregatedEndToEndLatency999pct",
    "e2e_max_ms": "aggregatedEndToEndLatencyMax",
}
# What a bench record calls the knobs a sweep calls params.
WORKLOAD_PARAMS = {
    "producersPerTopic": "producers",
    "consumerPerSubscription": "consumers",
    "partitionsPerTopic": "partitions",
}


@dataclass(frozen=True)
class Study:
    root: Path
    name: str
    kind: str  # "sweep" | "bench"
    trial_dirs: list[Path]
    objectives: list[str]
    profile: dict[str, Any] | None
    rf: int
    synthetic: bool


def _json(p: Path) -> dict[str, Any]:
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{p}: not a readable JSON record ({e})") from None
    if not isinstance(d, dict):
        raise UserError(f"{p}: expected a JSON object")
    return d


def _yaml(p: Path) -> dict[str, Any]:
    if not p.exists():
        return {}
    d = yaml.safe_load(p.read_text())
    return d if isinstance(d, dict) else {}


def open_study(root: Path) -> Study:
    """A sweep folder (runs/<study>/ with trials/) or a bench run folder (runs/<name>/ with result.json)."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: no such study folder (expected runs/<study>/ from `kafkatune sweep` or `bench`)")
    summary = _json(root / "summary.json") if (root / "summary.json").exists() else {}
    spec = _yaml(root / "spec.yaml")
    if (root / "trials").is_dir():
        dirs = sorted(p.parent for p in (root / "trials").glob("*/result.json"))
        failed = sorted(
            p.parent for p in (root / "trials").glob("*/trial.json") if not (p.parent / "result.json").exists()
        )
        kind = "sweep"
        dirs = sorted(set(dirs) | set(failed))
        wl = spec.get("workload") or {}
    elif (root / "result.json").exists():
        dirs, kind = [root], "bench"
        wl = _yaml(root / "workload.yaml")
    else:
        raise UserError(f"{root}: neither trials/*/result.json (a sweep) nor result.json (a bench run) is there")
    if not dirs:
        raise UserError(f"{root}/trials: no trial records yet")
    profile = _json(root / "profile.json") if (root / "profile.json").exists() else None
    if profile is None:  # older studies: each result.json carries the profile
        for d in dirs:
            if (d / "result.json").exists():
                profile = _json(d / "result.json").get("profile")
                break
    return Study(
        root=root,
        name=str(summary.get("study") or spec.get("name") or wl.get("name") or root.name),
        kind=kind,
        trial_dirs=dirs,
        objectives=list(summary.get("objectives") or spec.get("objectives") or ["throughput_mb_s"]),
        profile=profile,
        rf=int(wl.get("replicationFactor") or 3),
        synthetic=bool(summary.get("synthetic")),
    )


def _merged_broker(read_back: dict[str, dict[str, Any]]) -> dict[str, str]:
    """One value per broker key: the common value, or `mixed(a|b)` when brokers differ."""
    keys = sorted({k for per in read_back.values() for k in per})
    out: dict[str, str] = {}
    for k in keys:
        vals = {str(per.get(k)) for per in read_back.values()}
        out[k] = vals.pop() if len(vals) == 1 else "mixed(" + "|".join(sorted(vals)) + ")"
    return out


def trial_row(study: Study, d: Path) -> dict[str, Any]:
    tj = _json(d / "trial.json") if (d / "trial.json").exists() else {}
    res = _json(d / "result.json") if (d / "result.json").exists() else {}
    summ = res.get("summary") or {}
    measured = tj.get("measured") or {}
    if tj:
        config = {k: str(v) for k, v in (tj.get("config") or {}).items()}
        broker = _merged_broker(tj.get("broker_read_back") or {})
        state = tj.get("state") or "complete"
        mb_s = measured.get("throughput_mb_s")
        windows = measured.get("windows_mb_s") or []
    else:  # a bench run: its knobs are its producer/consumer/topic configs and its workload counts
        config = {k: str(v) for k, v in (res.get("producerConfig") or {}).items()}
        config.update({k: str(v) for k, v in (res.get("consumerConfig") or {}).items()})
        broker = _merged_broker(res.get("brokerConfig") or {})
        state = "complete" if res else "failed"
        mb_s = summ.get("consume_mb_s")
        windows = []
    for src, name in WORKLOAD_PARAMS.items():  # the record's counts, whether swept or not
        if res.get(src) is not None:
            config.setdefault(name, str(res[src]))
    config.setdefault("acks", str((res.get("producerConfig") or {}).get("acks", "all")))
    rates = summ.get("broker_rates") or {}
    client = summ.get("client") or {}
    row: dict[str, Any] = {
        "trial_id": d.name,
        "stage": str(tj.get("stage") or study.kind),
        "number": int(tj.get("number") or 0),
        # the confirmation phase's re-run of Kafka's defaults is a defaults baseline too
        "baseline": tj.get("baseline")
        or (str(tj["confirms"]).split(":", 1)[1] if str(tj.get("confirms", "")).startswith("baseline:") else None),
        "state": state,
        "fail_reason": tj.get("fail_reason"),
        "started_ns": int(tj.get("started_ns") or res.get("started_ns") or 0),
        "config": config,
        "broker": broker,
        "message_bytes": int(res.get("messageSize") or 0),
        "mb_s": float(mb_s) if mb_s is not None else None,
        "windows_mb_s": [float(x) for x in windows],
        "publish_mb_s": summ.get("publish_mb_s"),
        "lost": int(summ["lost"]) if summ.get("lost") is not None else None,
        "client_bound": bool(measured.get("client_bound", summ.get("client_bound", False))),
        "buffer_full_events": int(client.get("buffer_full_events") or 0),
        "machine_cpu_percent": client.get("machine_cpu_percent"),
        "warnings": list(summ.get("warnings") or measured.get("warnings") or []),
        "record_produce_mb_s": rates.get("produce_mb_s"),
    }
    for col, field in LATENCY.items():
        v = res.get(field)
        row[col] = float(v) if isinstance(v, int | float) else None
    return row


def trial_rows(study: Study) -> list[dict[str, Any]]:
    return [trial_row(study, d) for d in study.trial_dirs]
