"""A step under core.interrupts.deferred() finishes before Ctrl-C or SIGTERM takes effect."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import REPO

# a signal must act within a deadline: run where the CPU comes when asked (tests/lanes.py)
pytestmark = pytest.mark.timing

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from core import interrupts

    sig = getattr(signal, sys.argv[1])
    interrupts.interrupt_on_signals()  # as the sweep CLI and the benchmarks do
    # another thread that does not block anything, like paramiko's transport threads
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
    try:
        with interrupts.deferred():
            os.kill(os.getpid(), sig)
            time.sleep(0.5)
            print("step done", flush=True)
        print("not reached", flush=True)
    except KeyboardInterrupt:
        print("interrupted after the step", flush=True)
    with interrupts.deferred():  # no signal: nothing happens afterwards
        pass
    print("handlers back:", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
    """
)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_during_a_deferred_step_acts_after_it(sig: str) -> None:
    # started as a background job of a non-interactive shell is: SIGINT ignored (what `cmd &` in a script does)
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT, sig],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["step done", "interrupted after the step", "handlers back: True"], p.stdout
