"""A config map's settings read as Kafka reads them: numbers that may be unset or not numbers, and the producer's
acks with its default and its two spellings of "all"."""

from __future__ import annotations

from core.acks import acks
from core.units import number, number_of


def test_a_setting_is_a_number_only_when_the_map_sets_it_to_one() -> None:
    conf = {"linger.ms": "5", "batch.size": 131072, "num.io.threads": "mixed(8|16)", "fetch.min.bytes": None}
    assert number_of(conf, "linger.ms") == 5.0 and number_of(conf, "batch.size") == 131072.0
    # unset, a value the brokers disagree on, a null, no map at all: no figure, never 0
    assert [number_of(conf, k) for k in ("buffer.memory", "num.io.threads", "fetch.min.bytes")] == [None] * 3
    assert number_of(None, "linger.ms") is None and number("x") is None


def test_acks_is_kafkas_default_when_unset_and_minus_one_reads_as_all() -> None:
    assert [acks(c) for c in ({}, None, {"acks": "-1"}, {"acks": -1}, {"acks": "all"})] == ["all"] * 5
    assert acks({"acks": 1}) == "1" and acks({"acks": "0"}) == "0"
