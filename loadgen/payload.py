"""The header every benchmark payload starts with: who sent it, which one, and when.

    producer id  u32   (global over the run)
    sequence     u64   (per producer, from 0, no gaps among attempted sends)
    send time    i64   (ns, the producer's wall clock when it handed the message to the driver)

The rest is a body taken in turn from a pool of distinct bodies (see `bodies`).

Payloads smaller than 20 B (the comparison method starts at 8 B) use a shorter header, chosen by size:
16-19 B carry producer id (16 bits) and sequence (48 bits) in one u64, then the send time; 8-15 B carry
only that u64, so they are counted (loss and duplicates included) but have no latency: `timed(size)`.
"""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable

HEADER = struct.Struct("<IQq")
HEADER_BYTES = HEADER.size
pack = HEADER.pack
unpack_from = HEADER.unpack_from

assert HEADER_BYTES == 20
SHORT = struct.Struct("<Qq")
TINY = struct.Struct("<Q")
MIN_SIZE = TINY.size
SEQ_BITS = 48


def header_bytes(size: int) -> int:
    return HEADER_BYTES if size >= HEADER_BYTES else SHORT.size if size >= SHORT.size else TINY.size


def timed(size: int) -> bool:
    """Whether a payload of `size` bytes carries its send time (so latencies can be measured)."""
    return size >= SHORT.size


def packer(size: int) -> Callable[[int, int, int], bytes]:
    """pack(producer id, sequence, send ns) -> the header for payloads of `size` bytes."""
    if size >= HEADER_BYTES:
        return pack
    short, tiny = SHORT.pack, TINY.pack
    if size >= SHORT.size:
        return lambda pid, seq, now: short(pid << SEQ_BITS | seq, now)
    return lambda pid, seq, now: tiny(pid << SEQ_BITS | seq)


def record_packer(size: int, body_len: int) -> Callable[[int, int, int, bytes], bytes]:
    """pack(producer id, sequence, send ns, body) -> the whole payload, header and `body_len`-byte body, built in
    one allocation (packing the header alone, then joining it to the body, takes two; benchmarks/send_batch.py
    measures the send path either way)."""
    if size >= HEADER_BYTES:
        return struct.Struct(f"<IQq{body_len}s").pack
    if size >= SHORT.size:
        short = struct.Struct(f"<Qq{body_len}s").pack
        return lambda pid, seq, now, body: short(pid << SEQ_BITS | seq, now, body)
    tiny = struct.Struct(f"<Q{body_len}s").pack
    return lambda pid, seq, now, body: tiny(pid << SEQ_BITS | seq, body)


def unpacker(size: int) -> Callable[[bytes], tuple[int, int, int]]:
    """unpack(payload) -> (producer id, sequence, send ns); send ns is 0 when the size has no room for it."""
    if size >= HEADER_BYTES:
        return unpack_from
    mask = (1 << SEQ_BITS) - 1
    short, tiny = SHORT.unpack_from, TINY.unpack_from

    def unpack_short(data: bytes) -> tuple[int, int, int]:
        ps, sent = short(data)
        return ps >> SEQ_BITS, ps & mask, sent

    def unpack_tiny(data: bytes) -> tuple[int, int, int]:
        (ps,) = tiny(data)
        return ps >> SEQ_BITS, ps & mask, 0

    return unpack_short if size >= SHORT.size else unpack_tiny


# Larger than the largest producer batch (1 MiB), so a batch never holds the same body twice: with
# one body repeated, lz4 compressed a 1 KB-record batch to almost nothing and a sweep "beat" the
# network ceiling by 1.8x with compression alone (measured).
POOL_BYTES = 4 * 1024 * 1024


def bodies(size: int, content: str = "random", seed: int | None = None) -> list[bytes]:
    """Distinct payload bodies of `size` bytes, POOL_BYTES in all (at least 16).

    random: incompressible, so compression can only cost CPU (the conservative default);
    text:   words from a 2,000-word vocabulary, which lz4 compresses about 2x, like log lines.
    """
    if size <= 0:
        return [b""]
    n = min(max(16, POOL_BYTES // size), 1 << 18)  # tiny bodies: enough distinct ones, not millions
    if content == "random":
        blob = os.urandom(n * size)
        return [blob[i * size : (i + 1) * size] for i in range(n)]
    rng = random.Random(seed)
    vocab = [bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10))) for _ in range(2000)]
    out = []
    for _ in range(n):
        words: list[bytes] = []
        length = 0
        while length < size:
            w = rng.choice(vocab)
            words.append(w)
            length += len(w) + 1
        out.append(b" ".join(words)[:size].ljust(size, b" "))
    return out


def omb_bodies(size: int, header: int, file_bytes: bytes | None, random_ratio: float, pool: int) -> list[bytes]:
    """OMB's payloads, `header` bytes short at the front (where each message's header goes): the payload
    file's bytes after the header, or `pool` bodies whose first random_ratio × size bytes are random and the
    rest zeros (OMB's useRandomizedPayloads)."""
    if file_bytes is not None:
        return [file_bytes[header:size]]
    rand = max(0, int(size * random_ratio) - header)
    zeros = size - header - rand
    return [os.urandom(rand) + bytes(zeros) for _ in range(max(1, pool))]
