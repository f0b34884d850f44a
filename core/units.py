"""The units kafkatune quotes its figures in: one home, so every module divides by the same megabyte."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Bytes in a megabyte: throughput is in MB/s of 10^6 bytes, as OpenMessaging Benchmark quotes it (the `si` sizes of
# Kafka's configs, core.fmt, are binary).
MB = 1e6


def number(v: Any) -> float | None:
    """A config value as a number, or None when it is not one (unset, `mixed(…)`)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def number_of(config: Mapping[str, Any] | None, key: str) -> float | None:
    """`config`'s value of `key` as a number (`number`): None when the map or the key is absent or the value is not
    a number. The advisor reads every numeric setting this way, so an unset key never reads as 0."""
    return number(config[key]) if config and key in config else None
