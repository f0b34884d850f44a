"""The trials table's row, typed (records.trialrow): the table's schema is the record's, a recorded table reads into
it whole, and a missing value is the field's default."""

from __future__ import annotations

import math

import pytest

from records.analysis import TRIAL_FIELDS, load_table, rows, trial_row, trial_rows
from records.trialrow import TrialRow, spark_schema
from tests.helpers import FIXTURES

RECORDED = FIXTURES / "recorded" / "diagnosis"


def test_the_tables_schema_is_the_records_fields_with_their_spark_types() -> None:
    schema = dict(spark_schema())
    # the table a real analysis wrote has exactly the record's columns (TRIAL_FIELDS is what spark.analyze writes)
    table = load_table(RECORDED / "topic-flush" / "analysis", "trials")
    assert list(table.columns) == [name for name, _ in TRIAL_FIELDS] == [name for name, _ in spark_schema()]
    assert {"trial_id": "string", "params": "map<string,string>", "link_retrans": "map<string,long>"}.items() <= (
        schema.items()
    )
    assert schema["windows_mb_s"] == "array<double>" and schema["client_bound"] == "boolean"


def test_a_recorded_trials_table_reads_into_typed_rows_with_nothing_left_out() -> None:
    table = load_table(RECORDED / "topic-flush" / "analysis", "trials")
    (raw,) = rows(table)
    (t,) = trial_rows(table)
    assert t == trial_row(table.iloc[0])
    for name, value in raw.items():  # each column the table has is the row's, sequences read as tuples
        got = getattr(t, name)
        assert got == (tuple(value) if isinstance(value, list) else value), name
    assert t.topic_config is not None and t.topic_config["flush.messages"] == "1"
    assert t.rate == raw["mb_s"] and t.bound == "forced_flush"


def test_a_missing_value_takes_its_default_and_an_unknown_column_is_left_out() -> None:
    t = TrialRow.of({"trial_id": None, "params": None, "mb_s": math.nan, "e2e_p99_ms": 12.5, "seconds": 3})
    assert t.trial_id == "" and t.params == {} and t.mb_s is None and t.e2e_p99_ms == 12.5
    assert not hasattr(t, "seconds")
    with pytest.raises(ValueError, match="no measurement"):
        _ = t.rate
