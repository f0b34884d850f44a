"""Broker configs a sweep changed are put back on every exit path.

Before the first change the brokers' configs are snapshotted (records.snapshot) to
`runs/<study>/broker-snapshot-<cluster>.json` with `dirty: false`; the first apply marks it dirty.
Leaving the guard (normal end, exception, Ctrl-C, SIGTERM turned into KeyboardInterrupt by the CLI)
restores the snapshot with SIGINT/SIGTERM deferred (core.interrupts), so a second Ctrl-C cannot leave it
half-done. After a kill -9 the file is still dirty: the next sweep on that cluster restores it before it
does anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from brokerconf.apply import BrokerConfigs
from core import interrupts
from records.snapshot import BrokerSnapshot, read_snapshot, write_snapshot


class ConfigGuard:
    def __init__(self, configs: BrokerConfigs, path: Path, say: Callable[[str], None]) -> None:
        self.configs = configs
        self.path = path
        self.say = say
        self.snapshot = BrokerSnapshot({})  # taken on entering
        self.dirty = False

    def __enter__(self) -> ConfigGuard:
        old = read_snapshot(self.path)
        if old is not None and old.dirty:
            self.say(f"restoring the broker configs an interrupted sweep left changed ({self.path.name})")
            self._restore(old)
        self.snapshot = self.configs.snapshot()
        write_snapshot(self.path, self.snapshot, dirty=False)
        return self

    def mark_dirty(self) -> None:
        if not self.dirty:
            write_snapshot(self.path, self.snapshot, dirty=True)
            self.dirty = True

    def __exit__(self, *exc: object) -> None:
        if self.dirty:
            self._restore(self.snapshot)

    def _restore(self, snap: BrokerSnapshot) -> None:
        with interrupts.deferred():  # a second Ctrl-C waits until the restore is done
            changed = self.configs.restore(snap)
            for c in changed:
                self.say(f"restored {c}")
            if not changed:
                self.say("broker configs already equal the snapshot")
            write_snapshot(self.path, snap, dirty=False)
            self.dirty = False
