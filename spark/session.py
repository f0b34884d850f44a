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


# The driver JVM's JIT when it runs the whole job (a local master): C1 only. An analysis JVM lives for one study's
# tables, too short for C2's compiling to pay for itself: the cold start and first analysis are quicker, a
# million samples as quick (benchmarks/results/spark_jit.json).
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def driver_java_options(master: str | None, quick_jit: bool | None = None) -> str | None:
    """The driver JVM's options: QUICK_JIT when `quick_jit`, or (None) when the master is local and the driver runs
    the whole job; none for a cluster's master, whose executors do the work in JVMs of their own."""
    local = not master or master.startswith("local")
    return QUICK_JIT if (local if quick_jit is None else quick_jit) else None


def session(
    master: str | None = None, app: str = "kafkatune-analyze", driver_memory: str = "4g", quick_jit: bool | None = None
) -> Any:
    """A Spark session on `master` (None: local[*]); `quick_jit` as `driver_java_options` takes it."""
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
    if opts := driver_java_options(master, quick_jit):
        b = b.config("spark.driver.extraJavaOptions", opts)  # read when the JVM starts: before getOrCreate
    if master and master.startswith("spark://"):
        b = b.config("spark.executor.memory", "2g").config("spark.cores.max", "2")
    try:
        s = b.getOrCreate()
    except Exception as e:  # py4j / JVM start failures arrive as assorted exception types
        raise EnvironmentProblem(f"could not start Spark (master {master or 'local[*]'}): {e}") from None
    s.sparkContext.setLogLevel("ERROR")
    return s
