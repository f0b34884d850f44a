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
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import files
from records.trialrow import TrialRow, spark_schema

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
    return [{str(k): (None if _missing(v) else v) for k, v in r.items()} for r in df.to_dict("records")]


def trial_rows(df: pd.DataFrame) -> list[TrialRow]:
    """The rows of a trials table (or a part of one), typed."""
    return [TrialRow.of(r) for r in rows(df)]


def trial_row(s: pd.Series | None) -> TrialRow | None:
    """One row of a trials table, typed."""
    return None if s is None else TrialRow.of({str(k): v for k, v in s.to_dict().items()})


def row(s: pd.Series | None) -> dict[str, Any] | None:
    """One row as a dict with missing values as None."""
    if s is None:
        return None
    return {str(k): (None if _missing(v) else v) for k, v in s.to_dict().items()}


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def write_summary(analysis: Path, summary: Mapping[str, Any]) -> dict[str, Any]:
    """Write the analysis summary; returns it as written (with its schema_version)."""
    doc = {"schema_version": SCHEMA_VERSION, **summary}
    files.write_json(analysis / SUMMARY, doc)
    return doc


def read_analysis_summary(analysis: Path) -> dict[str, Any]:
    """The analysis summary (`analyze`'s counts and what it read), empty when the study was not analysed; a sweep's
    own summary.json is records.summary's."""
    p = Path(analysis) / SUMMARY
    return files.read_json_object(p) if p.exists() else {}
