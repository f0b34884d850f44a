"""`make test`: the whole suite as two pytest processes at once, so the tests that need no server of their own do
not wait for the ones that do.

    serial lane  the tests marked `serial` (tests/conftest.py: a server only one process may run, such as the
                 testbed on its fixed ports; the shaped testbed; or `timing`), in collection order, its output
                 streamed here
    beside lane  the rest: the pure tests (what `make test-fast` runs) and those whose only server is a Spark session or
                 standalone cluster of their own. It runs beside the first at the lowest priority the scheduler has for
                 a process that runs at all: its own session, so its own autogroup, at nice 19 (with autogroup
                 scheduling, a nice value orders only one session's processes), with KAFKATUNE_TEST_FAST's guard (a test
                 not marked `server` that opens a socket or starts Java fails). It takes the CPU the serial lane leaves
                 idle and waits whenever the brokers or the load generator want it, so it does not disturb a
                 measurement; its output is printed after the serial lane's.

A test that could not bear waiting for the CPU (a wall-clock budget, a share of a core) is marked `timing` and
runs in the serial lane. The exit status is the first lane's failure, or 0 when both passed; a lane that collected
nothing (a PYTEST_ARGS that names only the other lane's tests) is not a failure unless both did.

    python tests/lanes.py [pytest arguments for both lanes]
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERIAL = "serial"
BESIDE = "not serial"
NO_TESTS = 5  # pytest's exit status when a run collected nothing


def _lowest_priority() -> None:
    """In the beside lane's child before exec: a session of its own (a new autogroup) at nice 19."""
    os.setsid()
    with contextlib.suppress(OSError):  # no autogroup scheduling here: the process's nice value alone orders it
        Path("/proc/self/autogroup").write_text("19")
    os.nice(19)


def main(args: list[str]) -> int:
    py = sys.executable
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        beside = subprocess.Popen(
            [py, "-m", "pytest", "-q", "-ra", "--durations=15", "-m", BESIDE, *args],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "KAFKATUNE_TEST_FAST": "1"},
            preexec_fn=_lowest_priority,
        )
        finished: list[float] = []  # when the beside lane ended, which may be long before the serial one

        def watch() -> None:
            beside.wait()
            finished.append(time.monotonic() - t0)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            serial_rc = subprocess.call([py, "-m", "pytest", "-m", SERIAL, *args], cwd=REPO)
            serial_s = time.monotonic() - t0
            beside_rc = beside.wait()
        finally:
            if beside.poll() is None:
                beside.kill()
        watcher.join(1)
        beside_s = finished[0] if finished else time.monotonic() - t0
        out.seek(0)
        print(f"\n==== the beside lane ({BESIDE}), run at the same time ====", flush=True)
        sys.stdout.write(out.read())
    print(
        f"lanes: serial exit {serial_rc} after {serial_s:.0f} s; beside exit {beside_rc} after {beside_s:.0f} s",
        flush=True,
    )
    return combined([serial_rc, beside_rc])


def combined(rcs: list[int]) -> int:
    """The suite's exit status from its lanes': the first failure; a lane that collected nothing is no failure
    unless no lane collected anything."""
    if all(rc == NO_TESTS for rc in rcs):
        return NO_TESTS
    return next((rc for rc in rcs if rc not in (0, NO_TESTS)), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
