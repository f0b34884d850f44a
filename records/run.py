"""One measured run: `result.json` (kafkatune's typed record, records.result, beside OMB's per-second series), one
row per worker per second (`samples.parquet`) and per broker per second (`broker_metrics.parquet`), and OMB's own
result document (`omb-result.json`, records.omb).

A bench run's folder also holds the workload it ran (`workload.yaml`); a sweep's trial folder holds its
`trial.json` beside these (records.trial).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from core import files
from core.typed import to_json
from records.omb import imported_result, result_fields, write_omb
from records.result import RESULT, SCHEMA_VERSION, RunResult
from records.seconds import BrokerSecond, ClientSecond, HostSecond, Row

Rows = Sequence[Mapping[str, Any]]

SAMPLES = "samples.parquet"
BROKER_METRICS = "broker_metrics.parquet"
HOST_METRICS = "host_metrics.parquet"  # the brokers' machine each second, when they ran on this one (the testbed)
WORKLOAD = "workload.yaml"


class RunRecord(NamedTuple):
    """What one run leaves behind; built by loadgen.result, written and read only here."""

    result: RunResult
    samples: pa.Table
    brokers: pa.Table
    omb: dict[str, Any] | None = None  # OMB's TestResult of the run (records.omb), written as omb-result.json
    host: pa.Table | None = None  # cluster.hoststats rows: CPU, brokers' CPU wait, shaped links (None: not observed)
    # OMB's fields written into result.json beside the record (per-second series, aggregated latencies), for OMB's
    # tools; kafkatune reads the typed record only
    omb_fields: Mapping[str, Any] = {}

    def broker_seconds(self) -> list[BrokerSecond]:
        """The brokers' rows, typed (records.seconds)."""
        return [BrokerSecond.of(r) for r in self.brokers.to_pylist()]


def write_run(out_dir: Path, rec: RunRecord) -> None:
    """The run's files, each whole or not at all (the Parquet files through a temporary name)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = ((SAMPLES, rec.samples), (BROKER_METRICS, rec.brokers), (HOST_METRICS, rec.host))
    for name, table in ((n, t) for n, t in tables if t is not None):
        tmp = out_dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        tmp.replace(out_dir / name)
    if rec.omb is not None:
        write_omb(out_dir, rec.omb)
    write_result(out_dir, rec.result, rec.omb_fields)


def write_result(out_dir: Path, result: RunResult, omb_fields: Mapping[str, Any]) -> None:
    """result.json: OMB's fields, then the typed record's (which names the OMB aggregates it holds the same way)."""
    files.write_json(out_dir / RESULT, {"schema_version": result.schema_version, **omb_fields, **to_json(result)})


def result_document(run_dir: Path) -> dict[str, Any]:
    """A run's result.json as data (a one-line UserError when it is missing, broken or of a newer schema version)."""
    return files.read_record(run_dir / RESULT, SCHEMA_VERSION)


def read_result(run_dir: Path) -> RunResult:
    """A run's result.json, typed."""
    return RunResult.from_json(result_document(run_dir), str(run_dir / RESULT))


def has_result(run_dir: Path) -> bool:
    return (run_dir / RESULT).exists()


def has_broker_metrics(run_dir: Path) -> bool:
    """Whether the run recorded broker rates (a cluster whose exporters kafkatune does not know has none)."""
    f = run_dir / BROKER_METRICS
    return f.exists() and "bytes_in_per_s" in pq.read_schema(f).names


class Seconds(NamedTuple):
    """A run's per-second rows (records.seconds), each list empty when the run did not record it."""

    brokers: list[BrokerSecond]  # per broker per second (cluster.metrics)
    samples: list[ClientSecond]  # per worker per second (loadgen.ticker)
    host: list[HostSecond]  # the brokers' machine per second, shaped links included (cluster.hoststats)

    @classmethod
    def of(cls, brokers: Rows, samples: Rows, host: Rows) -> Seconds:
        """Typed from rows as the Parquet files hold them."""
        typed_brokers = [BrokerSecond.of(r) for r in brokers]
        return cls(typed_brokers, [ClientSecond.of(r) for r in samples], [HostSecond.of(r) for r in host])


def seconds(run_dir: Path) -> Seconds:
    """The run's per-second rows."""

    def rows(name: str) -> list[Row]:
        f = run_dir / name
        return pq.read_table(f).to_pylist() if f.exists() else []

    return Seconds.of(rows(BROKER_METRICS), rows(SAMPLES), rows(HOST_METRICS))


def sample_rows(run_dir: Path) -> int:
    """Rows in the run's per-second Parquet files (client and broker)."""
    present = [run_dir / f for f in (SAMPLES, BROKER_METRICS) if (run_dir / f).exists()]
    return sum(pq.ParquetFile(p).metadata.num_rows for p in present)


def new_run_dir(runs: Path, name: str) -> Path:
    """runs/<name>, or runs/<name>-2, -3… when that folder already holds a run."""
    d = runs / name
    i = 2
    while d.exists() and any(d.iterdir()):
        d = runs / f"{name}-{i}"
        i += 1
    return d


def copy_workload(run_dir: Path, workload_file: Path) -> None:
    """The workload file a bench run ran, kept beside its record."""
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(workload_file, run_dir / WORKLOAD)


def import_omb(run_dir: Path, doc: dict[str, Any], source: str) -> RunResult:
    """An OMB result (records.omb.read_omb) as a run folder: omb-result.json as it came, and a result.json
    whose summary kafkatune reads (no per-second Parquet files: OMB keeps 10-s windows only)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_omb(run_dir, doc)
    found = imported_result(doc, source)
    write_result(run_dir, found, result_fields(doc))
    return found
