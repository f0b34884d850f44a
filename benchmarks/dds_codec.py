"""The DDS driver's payload codec: the binding's sequence<uint8> machine vs the driver's ByteSequence.

Both write the same CDR (checked first). Prints, per payload size, the median of `--reps` timings of
one serialize and one deserialize with each, and the ratios; the last column is what one Python process
could write per second with each codec alone (1 / serialize time).

    .venv/bin/python benchmarks/dds_codec.py [--reps 21] [--sizes 1024,65536,1048576]
"""

# No `from __future__ import annotations`: Cyclone's IDL types are resolved from real annotations.
import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _common import log, median
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import sequence, uint8

from drivers.dds import KtMessage


@dataclass
class StockMessage(IdlStruct, typename="kafkatune.bench.StockMessage"):
    data: sequence[uint8]  # type: ignore[type-arg]


def _time(fn: Callable[[], Any], reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--sizes", default="1024,65536,1048576")
    a = ap.parse_args()
    print(
        "| payload | serialize: binding / ByteSequence (ms) | ratio | deserialize: binding / ByteSequence (ms) "
        "| ratio | writes/s per process: binding / ByteSequence |"
    )
    print("|---|---|---|---|---|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        b = bytes(i % 251 for i in range(n))
        stock, ours = StockMessage(data=b), KtMessage(data=b)  # type: ignore[arg-type]
        wire = ours.serialize()
        assert wire == stock.serialize() and KtMessage.deserialize(wire).data == b
        s_stock = _time(stock.serialize, a.reps)
        s_ours = _time(ours.serialize, a.reps)
        d_stock = _time(lambda w=wire: StockMessage.deserialize(w), a.reps)
        d_ours = _time(lambda w=wire: KtMessage.deserialize(w), a.reps)
        log(f"{n} B done")
        print(
            f"| {n:,} B | {s_stock * 1e3:.3f} / {s_ours * 1e3:.3f} | {s_stock / s_ours:.0f}x "
            f"| {d_stock * 1e3:.3f} / {d_ours * 1e3:.3f} | {d_stock / d_ours:.0f}x "
            f"| {1 / s_stock:,.0f} / {1 / s_ours:,.0f} |"
        )


if __name__ == "__main__":
    main()
