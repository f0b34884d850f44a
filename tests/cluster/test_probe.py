"""The CPU probe (cluster.probe.probe_cpu) as it is shipped to a remote host: the file alone, the standard library
only, one JSON object out."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_the_cpu_probe_runs_from_the_file_alone_and_says_its_spread() -> None:
    proc = subprocess.run(
        [sys.executable, "-S", "-I", str(REPO / "cluster" / "probe.py"), "cpu"],  # no site-packages, no repo path
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    lo, hi = out["cpu_probe_ms_range"]
    assert 0 < lo <= out["cpu_probe_ms"] <= hi
    assert "median of 5 runs" in out["cpu_probe_method"]
