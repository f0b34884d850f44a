"""The analysis's Spark session: its driver JVM's JIT."""

from __future__ import annotations

from typing import Any

from spark.session import QUICK_JIT, driver_java_options


def test_a_local_driver_compiles_with_c1_only_and_a_clusters_keeps_its_default() -> None:
    assert driver_java_options(None) == driver_java_options("local[2]") == QUICK_JIT
    assert driver_java_options("spark://127.0.0.1:7077") is None
    assert driver_java_options("local[*]", quick_jit=False) is None
    assert driver_java_options("spark://h:7077", quick_jit=True) == QUICK_JIT


def test_the_sessions_jvm_was_started_with_them(spark: Any) -> None:
    """The option reaches the JVM: it is read at its start, so a session builder's config set later is ignored."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert QUICK_JIT in list(bean.getInputArguments())
