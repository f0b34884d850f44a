"""The JDK kafkatune runs Kafka, Pulsar and Spark with."""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import EnvironmentProblem


def java_home() -> Path:
    """Java 17: Kafka 4.x brokers need >= 17, and the machine's newer JDK is not the tested one.

    `KAFKATUNE_JAVA_HOME` overrides; otherwise the Debian OpenJDK 17, then JAVA_HOME if it is a 17.
    """
    candidates = [
        os.environ.get("KAFKATUNE_JAVA_HOME"),
        "/usr/lib/jvm/java-17-openjdk-amd64",
        "/usr/lib/jvm/java-17-openjdk-arm64",
        os.environ.get("JAVA_HOME"),
    ]
    for c in candidates:
        if c and (Path(c) / "bin" / "java").exists():
            return Path(c)
    raise EnvironmentProblem("no Java 17 found: install openjdk-17-jre-headless or set KAFKATUNE_JAVA_HOME")
