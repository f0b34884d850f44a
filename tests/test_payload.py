"""Payload bodies: no producer batch holds the same body twice, and compressibility is what it says."""

from __future__ import annotations

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
