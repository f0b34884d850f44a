"""reports.properties.from_current: the files of a study started from the `current` configuration set back every
key that configuration runs otherwise than the configuration measured as written."""

from __future__ import annotations

from core.stats import Interval
from records.confirmation import KeyEffect
from reports.properties import from_ablations, from_current, render, with_current

# the misconfig scenario's start (benchmarks/tuning/misconfig.yaml) and a chosen configuration from its sweep
CURRENT = {
    "batch.size": 4096,
    "linger.ms": 0,
    "acks": "all",
    "max.partition.fetch.bytes": 8192,
    "partitions": 6,
    "log.flush.interval.messages": "1",
    "num.io.threads": "4",
}
CHOSEN = {
    "batch.size": 717036,
    "linger.ms": 23,
    "acks": "all",
    "max.partition.fetch.bytes": 1048576,
    "partitions": 6,
    "log.flush.interval.messages": 3864658,
}


def test_keys_the_current_configuration_runs_otherwise_are_set_to_what_was_measured() -> None:
    """batch.size is recommended (beyond noise); linger.ms and the flush were dropped (no effect against the
    defaults), so the written configuration runs their defaults; the fetch size ran at its default in the chosen
    configuration; partitions and acks are the same; num.io.threads, a broker key the chosen configuration left
    out, ran as the cluster runs it."""
    recommended = [KeyEffect("batch.size", "16384", "717036", beyond_noise=True)]
    dropped = {"linger.ms", "log.flush.interval.messages"}
    changes = from_current(recommended, dropped, CHOSEN, CURRENT, "confirm-001")
    got = {c.key: (c.old, c.new) for c in changes}
    assert got == {
        "linger.ms": ("0", "5"),
        "log.flush.interval.messages": ("1", "9223372036854775807"),
        "max.partition.fetch.bytes": ("8192", "1048576"),
    }, got
    files = render(changes, "header")
    assert (
        "linger.ms=5" in files["producer.properties"]
        and "max.partition.fetch.bytes=1048576" in files["consumer.properties"]
    )
    assert "log.flush.interval.messages=9223372036854775807" in files["server.properties"]
    assert from_current([], set(), CURRENT, CURRENT) == []  # the current configuration chosen: nothing to set back


def test_a_recommended_key_is_stated_from_what_the_current_configuration_runs() -> None:
    """The ablation measures batch.size against Kafka's default (16384), but the operator runs 4096 now: the files say
    both; a key whose old value is the current one, or one current runs already, is stated as before."""
    recommended = [KeyEffect("batch.size", "16384", "717036", beyond_noise=True), KeyEffect("acks", "1", "all")]
    back = from_current(recommended, {"linger.ms"}, CHOSEN, CURRENT)
    changes = with_current([*from_ablations(recommended), *back], CURRENT)
    was = {c.key: c.was for c in changes}
    assert was["batch.size"] == "4096 now (the effect is against 16384)", was
    assert was["acks"] == "1" and was["linger.ms"] == "0", was  # current runs acks=all already; linger.ms set back
    line = next(x for x in render(changes, "h")["producer.properties"].splitlines() if x.startswith("# batch.size"))
    assert line.startswith("# batch.size: 4096 now (the effect is against 16384) -> 717036;"), line
    assert with_current(changes, {}) == changes  # a study from Kafka's defaults: no current to state


def test_a_keys_effect_is_written_at_the_level_its_interval_was_computed_at() -> None:
    """The ablation's intervals are Holm-corrected (90 % for one key at a one-sided 5 %): the file says so, as the
    verdict does, rather than a fixed 95 %."""
    iv = Interval(4.68, 2.94, 6.43, 4, level=0.9)
    (change,) = from_ablations([KeyEffect("batch.size", "16384", "295682", n=4, interval=iv, beyond_noise=True)])
    assert change.gain_note == "effect +4.68 MB/s (90 % CI +2.94–+6.43, n=4)", change.gain_note
