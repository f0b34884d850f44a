"""`make test`'s two lanes (tests/lanes.py): every test runs in exactly one, and the ones that share a server or need
the CPU on time run in the serial one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO
from tests.lanes import NO_TESTS, combined

# one collection that prints each test's markers: cheaper than collecting once per lane
PRINT_MARKS = """
def pytest_collection_finish(session):
    for item in session.items:
        print("MARKS", item.nodeid, *sorted({m.name for m in item.iter_markers()}))
"""


def _marks(tmp: Path) -> dict[str, set[str]]:
    """Each test's markers, from one collection of the whole suite."""
    (tmp / "print_marks.py").write_text(PRINT_MARKS)
    path = os.pathsep.join(p for p in (str(tmp), os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "print_marks"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
    ).stdout
    return {(f := line.split(" "))[1]: set(f[2:]) for line in out.splitlines() if line.startswith("MARKS ")}


def test_each_test_runs_in_one_lane_and_shared_servers_and_budgets_in_the_serial_one(tmp_path: Path) -> None:
    marks = _marks(tmp_path)
    serial = {t for t, m in marks.items() if "serial" in m}  # the lanes select on this marker (`-m serial`)
    beside = marks.keys() - serial
    assert serial and beside
    # the testbed on its fixed ports, the shaped testbed: one process at a time; a share of a core on time
    for test in (
        "tests/e2e/test_sweep.py::test_kill_9_then_resume",
        "tests/e2e/test_shaped.py::test_the_operating_point_is_picked_from_the_fit_and_judged_on_its_own_runs",
        "tests/cluster/test_hoststats.py::test_a_process_outside_the_run_is_counted_and_named_and_one_inside_it_is_not",
    ):
        assert test in serial, test
    # pure, or a Spark session or standalone cluster of its own
    for test in (
        "tests/advisor/test_analysis.py::test_standalone_cluster_gives_the_same_tables",
        "tests/advisor/test_analysis.py::test_generated_study_recovers_the_planted_response",
        "tests/sweeps/test_confirm.py::test_the_method_on_simulated_studies_holds_its_error_rates",
    ):
        assert test in beside, test


def test_the_suites_status_is_the_first_lanes_failure_and_an_empty_lane_is_none() -> None:
    assert combined([0, 0]) == 0
    assert combined([0, NO_TESTS]) == combined([NO_TESTS, 0]) == 0
    assert combined([NO_TESTS, NO_TESTS]) == NO_TESTS
    assert combined([1, 0]) == 1 and combined([NO_TESTS, 2]) == 2 and combined([1, 2]) == 1
