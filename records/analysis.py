"""The analysis of a study: Parquet tables and a summary in `runs/<study>/analysis/`.

    trials.parquet      one row per trial (records.trialrow.TrialRow)
    params.parquet      per stage, per swept parameter, per value (or quantile bin)
    importance.parquet  per stage, per parameter: Optuna's PED-ANOVA importance
    pareto.parquet      the non-dominated trials over the study's objectives
    series.parquet      per trial, per second: client and broker rates, latency p99, idle, under-replicated
    summary.json        schema_version, row counts, the tables' paths, the Spark that wrote them

Spark's own writer puts the tables where `table_path` says (a job may run on a cluster, so the files are
written by Spark, not by this process); reading them back for the advisor and reports happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import files
from core.typed import from_json, to_json
from records.trialrow import TrialRow, missing, spark_schema

SCHEMA_VERSION = 1
ANALYSIS = "analysis"
SUMMARY = "summary.json"
TABLES = ("trials", "params", "importance", "pareto", "series")

TRIAL_FIELDS: list[tuple[str, str]] = spark_schema()  # the columns of trials.parquet: records.trialrow.TrialRow
IMPORTANCE_FIELDS = "stage string, param string, importance double, evaluator string, n_trials long"


def analysis_dir(study_root: Path) -> Path:
    return study_root / ANALYSIS


def table_path(analysis: Path, name: str) -> Path:
    assert name in TABLES, name
    return analysis / f"{name}.parquet"


def has_table(analysis: Path, name: str) -> bool:
    return table_path(analysis, name).exists()


def load_table(analysis: Path, name: str) -> pd.DataFrame:
    """A table the job wrote, as a pandas DataFrame for the advisor and the reports (no Spark needed): maps
    as dicts, arrays as lists; a missing trials table is an empty frame with its columns."""
    p = table_path(Path(analysis), name)
    if not p.exists():
        return pd.DataFrame(columns=[n for n, _ in TRIAL_FIELDS] if name == "trials" else [])
    t = pq.read_table(p)
    df = t.to_pandas(maps_as_pydicts="strict")
    for f in t.schema:
        if pa.types.is_list(f.type):
            df[f.name] = df[f.name].map(lambda v: None if v is None else list(v))
    return df


def rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts with missing values as None (NaN read back as None), for judging one row at a time."""
    if df.empty:
        return []
    return [{str(k): (None if missing(v) else v) for k, v in r.items()} for r in df.to_dict("records")]


def trial_rows(df: pd.DataFrame) -> list[TrialRow]:
    """The rows of a trials table (or a part of one), typed."""
    return [TrialRow.of(r) for r in rows(df)]


@dataclass(frozen=True)
class ParamValue:
    """One row of params.parquet: one value (or quantile bin) of one swept parameter in one stage, and the search
    trials that ran with it."""

    stage: str
    param: str
    value: str
    value_num: float | None  # None: not a number (compression.type, acks)
    trials: int
    mean_mb_s: float
    trial_ids: tuple[str, ...] = ()
    binned: bool = False  # `value` is a quantile bin of a parameter that took many values
    median_mb_s: float | None = None
    max_mb_s: float | None = None
    min_mb_s: float | None = None
    mean_e2e_p99_ms: float | None = None
    effect: float | None = None  # mean / the stage's mean - 1
    best_value: bool = False
    stage_mean_mb_s: float | None = None


def param_values(df: pd.DataFrame) -> list[ParamValue]:
    """The rows of a params table (or a part of one), typed."""
    return [from_json(ParamValue, r, "params.parquet") for r in rows(df)]


def trial_row(s: pd.Series | None) -> TrialRow | None:
    """One row of a trials table, typed."""
    return None if s is None else TrialRow.of({str(k): v for k, v in s.to_dict().items()})


def write_summary(analysis: Path, summary: AnalysisSummary) -> None:
    """Write the analysis summary, whole or not at all."""
    files.write_json(analysis / SUMMARY, to_json(summary))


@dataclass(frozen=True)
class AnalysisSummary:
    """`analyze`'s summary.json in the analysis folder: the study it read, its counts, the tables it wrote and the
    Spark that wrote them (a sweep's own summary.json is records.summary's)."""

    study: str = ""
    kind: str = ""
    trials: int | None = None
    samples: int | None = None  # per-second rows read from the trial folders
    synthetic: bool = False
    objectives: tuple[str, ...] = ()
    rows: Mapping[str, int] = field(default_factory=dict)  # per table written
    tables: Mapping[str, str] = field(default_factory=dict)  # table -> its path
    master: str | None = None
    spark_version: str | None = None
    seconds: float | None = None
    schema_version: int = SCHEMA_VERSION


def read_analysis_summary(analysis: Path) -> AnalysisSummary | None:
    """The analysis summary, None when the study was not analysed (a newer schema version is refused by name)."""
    p = Path(analysis) / SUMMARY
    return from_json(AnalysisSummary, files.read_record(p, SCHEMA_VERSION), str(p)) if p.exists() else None
