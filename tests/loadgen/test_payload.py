"""Payload bodies: no producer batch holds the same body twice, and compressibility is what it says."""

from __future__ import annotations

import time
import zlib

import pytest

from loadgen import payload


@pytest.mark.parametrize("size", [80, 1004, 65536])
def test_pool_is_larger_than_any_batch_and_distinct(size: int) -> None:
    pool = payload.bodies(size)
    assert all(len(b) == size for b in pool)
    assert len(pool) * size >= 1024 * 1024  # more than the largest batch.size the catalogue allows
    assert len(set(pool)) == len(pool)


def test_random_is_incompressible_and_text_compresses() -> None:
    rnd = b"".join(payload.bodies(1004, "random")[:256])
    txt = b"".join(payload.bodies(1004, "text", seed=3)[:256])
    assert len(zlib.compress(rnd, 1)) > 0.99 * len(rnd)
    assert 1.6 < len(txt) / len(zlib.compress(txt, 1)) < 4
    assert len(set(payload.bodies(1004, "text", seed=3)[:256])) == 256


@pytest.mark.parametrize(("size", "timed"), [(8, False), (12, False), (16, True), (19, True), (20, True), (64, True)])
def test_header_fits_every_size_from_8_bytes_and_round_trips(size: int, timed: bool) -> None:
    head = payload.packer(size)(513, (1 << 40) + 7, 1_700_000_000_123_456_789)
    assert len(head) == payload.header_bytes(size) <= size
    msg = head + payload.bodies(size - len(head))[0]
    assert len(msg) == size
    pid, seq, sent = payload.unpacker(size)(msg)
    assert (pid, seq) == (513, (1 << 40) + 7)
    assert payload.timed(size) is timed
    assert sent == (1_700_000_000_123_456_789 if timed else 0)


@pytest.mark.parametrize("size", [8, 12, 16, 19, 20, 100, 1024])
def test_the_one_allocation_packer_gives_the_same_payload_as_header_plus_body(size: int) -> None:
    """The send loops build each payload with record_packer (loadgen.worker): byte for byte the header packer's
    bytes followed by the body, of the run's size, read back by the unpacker."""
    pool = payload.bodies(size - payload.header_bytes(size))
    body = pool[len(pool) // 2]
    msg = payload.record_packer(size, len(body))(513, (1 << 40) + 7, 1_700_000_000_123_456_789, body)
    assert msg == payload.packer(size)(513, (1 << 40) + 7, 1_700_000_000_123_456_789) + body
    assert len(msg) == size and payload.unpacker(size)(msg)[:2] == (513, (1 << 40) + 7)


def test_a_consumer_counts_a_record_it_read_twice_once_in_its_distinct_records() -> None:
    """The drain ends on distinct records (loadgen.runner): a consumer that re-reads after its group rebalanced
    must not reach the acknowledged count with duplicates while other records are still to come."""
    from loadgen.accounts import ConsumerState

    st = ConsumerState(time.time_ns, 100)
    pack = payload.packer(100)
    body = bytes(100 - payload.HEADER_BYTES)
    st.on_batch([pack(1, seq, time.time_ns()) + body for seq in range(10)])
    st.on_batch([pack(1, seq, time.time_ns()) + body for seq in range(5, 10)])  # re-read after a rebalance
    st.on_message(pack(2, 70000, time.time_ns()) + body)  # another producer, beyond the first map's size
    assert st.distinct() == 11
