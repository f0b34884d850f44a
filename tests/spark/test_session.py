"""The analysis's Spark session: its driver JVM's JIT."""

from __future__ import annotations

from typing import Any

from spark.session import QUICK_JIT, driver_java_options


def test_a_local_driver_compiles_with_c1_only_and_a_clusters_keeps_its_default() -> None:
    assert driver_java_options(None) == driver_java_options("local[2]") == QUICK_JIT
    assert driver_java_options("spark://127.0.0.1:7077") is None
    assert driver_java_options("local[*]", quick_jit=False) is None
    assert driver_java_options("spark://h:7077", quick_jit=True) == QUICK_JIT


def test_the_local_sessions_driver_jvm_runs_with_c1_only(spark: Any) -> None:
    """The option reaches the JVM it is meant for (read at the JVM's start, it is on its command line)."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert QUICK_JIT in list(bean.getInputArguments())
