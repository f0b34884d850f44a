"""`make test`'s two lanes (tests/lanes.py): every test runs in exactly one, and the ones that share a server or need
the CPU on time run in the serial one."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO
from tests.lanes import NO_TESTS, combined


def _collected(marks: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marks],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line for line in out.splitlines() if "::" in line}


def test_each_test_runs_in_one_lane_and_shared_servers_and_budgets_in_the_serial_one() -> None:
    serial, beside = _collected("serial"), _collected("not serial")
    assert serial and beside and not serial & beside
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
