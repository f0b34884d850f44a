"""The parameter catalogue: legal values, cross-key rules, legal thread-pool steps."""

from __future__ import annotations

import pytest

from brokerconf import catalogue


def test_catalogue_covers_the_keys_the_product_sweeps() -> None:
    want = {
        "batch.size",
        "linger.ms",
        "acks",
        "compression.type",
        "buffer.memory",
        "max.in.flight.requests.per.connection",
        "producers",
        "num.replica.fetchers",
        "num.io.threads",
        "num.network.threads",
        "replica.fetch.max.bytes",
        "replica.fetch.response.max.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
        "fetch.min.bytes",
        "consumers",
        "partitions",
    }
    assert want <= set(catalogue.CATALOGUE)
    assert catalogue.param("num.io.threads").apply == "dynamic"
    assert catalogue.param("replica.fetch.max.bytes").apply == "restart"
    assert catalogue.param("batch.size").default == 16384  # the Java client's, not librdkafka's 1,000,000
    with pytest.raises(KeyError, match=r"unknown key 'batch\.sise'"):
        catalogue.param("batch.sise")


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("batch.size", 16384, True),
        ("batch.size", 0, False),
        ("batch.size", "16384", False),
        ("acks", "all", True),
        ("acks", "2", False),
        ("compression.type", "lz4", True),
        ("compression.type", "brotli", False),
        ("num.io.threads", 0, False),
        ("linger.ms", True, False),
    ],
)
def test_legal_values(key: str, value: object, ok: bool) -> None:
    assert (catalogue.param(key).check(value) is None) is ok


def test_cross_key_rules() -> None:
    assert catalogue.broken_rules({"batch.size": 65536, "buffer.memory": 33554432}) == []
    broken = catalogue.broken_rules({"batch.size": 1048576, "buffer.memory": 65536})
    assert len(broken) == 1 and broken[0].startswith("buffer.memory ≥ batch.size is broken")
    # unset keys take Kafka's default: fetch.max.bytes 52428800 < 64 MiB
    assert any("fetch.max.bytes" in b for b in catalogue.broken_rules({"max.partition.fetch.bytes": 67108864}))
    assert catalogue.infeasible_rules({"buffer.memory": (1024, 4096), "batch.size": (16384, 65536)})
    assert not catalogue.infeasible_rules({"buffer.memory": (1024, 65536), "batch.size": (16384, 65536)})


@pytest.mark.parametrize(
    ("old", "new", "steps"),
    [(8, 32, [16, 32]), (32, 8, [16, 8]), (1, 16, [2, 4, 8, 16]), (3, 14, [6, 12, 14]), (14, 3, [7, 4, 3]), (5, 5, [])],
)
def test_thread_pool_steps_stay_within_half_and_double(old: int, new: int, steps: list[int]) -> None:
    got = list(catalogue.thread_pool_steps(old, new))
    assert got == steps
    cur = old
    for s in got:
        assert cur // 2 <= s <= cur * 2  # Kafka's DynamicThreadPool rule
        cur = s
