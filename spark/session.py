"""One SparkSession, set up for this machine: the venv's Python on the workers, Java 17, loopback.

`local[*]` by default; any master URL (`spark://host:7077`, `local[2]`) runs the same jobs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from core.errors import EnvironmentProblem
from core.java import java_home


def environment() -> dict[str, str]:
    """What a Spark JVM and its Python workers need here (also used to start a standalone cluster)."""
    env = {
        "JAVA_HOME": str(java_home()),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }
    return env


def session(master: str | None = None, app: str = "kafkatune-analyze", driver_memory: str = "4g") -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EnvironmentProblem("PySpark is not installed: `make deps` (or pip install pyspark)") from None
    os.environ.update(environment())
    b = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
    )
    if master and master.startswith("spark://"):
        b = b.config("spark.executor.memory", "2g").config("spark.cores.max", "2")
    try:
        s = b.getOrCreate()
    except Exception as e:  # py4j / JVM start failures arrive as assorted exception types
        raise EnvironmentProblem(f"could not start Spark (master {master or 'local[*]'}): {e}") from None
    s.sparkContext.setLogLevel("ERROR")
    return s
