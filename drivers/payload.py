"""The header every benchmark payload starts with: who sent it, which one, and when.

    producer id  u32   (global over the run)
    sequence     u64   (per producer, from 0, no gaps among attempted sends)
    send time    i64   (ns, the producer's wall clock when it handed the message to the driver)

The rest of the payload is random bytes, fixed per producer (as OMB's payload file).
"""

from __future__ import annotations

import struct

HEADER = struct.Struct("<IQq")
HEADER_BYTES = HEADER.size
pack = HEADER.pack
unpack_from = HEADER.unpack_from

assert HEADER_BYTES == 20
