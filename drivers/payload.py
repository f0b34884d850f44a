"""The header every benchmark payload starts with: who sent it, which one, and when.

    producer id  u32   (global over the run)
    sequence     u64   (per producer, from 0, no gaps among attempted sends)
    send time    i64   (ns, the producer's wall clock when it handed the message to the driver)

The rest is a body taken in turn from a pool of distinct bodies (see `bodies`).
"""

from __future__ import annotations

import os
import random
import struct

HEADER = struct.Struct("<IQq")
HEADER_BYTES = HEADER.size
pack = HEADER.pack
unpack_from = HEADER.unpack_from

assert HEADER_BYTES == 20


# Larger than the largest producer batch (1 MiB), so a batch never holds the same body twice: with
# one body repeated, lz4 compressed a 1 KB-record batch to almost nothing and a sweep "beat" the
# network ceiling by 1.8x with compression alone (measured).
POOL_BYTES = 4 * 1024 * 1024


def bodies(size: int, content: str = "random", seed: int | None = None) -> list[bytes]:
    """Distinct payload bodies of `size` bytes, POOL_BYTES in all (at least 16).

    random: incompressible, so compression can only cost CPU (the conservative default);
    text:   words from a 2,000-word vocabulary, which lz4 compresses about 2x, like log lines.
    """
    n = max(16, POOL_BYTES // max(1, size))
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
