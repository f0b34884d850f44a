"""The host's writeback settings while testbeds are up (testbed.writeback), on a folder standing in for
/proc/sys/vm: the first testbed up makes writeback continuous, the last one down puts back what it found."""

from __future__ import annotations

import fcntl
import json
import threading
from pathlib import Path

from testbed import writeback

STOCK = {"dirty_background_bytes": 0, "dirty_background_ratio": 10, "dirty_expire_centisecs": 3000}


def vm(tmp: Path, values: dict[str, int]) -> Path:
    proc = tmp / "vm"
    proc.mkdir()
    for k, v in {**values, "dirty_writeback_centisecs": 500}.items():
        (proc / k).write_text(f"{v}\n")
    return proc


def test_the_last_testbed_down_puts_back_what_the_first_found(tmp_path: Path) -> None:
    proc, hold = vm(tmp_path, STOCK), tmp_path / "run" / "writeback.json"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    now = writeback.apply(a, proc=proc, hold=hold)
    assert now == {**writeback.SMOOTH, "dirty_background_ratio": 10}  # the file as written; the kernel zeroes it
    assert writeback.apply(b, proc=proc, hold=hold) == now
    assert writeback.found(proc, hold) == {**STOCK, "dirty_writeback_centisecs": 500}  # not the smooth values
    assert writeback.release(a, proc=proc, hold=hold) is None  # b is still up
    assert writeback.read(proc)["dirty_expire_centisecs"] == 100
    assert writeback.release(b, proc=proc, hold=hold) == {**STOCK, "dirty_writeback_centisecs": 500}
    assert not hold.exists()
    after = writeback.read(proc)
    assert (after["dirty_background_ratio"], after["dirty_expire_centisecs"], after["dirty_writeback_centisecs"]) == (
        10,
        3000,
        500,
    )
    assert writeback.release(a, proc=proc, hold=hold) is None  # nothing held: nothing to do


def test_a_testbed_killed_without_down_holds_nothing_one_starting_does(tmp_path: Path) -> None:
    """`killed` applied an hour ago and has no running node (no state at all); `starting` applied a moment ago and
    has none yet: the first holds nothing, the second holds the settings until its own release."""
    proc, hold = vm(tmp_path, {**STOCK, "dirty_background_bytes": 1 << 20}), tmp_path / "writeback.json"
    killed, starting, mine = tmp_path / "killed", tmp_path / "starting", tmp_path / "mine"
    for d in (killed, starting, mine):
        d.mkdir()
        writeback.apply(d, proc=proc, hold=hold)
    doc = json.loads(hold.read_text())
    doc["holders"][str(killed.resolve())] -= 3600
    hold.write_text(json.dumps(doc))
    assert writeback.release(mine, proc=proc, hold=hold) is None  # `starting` holds them
    assert list(json.loads(hold.read_text())["holders"]) == [str(starting.resolve())]  # `killed` dropped
    put_back = writeback.release(starting, proc=proc, hold=hold)
    assert put_back is not None and put_back["dirty_background_bytes"] == 1 << 20
    assert writeback.read(proc)["dirty_background_bytes"] == 1 << 20  # set as bytes, put back as bytes


def test_without_write_access_nothing_is_changed_and_it_says_why(tmp_path: Path) -> None:
    """As a user without root: the settings cannot be written (here: there is nothing to write to)."""
    hold = tmp_path / "writeback.json"
    said = writeback.apply(tmp_path, proc=tmp_path / "no-vm", hold=hold)
    assert isinstance(said, str) and "needs root" in said and not hold.exists()


def test_a_testbed_coming_up_while_another_writes_the_hold_waits_its_turn(tmp_path: Path) -> None:
    """Two testbeds coming up at once (a developer's beside the suite's): each `apply` and `release` rewrites the
    hold under its lock, so neither holder is lost."""
    proc, hold = vm(tmp_path, STOCK), tmp_path / "run" / "writeback.json"
    hold.parent.mkdir()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    writeback.apply(a, proc=proc, hold=hold)
    with open(hold.with_suffix(".lock"), "w") as lock:  # another testbed is rewriting the hold
        fcntl.flock(lock, fcntl.LOCK_EX)
        second = threading.Thread(target=writeback.apply, args=(b,), kwargs={"proc": proc, "hold": hold})
        second.start()
        second.join(0.5)
        assert second.is_alive() and str(b.resolve()) not in hold.read_text()  # waiting, nothing written
    second.join(10)
    assert not second.is_alive()
    assert set(json.loads(hold.read_text())["holders"]) == {str(a.resolve()), str(b.resolve())}
