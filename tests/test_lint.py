"""The linters `make lint` runs, as tests: `make test` runs them in the beside lane (tests/lanes.py), on the CPU the
serial lane leaves idle, instead of before the suite; each failure prints the tool's own report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOOLS = {
    "ruff": ["ruff", "check", "."],
    "ruff-format": ["ruff", "format", "--check", "."],
    "mypy": ["mypy"],
    "import-linter": ["lint-imports", "--no-logo"],  # one concept per folder, imports only downward
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_the_code_passes(tool: str) -> None:
    exe, *args = TOOLS[tool]
    proc = subprocess.run([str(BIN / exe), *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(TOOLS[tool])} failed:\n{proc.stdout[-6000:]}{proc.stderr[-3000:]}"
