"""How long `make venv` takes on a clean clone: pip against uv (issue 37: every CI run starts from a clean clone).

Each arm builds a fresh virtual environment in a temporary folder and installs this project with its dev extras,
as the Makefile's `venv` target does: `pip` upgrades pip and runs `pip install -e '.[dev]'`; `uv` installs uv
(pinned, as the Makefile pins it) with the venv's own pip and then runs `uv pip install -e '.[dev]'`. Both read
their caches (~/.cache/pip, ~/.cache/uv), as a CI run on this machine does after its first; the arms alternate,
`--rounds` times, so that neither always runs first. The uv arm is the Makefile's: from uv's cache alone first
(`--offline`), from the package index only if that fails.

It prints and writes benchmarks/results/venv_install.json: each arm's seconds, median, range, and the ratio of
the medians.

    .venv/bin/python benchmarks/venv_install.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, log, median, result_file

PINNED = re.search(r"^UV_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)


def install(arm: str, venv: Path, uv_version: str) -> float:
    """Seconds to build `venv` and install the project into it with `arm` (pip or uv)."""
    py = str(venv / "bin" / "python")
    steps = {
        "pip": [
            [py, "-m", "pip", "install", "-q", "--upgrade", "pip"],
            [py, "-m", "pip", "install", "-q", "-e", ".[dev]"],
        ],
        "uv": [
            [py, "-m", "pip", "install", "-q", f"uv=={uv_version}"],
            [str(venv / "bin" / "uv"), "pip", "install", "-q", "--offline", "--python", py, "-e", ".[dev]"],
        ],
    }[arm]
    online = [str(venv / "bin" / "uv"), "pip", "install", "-q", "--python", py, "-e", ".[dev]"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for cmd in steps:
        if subprocess.run(cmd, cwd=REPO, check=False, **quiet).returncode and "--offline" in cmd:
            subprocess.run(online, cwd=REPO, check=True, **quiet)  # the cache lacked something
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="installs per arm, alternating")
    a = ap.parse_args()
    if PINNED is None:
        sys.exit("the Makefile pins no UV_VERSION")
    uv_version = PINNED.group(1)
    seconds: dict[str, list[float]] = {"pip": [], "uv": []}
    with tempfile.TemporaryDirectory(prefix="kt-venv-") as td:
        for r in range(a.rounds):
            for arm in ("pip", "uv") if r % 2 == 0 else ("uv", "pip"):
                s = install(arm, Path(td) / f"{arm}-{r}", uv_version)
                seconds[arm].append(round(s, 1))
                log(f"round {r} {arm}: {s:.1f} s")
    med = {arm: median(xs) for arm, xs in seconds.items()}
    for arm, xs in seconds.items():
        print(f"{arm}: median {med[arm]:.1f} s (n={len(xs)}, {min(xs):.1f}-{max(xs):.1f})")
    ratio = med["pip"] / med["uv"]
    print(f"pip / uv: {ratio:.2f}x")
    result_file(
        "venv_install",
        {
            "args": vars(a),
            "uv_version": uv_version,
            "seconds": seconds,
            "median_s": med,
            "range_s": {arm: [min(xs), max(xs)] for arm, xs in seconds.items()},
            "pip_over_uv": round(ratio, 2),
        },
    )


if __name__ == "__main__":
    main()
