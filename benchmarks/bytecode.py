"""What compiled bytecode saves each Python process that kafkatune starts: imports from __pycache__ vs from source.

This machine's environment sets PYTHONDONTWRITEBYTECODE, so Python never writes the bytecode it compiles, and uv
installs packages without compiling them (pip compiles at install): unless something compiles them, every process
(each CLI command, load worker, Spark Python worker, test helper) compiles each module it imports from source. The
Makefile compiles the venv's packages and the project's own (`make venv`, `make bytecode`).

Each case is one fresh Python process: `kafkatune --help`, and importing the module of `bench`, `sweep` and
`report` (what each command loads before it does anything). Two arms, alternating within each repeat so that
neither always runs first: `compiled` reads the bytecode the Makefile wrote; `source` gets an empty
PYTHONPYCACHEPREFIX, so it finds no bytecode (and writes none) and compiles everything it imports. Prints and writes
benchmarks/results/bytecode.json: per case and arm the wall and CPU seconds (median and range of `--reps`), and
the ratio of the medians.

    .venv/bin/python benchmarks/bytecode.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

from _common import REPO, log, median, result_file

CASES = {
    "kafkatune --help": ["-m", "kafkatune", "--help"],
    "import bench": ["-c", "import kafkatune.bench_cmd"],
    "import sweep": ["-c", "import kafkatune.sweep_cmd"],
    "import report": ["-c", "import kafkatune.report_cmd"],
}


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child Python."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _compiled() -> bool:
    """Whether the bytecode the compiled arm should read is there (`make bytecode` was run)."""
    return (REPO / "kafkatune" / "__pycache__").is_dir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="runs of each case and arm, alternating")
    a = ap.parse_args()
    if not _compiled():
        sys.exit("no bytecode under kafkatune/__pycache__: run `make bytecode` first")
    base = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    base.pop("PYTHONPYCACHEPREFIX", None)
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="kt-nopyc-") as empty:
        arms = {"compiled": base, "source": {**base, "PYTHONPYCACHEPREFIX": empty}}
        for case, args in CASES.items():
            got: dict[str, dict[str, list[float]]] = {arm: {"wall_s": [], "cpu_s": []} for arm in arms}
            for r in range(a.reps):
                for arm in ("compiled", "source") if r % 2 == 0 else ("source", "compiled"):
                    wall, cpu = _run(args, arms[arm])
                    got[arm]["wall_s"].append(round(wall, 3))
                    got[arm]["cpu_s"].append(round(cpu, 3))
            figures[case] = got
            c, s = (median(got[arm]["wall_s"]) for arm in ("compiled", "source"))
            log(f"{case:<18} compiled {c:5.2f} s   source {s:5.2f} s   source / compiled ×{s / c:.2f} (n={a.reps})")
    summary = {}
    for case, got in figures.items():
        row: dict[str, object] = {}
        for arm, v in got.items():
            row[f"{arm}_wall_s_median"] = round(median(v["wall_s"]), 3)
            row[f"{arm}_wall_s_range"] = [min(v["wall_s"]), max(v["wall_s"])]
            row[f"{arm}_cpu_s_median"] = round(median(v["cpu_s"]), 3)
        row["source_over_compiled_wall"] = round(median(got["source"]["wall_s"]) / median(got["compiled"]["wall_s"]), 2)
        summary[case] = row
    result_file("bytecode", {"args": vars(a), "summary": summary, "runs": figures})


if __name__ == "__main__":
    main()
