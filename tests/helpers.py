"""Small helpers shared by the tests: CLI invocation and short workloads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent


def kafkatune(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkatune", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        check=False,
    )


def kafkatune_popen(*args: str) -> subprocess.Popen[str]:
    """The CLI started in the background (output discarded: a test waits on its exit code)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kafkatune", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        cwd=REPO,
    )  # fmt: skip


def write_workload(path: Path, **fields: Any) -> Path:
    base: dict[str, Any] = {
        "name": "t",
        "partitionsPerTopic": 3,
        "messageSize": 1024,
        "producersPerTopic": 1,
        "consumerPerSubscription": 1,
        "warmupDurationMinutes": 0,
        "testDurationMinutes": 0.1,
        "producerConfig": {"acks": "all"},
    }
    base.update(fields)
    path.write_text(yaml.safe_dump(base))
    return path
