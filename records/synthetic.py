"""A generated study in the record format, for the analysis's scale benchmark and tests.

It is marked `synthetic: true` in summary.json (and the analysis carries the flag), so it can never be
mistaken for a measurement. The throughput of each trial follows a planted response (best at
batch.size 256 KiB; num.replica.fetchers that are multiples of 3 cost 10 %; linger.ms almost flat), so a
test can check that the analysis recovers it from the per-second rows.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

from records.profile import PROFILE, ClusterProfile, ProfileBroker, write_profile
from records.result import RunResult
from records.run import SCHEMA_VERSION as RUN_SCHEMA_VERSION
from records.run import RunRecord, write_run
from records.study import trial_dir, write_spec_copy
from records.summary import Summary, write_summary
from records.trial import TrialRecord, write_trial

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
    seconds = max(4, max(workers, samples // trials) // workers)
    write_summary(root, Summary(root.name, synthetic=True, objectives=("throughput_mb_s", "p99_e2e_ms")))
    write_spec_copy(
        root, yaml.safe_dump({"name": root.name, "workload": {"messageSize": 1024, "replicationFactor": 3}})
    )
    profile = ClusterProfile(
        source="synthetic",
        brokers=tuple(ProfileBroker(i + 1) for i in range(BROKERS)),
        bootstrap_servers=None,
        network={"mode": "synthetic", "shaped": True, "nic_mb_s_measured": NIC_MB_S},
        disk={"write_mb_s_measured": 400.0, "fsync_per_s": 2000.0},
    )
    write_profile(root / PROFILE, profile)
    for i in range(trials):
        _trial(root, i, rng, seconds, workers)
    return root


def _trial(root: Path, i: int, rng: np.random.Generator, seconds: int, workers: int) -> None:
    batch = int(rng.choice(BATCH_SIZES))
    linger = int(rng.integers(0, 51))
    fetchers = int(rng.integers(1, 7))
    mb_s = planted_mb_s(batch, linger, fetchers)
    d = trial_dir(root, "search", i)
    config: dict[str, int | str] = {"batch.size": batch, "linger.ms": linger, "acks": "all", "partitions": 6}
    broker: dict[str, str | None] = {  # as brokers report them: strings
        "num.replica.fetchers": str(fetchers),
        "num.io.threads": "8",
        "log.flush.interval.messages": "9223372036854775807",
    }
    e2e_p99 = 20 + batch / 16384 + rng.normal(0, 1)
    trial = TrialRecord(
        study=root.name,
        stage="search",
        number=i,
        started_ns=1_800_000_000_000_000_000 + i * 10**9,
        config={**config, "num.replica.fetchers": fetchers},
        applied={},
        broker_read_back={str(b + 1): broker for b in range(BROKERS)},
        measured={"throughput_mb_s": mb_s, "windows_mb_s": [mb_s * 0.99, mb_s * 1.01], "lost": 0},
        state="complete",
        total_s=0.0,
    )
    write_trial(d, trial)
    n_prod = workers // 2
    result = {
        "schema_version": RUN_SCHEMA_VERSION,
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
    samples = _samples(rng, mb_s, e2e_p99, seconds, workers)
    write_run(d, RunRecord(RunResult.from_json(result, str(d)), samples, _brokers(mb_s, seconds)))


def _warm(seconds: int) -> int:
    return max(1, seconds // 10)


def _samples(rng: np.random.Generator, mb_s: float, e2e_p99: float, seconds: int, workers: int) -> pa.Table:
    n_prod = workers // 2
    roles = np.array(["producer"] * n_prod + ["consumer"] * (workers - n_prod))
    sec = np.repeat(np.arange(seconds), workers)
    role = np.tile(roles, seconds)
    worker = np.tile(np.concatenate([np.arange(n_prod), np.arange(workers - n_prod)]), seconds)
    per_worker = mb_s * 1e6 / np.where(role == "producer", n_prod, workers - n_prod)
    by = (per_worker * rng.normal(1.0, 0.01, len(sec))).astype(np.int64)
    lat = rng.gamma(2.0, e2e_p99 / 6, len(sec))
    return pa.table(
        {
            "role": role,
            "worker": worker.astype(np.int64),
            "second": sec.astype(np.int64),
            "phase": np.where(sec < _warm(seconds), "warmup", "measure"),
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
    )


def _brokers(mb_s: float, seconds: int) -> pa.Table:
    bsec = np.repeat(np.arange(seconds), BROKERS)
    share = mb_s * 1e6 / BROKERS
    n = len(bsec)
    return pa.table(
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
            "phase": np.where(bsec < _warm(seconds), "warmup", "measure"),
        }
    )
