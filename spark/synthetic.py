"""A generated study in the record format, for the analysis's scale benchmark and tests.

It is marked `synthetic: true` in summary.json (and the analysis carries the flag), so it can never be
mistaken for a measurement. The throughput of each trial follows a planted response (best at
batch.size 256 KiB; num.replica.fetchers that are multiples of 3 cost 10 %; linger.ms almost flat), so a
test can check that the analysis recovers it from the per-second rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

BATCH_SIZES = [16384, 32768, 65536, 131072, 262144, 524288, 1048576]
BEST_BATCH = 262144
NIC_MB_S = 100.0
PEAK_MB_S = 60.0
BROKERS = 3


def planted_mb_s(batch: int, linger: int, fetchers: int) -> float:
    g = 1 - 0.12 * abs(math.log2(batch / BEST_BATCH))
    f = 0.9 if fetchers % BROKERS == 0 else 1.0
    return PEAK_MB_S * g * f * (1 + 0.002 * linger)


def generate(root: Path, *, trials: int = 100, samples: int = 10_000_000, seed: int = 7, workers: int = 50) -> Path:
    """Write a study with `trials` trials and about `samples` per-second client rows in total."""
    rng = np.random.default_rng(seed)
    root = Path(root)
    (root / "trials").mkdir(parents=True, exist_ok=True)
    per_trial = max(workers, samples // trials)
    seconds = max(4, per_trial // workers)
    warm = max(1, seconds // 10)
    json.dump(
        {"schema_version": 1, "study": root.name, "synthetic": True, "objectives": ["throughput_mb_s", "p99_e2e_ms"]},
        (root / "summary.json").open("w"),
    )
    (root / "spec.yaml").write_text(
        yaml.safe_dump({"name": root.name, "workload": {"messageSize": 1024, "replicationFactor": 3}})
    )
    profile = {
        "schema_version": 1,
        "synthetic": True,
        "brokers": [{"id": i + 1} for i in range(BROKERS)],
        "network": {"mode": "synthetic", "shaped": True, "nic_mb_s_measured": NIC_MB_S},
        "disk": {"write_mb_s_measured": 400.0, "fsync_per_s": 2000.0},
    }
    json.dump(profile, (root / "profile.json").open("w"))
    n_prod = workers // 2
    roles = np.array(["producer"] * n_prod + ["consumer"] * (workers - n_prod))
    for i in range(trials):
        batch = int(rng.choice(BATCH_SIZES))
        linger = int(rng.integers(0, 51))
        fetchers = int(rng.integers(1, 7))
        mb_s = planted_mb_s(batch, linger, fetchers)
        d = root / "trials" / f"search-{i:03d}"
        d.mkdir(exist_ok=True)
        config: dict[str, Any] = {"batch.size": batch, "linger.ms": linger, "acks": "all", "partitions": 6}
        broker = {
            "num.replica.fetchers": fetchers,
            "num.io.threads": 8,
            "log.flush.interval.messages": 9223372036854775807,
        }
        e2e_p99 = 20 + batch / 16384 + rng.normal(0, 1)
        trial = {
            "schema_version": 1,
            "study": root.name,
            "stage": "search",
            "number": i,
            "started_ns": 1_800_000_000_000_000_000 + i * 10**9,
            "baseline": None,
            "config": {**config, "num.replica.fetchers": fetchers},
            "broker_read_back": {str(b + 1): broker for b in range(BROKERS)},
            "measured": {"throughput_mb_s": mb_s, "windows_mb_s": [mb_s * 0.99, mb_s * 1.01], "lost": 0},
            "state": "complete",
            "fail_reason": None,
        }
        (d / "trial.json").write_text(json.dumps(trial))
        result = {
            "schema_version": 1,
            "messageSize": 1024,
            "partitionsPerTopic": 6,
            "producersPerTopic": n_prod,
            "consumersPerTopic": workers - n_prod,
            "aggregatedPublishLatency50pct": e2e_p99 / 4,
            "aggregatedPublishLatency99pct": e2e_p99 * 0.9,
            "aggregatedPublishLatency999pct": e2e_p99 * 1.5,
            "aggregatedPublishLatencyMax": e2e_p99 * 3,
            "aggregatedEndToEndLatency50pct": e2e_p99 / 3,
            "aggregatedEndToEndLatency99pct": e2e_p99,
            "aggregatedEndToEndLatency999pct": e2e_p99 * 1.6,
            "aggregatedEndToEndLatencyMax": e2e_p99 * 3,
            "producerConfig": {"acks": "all", "batch.size": batch, "linger.ms": linger},
            "summary": {"publish_mb_s": mb_s, "consume_mb_s": mb_s, "lost": 0, "client_bound": False, "warnings": []},
        }
        (d / "result.json").write_text(json.dumps(result))
        sec = np.repeat(np.arange(seconds), workers)
        role = np.tile(roles, seconds)
        worker = np.tile(np.concatenate([np.arange(n_prod), np.arange(workers - n_prod)]), seconds)
        per_worker = mb_s * 1e6 / np.where(role == "producer", n_prod, workers - n_prod)
        by = (per_worker * rng.normal(1.0, 0.01, len(sec))).astype(np.int64)
        phase = np.where(sec < warm, "warmup", "measure")
        lat = rng.gamma(2.0, e2e_p99 / 6, len(sec))
        pq.write_table(
            pa.table(
                {
                    "role": role,
                    "worker": worker.astype(np.int64),
                    "second": sec.astype(np.int64),
                    "phase": phase,
                    "msgs": by // 1024,
                    "sent": np.where(role == "producer", by // 1024, 0),
                    "bytes": by,
                    "errors": np.zeros(len(sec), dtype=np.int64),
                    "buffer_full": np.zeros(len(sec), dtype=np.int64),
                    "latency_p50_ms": lat / 2,
                    "latency_p99_ms": lat,
                    "latency_max_ms": lat * 2,
                    "thread_cpu_s": np.full(len(sec), 0.2),
                    "process_cpu_s": np.full(len(sec), 0.3),
                }
            ),
            d / "samples.parquet",
        )
        bsec = np.repeat(np.arange(seconds), BROKERS)
        share = mb_s * 1e6 / BROKERS
        n = len(bsec)
        pq.write_table(
            pa.table(
                {
                    "broker_id": np.tile(np.arange(1, BROKERS + 1), seconds).astype(np.int64),
                    "t_ns": (bsec * 10**9).astype(np.int64),
                    "interval_s": np.ones(n),
                    "bytes_in_per_s": np.full(n, share),
                    "bytes_out_per_s": np.full(n, share),
                    "replication_bytes_in_per_s": np.full(n, 2 * share),
                    "replication_bytes_out_per_s": np.full(n, 2 * share),
                    "messages_in_per_s": np.full(n, share / 1024),
                    "process_cpu_load": np.full(n, 0.3),
                    "active_controller": np.zeros(n),
                    "network_processor_idle": np.full(n, 0.8),
                    "request_handler_idle": np.full(n, 0.7),
                    "under_replicated": np.zeros(n),
                    "second": bsec.astype(np.int64),
                    "phase": np.where(bsec < warm, "warmup", "measure"),
                }
            ),
            d / "broker_metrics.parquet",
        )
    return root
