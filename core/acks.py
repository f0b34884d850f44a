"""The producer's `acks` as Kafka runs it, read from any config map that may set it (a spec's, a trial's, a
workload's producerConfig): one place that knows the default and the two spellings of "all"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT = "all"  # Kafka 3.0 and later


def acks(config: Mapping[str, Any] | None) -> str:
    """The map's acks as "all", "1" or "0": Kafka's default when unset, and "-1" (the same setting) spelled "all"."""
    v = str(config["acks"]) if config and "acks" in config else DEFAULT
    return DEFAULT if v == "-1" else v
