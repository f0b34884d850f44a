"""How long until N freshly started workers are ready to connect: spawned (each imports the load generator and
the Kafka client) vs forked from the fork server loadgen.channel uses (they are imported there once).

Each round starts N processes that import what a worker needs and report the time; a round's figure is the
time until the last one reported. The fork server is started (and its modules imported) once, before the
first round, as a coordinator does on its first run. Rounds alternate between the two methods; medians.

Every child also runs the coordinator's main script again (CPython 3.11 does so under both methods; its fork
server ignores a "__main__" preload), so this script imports only what it must at its top: the figures are
the workers' own start. Under the `kafkatune` console script that adds kafkatune.cli's import to each worker;
under `python -m kafkatune` nothing.

    .venv/bin/python benchmarks/worker_start.py [--workers 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loadgen.channel import PRELOAD


def _child(q: Any) -> None:
    import drivers.kafka  # noqa: F401  (what a worker needs before it connects)
    import loadgen.worker  # noqa: F401

    q.put(time.monotonic())


def _round(ctx: Any, n: int) -> float:
    q = ctx.Queue()
    t0 = time.monotonic()
    procs = [ctx.Process(target=_child, args=(q,)) for _ in range(n)]
    for p in procs:
        p.start()
    last = max(q.get(timeout=60) for _ in range(n))
    for p in procs:
        p.join()
    return last - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    spawn, fork = mp.get_context("spawn"), mp.get_context("forkserver")
    fork.set_forkserver_preload(list(PRELOAD))
    _round(fork, 1)  # the fork server starts once per coordinator
    runs: dict[str, list[float]] = {"spawn": [], "forkserver": []}
    for _ in range(a.rounds):
        runs["spawn"].append(_round(spawn, a.workers))
        runs["forkserver"].append(_round(fork, a.workers))
    med = {k: median(v) for k, v in runs.items()}
    print(
        f"{a.workers} workers ready, median of {a.rounds}: spawn {med['spawn']:.3f} s, "
        f"fork server {med['forkserver']:.3f} s ({med['spawn'] / med['forkserver']:.0f}x)"
    )
    print(
        json.dumps(
            {
                "bench": "worker_start",
                "workers": a.workers,
                "rounds": a.rounds,
                "median_s": {k: round(v, 4) for k, v in med.items()},
                "runs_s": {k: [round(x, 4) for x in v] for k, v in runs.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
