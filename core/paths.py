"""Where kafkatune keeps its cache (jars) and its state (the testbed), both overridable.

`KAFKATUNE_HOME` moves everything (default `~/.cache/kafkatune`); `KAFKATUNE_CACHE` moves only the Kafka
jars, `KAFKATUNE_STATE` only the testbed state. Flags on the CLI win over the environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("KAFKATUNE_HOME", Path.home() / ".cache" / "kafkatune"))


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKATUNE_CACHE", home()))


def state_dir() -> Path:
    return Path(os.environ.get("KAFKATUNE_STATE", home() / "testbed"))


def slug(name: str, default: str = "bench") -> str:
    """A free-text name (OMB's "1 topic / 6 partition / 100b") as a folder and topic name: runs of anything
    but letters, digits, `.`, `_`, `-` become `-`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or default
