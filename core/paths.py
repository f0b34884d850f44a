"""Where kafkatune keeps its cache (jars) and its state (the testbed), both overridable.

`KAFKATUNE_HOME` moves everything (default `~/.cache/kafkatune`); `KAFKATUNE_CACHE` moves only the Kafka
jars, `KAFKATUNE_STATE` only the testbed state. Flags on the CLI win over the environment.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("KAFKATUNE_HOME", Path.home() / ".cache" / "kafkatune"))


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKATUNE_CACHE", home()))


def state_dir() -> Path:
    return Path(os.environ.get("KAFKATUNE_STATE", home() / "testbed"))
