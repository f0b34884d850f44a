"""The host's page-cache writeback while a testbed is up: continuous, not a burst every half minute.

A testbed's three brokers share one disk and one page cache. With Linux's defaults (dirty data written back once
it is 30 s old, or once 10 % of memory is dirty) their writes leave together, in one burst every 30 s; every fsync
meanwhile (the KRaft metadata log fsyncs each append, a rolled segment is flushed) waits behind it, so the
controllers miss their fetch timeouts and all three brokers stall at once. Brokers on separate machines do not
stall together, so the stall is the testbed's, not the cluster's under test. While a testbed is up the host
writes back continuously instead (SMOOTH: background writeback from 16 MiB of dirty data, and every second for
data a second old), the behaviour Kafka's documentation describes tuning in its Linux flush section.

The settings are the machine's, shared by every testbed on it: the first `apply` keeps the values it found in
HOLD (with the state folders that hold them), the last `release` puts them back. A testbed that was killed
without `down` holds nothing once none of its nodes runs (after a grace for one still starting). Without root
nothing is changed and `apply` says so. The before and after are measured by `benchmarks/writeback.py`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypedDict

from core import procs
from records.testbed import load_state, node_config, state_path

PROC = Path("/proc/sys/vm")
HOLD = Path("/run/kafkatune/writeback.json")
SMOOTH = {"dirty_background_bytes": 16 * 1024 * 1024, "dirty_expire_centisecs": 100, "dirty_writeback_centisecs": 100}
STARTING_S = 600  # a holder applied this recently is up whether or not its nodes run yet
# What `release` puts back: the background threshold is either bytes or a ratio (writing one zeroes the other).
KEPT = ("dirty_background_bytes", "dirty_background_ratio", "dirty_expire_centisecs", "dirty_writeback_centisecs")


def read(proc: Path = PROC) -> dict[str, int]:
    """The writeback settings the kernel runs now."""
    return {k: int((proc / k).read_text().split()[0]) for k in KEPT}


def as_found(before: Mapping[str, int]) -> dict[str, int]:
    """What puts `before` (a `read`) back: its background threshold as bytes or as a ratio, whichever was set."""
    threshold = "dirty_background_bytes" if before["dirty_background_bytes"] else "dirty_background_ratio"
    return {k: before[k] for k in (threshold, *KEPT[2:])}


def put(values: Mapping[str, int], proc: Path = PROC) -> None:
    """Write `values` (names under /proc/sys/vm) as they are: a benchmark's arms, `apply` and `release`."""
    for k, v in values.items():
        (proc / k).write_text(f"{v}\n")


class Held(TypedDict):
    """HOLD's content: the values found before the first `apply`, and the state folders of the testbeds up with
    when each applied (epoch s)."""

    before: dict[str, int]
    holders: dict[str, float]


def _held(hold: Path) -> Held | None:
    if not hold.exists():
        return None
    raw = json.loads(hold.read_text())
    return Held(
        before={k: int(v) for k, v in raw["before"].items()},
        holders={str(h): float(t) for h, t in dict(raw["holders"]).items()},
    )


def _up(state_dir: Path, applied: float) -> bool:
    """Whether the testbed in `state_dir` still holds the settings: applied moments ago, or a node of it runs."""
    if time.time() - applied < STARTING_S:
        return True
    try:
        st = load_state(state_path(state_dir))
    except (OSError, ValueError, KeyError, TypeError):  # no state, or an unreadable one: no testbed runs there
        return False
    return any(procs.running(pid, str(node_config(state_dir, int(n)))) for n, pid in st.pids.items())


def found(proc: Path = PROC, hold: Path = HOLD) -> dict[str, int]:
    """The settings this machine had before any testbed changed them (HOLD's, else the kernel's now)."""
    held = _held(hold)
    return held["before"] if held else read(proc)


@contextlib.contextmanager
def _locked(hold: Path) -> Iterator[None]:
    """HOLD's read-modify-write as one step: of two testbeds coming up at once (a developer's beside the suite's)
    both keep their holder, and only the first keeps the values it found."""
    hold.parent.mkdir(parents=True, exist_ok=True)
    with open(hold.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def apply(state_dir: Path, *, proc: Path = PROC, hold: Path = HOLD) -> dict[str, int] | str:
    """Make writeback continuous while the testbed in `state_dir` is up; the settings now in force, or why they
    were left as they are (not root)."""
    if not os.access(proc / "dirty_background_bytes", os.W_OK):
        return "left as the kernel has them: changing vm.dirty_* needs root"
    with _locked(hold):
        held = _held(hold) or Held(before=read(proc), holders={})
        held["holders"][str(state_dir.resolve())] = time.time()
        hold.write_text(json.dumps(held, indent=1))
        put(SMOOTH, proc)
        return read(proc)


def release(state_dir: Path, *, proc: Path = PROC, hold: Path = HOLD) -> dict[str, int] | None:
    """The testbed in `state_dir` no longer needs continuous writeback: when no other testbed does (`_up`), the
    values found before the first `apply` are put back and returned."""
    if not hold.exists():
        return None
    with _locked(hold):
        held = _held(hold)
        if held is None:
            return None
        mine = str(state_dir.resolve())
        held["holders"] = {h: t for h, t in held["holders"].items() if h != mine and _up(Path(h), t)}
        if held["holders"]:
            hold.write_text(json.dumps(held, indent=1))
            return None
        put(as_found(held["before"]), proc)
        hold.unlink()
        return held["before"]
