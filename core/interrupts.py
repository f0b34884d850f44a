"""Steps that must not be cut in half by Ctrl-C or SIGTERM: the signal waits until the step is done.

Blocking the signals with pthread_sigmask is not enough in a process with other threads (paramiko's
transports, the result queue's feeder): the kernel hands the signal to a thread that does not block it, and
Python then raises KeyboardInterrupt in the main thread anyway. Here the Python-level handlers are
swapped for ones that only note the signal; the old handlers come back at the end of the step, and a noted
signal is then acted on as it would have been (KeyboardInterrupt for SIGINT, the CLI's handler for SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def interrupt_on_signals() -> None:
    """Make Ctrl-C and `kill` both raise KeyboardInterrupt in the main thread, so every `finally` (config
    restore, testbed teardown) runs. SIGINT explicitly: a shell that starts a job in the background (`cmd &`
    without job control) leaves SIGINT ignored for it, and a plain `kill` would otherwise skip every cleanup."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread runs signal handlers (and may change them)
        return
    noted: list[int] = []
    old: dict[int, Any] = {}
    for sig in SIGNALS:
        old[sig] = signal.signal(sig, lambda signum, _frame: noted.append(signum))
    try:
        yield
    finally:
        for num, h in old.items():
            signal.signal(num, h)
    if noted:
        first = noted[0]
        h = old[first]
        if callable(h):
            h(first, None)
        elif h == signal.SIG_DFL and first == signal.SIGINT:
            raise KeyboardInterrupt
        elif h == signal.SIG_DFL:
            signal.raise_signal(first)
