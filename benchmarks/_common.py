"""Shared pieces of the benchmarks: a private testbed, a kafkatune run, medians."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed import dist
from testbed.lifecycle import Testbed


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def testbed(state_dir: Path, *, base_port: int = 49090, warm_up_s: float = 60, **up: Any) -> Iterator[Testbed]:
    tb = Testbed(state_dir, dist.install(), base_port=base_port, prefix="ktb")
    tb.down(wipe=True, progress=lambda m: None)
    try:
        st = tb.up(progress=log, **up)
        if warm_up_s:
            from loadgen.warmup import warm_up

            warm_up(st.bootstrap_servers, warm_up_s, say=log, placements=tb.client_netns(st))
        yield tb
    finally:
        tb.down(wipe=True, progress=lambda m: None)


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))
