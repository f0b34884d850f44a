"""How long a kafkatune command takes to start: commands imported on use (as the CLI does) vs all at once.

Each command's module imports what it needs (optuna for sweeps, matplotlib for reports, pyarrow, paramiko,
the Kafka client…). The CLI imports a command's module only when that command runs (kafkatune/cli.py).
This times, in one run, `kafkatune --help` and `kafkatune ceiling …` as they are, and the same Python
importing every command module first (what an eager CLI would cost every invocation). Prints medians of
`--reps` runs and the ratios.

    .venv/bin/python benchmarks/cli_startup.py [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from _common import log

CEILING = ["ceiling", "--brokers", "3", "--rf", "3", "--nic-mbps", "1170"]
EAGER = (
    "import importlib, sys; from kafkatune.cli import COMMANDS, main; "
    "[importlib.import_module(m) for m, _ in COMMANDS.values()]; sys.argv = ['kafkatune', *sys.argv[1:]]; main()"
)


def _time(cmd: list[str], reps: int) -> float:
    took = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    py = sys.executable
    rows = {}
    for name, args in (("--help", ["--help"]), ("ceiling", CEILING)):
        lazy = _time([py, "-m", "kafkatune", *args], a.reps)
        eager = _time([py, "-c", EAGER, *args], a.reps)
        rows[name] = {"on_use_s": round(lazy, 3), "all_at_once_s": round(eager, 3), "ratio": round(eager / lazy, 2)}
        log(f"kafkatune {name:<8} commands on use {lazy:6.2f} s   all at once {eager:6.2f} s   ×{eager / lazy:.2f}")
    print(json.dumps({"benchmark": "cli_startup", "reps": a.reps, "median": rows}))


if __name__ == "__main__":
    main()
