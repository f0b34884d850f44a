"""Restart-only broker configs (read at start only, such as replica.fetch.max.bytes): rolling restarts.

A `Restarts` snapshots them, applies a set by restarting brokers one at a time (each back in full ISR
before the next goes down, so min.insync.replicas=2 topics stay writable), restores, and heals.

`LocalRestarts`: the testbed, which rewrites each node's server.properties from its state.

`RemoteRestarts`: a cluster kafkatune did not start, over SSH (an inventory's brokers). Before the first
change each broker's server.properties is copied beside itself as `server.properties.kafkatune-backup` (the
file as the sweep found it). A change edits only the swept keys over SFTP (written to a temporary file,
then renamed), runs the inventory's restart command for that broker, and waits until the broker is back
in the cluster and no partition is under-replicated. Restoring writes the swept keys back; a file whose
swept keys and other lines all equal the backup gets the backup's exact bytes again. Dynamic configs
still go through the Admin API (brokerconf.apply).

The restart command must return once the old broker process is gone (`systemctl restart kafka` does).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from brokerconf.catalogue import RESTART_KEYS, defaults
from brokerconf.properties import parse_text, set_keys, without_keys
from cluster import admin as kadmin
from cluster.inventory import Broker, Inventory
from cluster.ssh import SshPool, Target
from core import interrupts
from core.errors import RunFailed
from testbed.lifecycle import Testbed

BACKUP_SUFFIX = ".kafkatune-backup"
Progress = Callable[[str], None]


class Restarts(Protocol):
    """Who can change restart-only broker configs: a snapshot of them, and a rolling apply."""

    def snapshot(self) -> Any:
        """The restart-only configs the brokers run with now (JSON-able)."""

    def apply(self, snap: Any, restart: Mapping[str, str], progress: Progress) -> int:
        """Run `snap` overlaid with `restart`; rolling restart where that changes a broker. Returns restarts."""

    def restore(self, snap: Any, progress: Progress) -> list[str]:
        """Back to `snap`; what changed, in words."""

    def heal(self, progress: Progress) -> object:
        """Every broker serving and every ISR full again (after a trial that broke something)."""


class LocalRestarts:
    """The local testbed: one set of overrides for every node, applied by a rolling restart."""

    def __init__(self, testbed: Testbed) -> None:
        self.testbed = testbed

    def snapshot(self) -> dict[str, str]:
        return dict(self.testbed.state().overrides)

    def apply(self, snap: Any, restart: Mapping[str, str], progress: Progress) -> int:
        """A key set to Kafka's default is left unset rather than written: the brokers run the same either way,
        and the overrides then compare equal, so no rolling restart happens just to spell a default."""
        want, kafka = dict(snap or {}), defaults()
        for k, v in restart.items():
            if k in kafka and str(kafka[k]) == str(v):
                want.pop(k, None)
            else:
                want[k] = v
        return int(self.testbed.set_overrides(want, progress=progress))

    def restore(self, snap: Any, progress: Progress) -> list[str]:
        want = dict(snap or {})
        if self.testbed.state().overrides == want:
            return []
        self.testbed.set_overrides(want, progress=progress)
        return [f"restart-only configs back to {want or 'Kafka defaults'} (rolling restart)"]

    def heal(self, progress: Progress) -> object:
        return self.testbed.heal(progress=progress)


class RemoteRestarts:
    """A cluster of an inventory: each broker's server.properties edited over SSH, then its restart command."""

    def __init__(
        self,
        inv: Inventory,
        pool: SshPool,
        admin: Callable[[], AdminClient],
        *,
        rejoin_timeout_s: float = 300,
        keys: tuple[str, ...] = RESTART_KEYS,
    ) -> None:
        self.inv = inv
        self.pool = pool
        self.admin = admin
        self.rejoin_timeout_s = rejoin_timeout_s
        self.keys = keys

    def target(self, b: Broker) -> Target:
        return Target.of(self.inv, b)

    def backup_path(self, b: Broker) -> str:
        return b.server_properties + BACKUP_SUFFIX

    def _read(self, b: Broker) -> str:
        return self.pool.read_file(self.target(b), b.server_properties)

    def _values(self, b: Broker, text: str) -> dict[str, str | None]:
        got = parse_text(text, f"{self.target(b).label}: {b.server_properties}")
        return {k: got.get(k) for k in self.keys}

    # ---- Restarts protocol -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, dict[str, str | None]]:
        """Per broker id, each restart-only key's value in server.properties (None: not set there).

        Also (re)makes the backups: the guard restores what an interrupted sweep left changed before it
        takes a snapshot, so the files now are the ones to come back to.
        """
        out = {}
        for b in self.inv.brokers:
            t = self.target(b)
            q, bk = shlex.quote(b.server_properties), shlex.quote(self.backup_path(b))
            self.pool.run(t, f"cp -p {q} {bk}", timeout_s=60)
            out[str(b.id)] = self._values(b, self._read(b))
        return out

    def apply(self, snap: Any, restart: Mapping[str, str], progress: Progress) -> int:
        n = 0
        for b in self.inv.brokers:
            base = (snap or {}).get(str(b.id)) or {k: None for k in self.keys}
            want: dict[str, str | None] = {**base, **restart}
            if self._set(b, want, progress):
                n += 1
        return n

    def restore(self, snap: Any, progress: Progress) -> list[str]:
        changed = []
        for b in self.inv.brokers:
            want = (snap or {}).get(str(b.id))
            if want is None:
                continue
            before = self._values(b, self._read(b))
            if self._set(b, want, progress):
                diff = {k: v for k, v in want.items() if before.get(k) != v}
                changed.append(f"broker {b.id} server.properties back to {diff} (restarted)")
        return changed

    def heal(self, progress: Progress) -> object:
        """Restart (with the inventory's command) the brokers that are not in the cluster; wait for full ISR."""
        a = self.admin()
        live = set(kadmin.live_brokers(a, timeout_s=10))
        dead = [b for b in self.inv.brokers if b.id not in live]
        for b in dead:
            progress(f"healing: broker {b.id} is not in the cluster; restarting it")
            self._restart(b, progress)
        kadmin.wait_full_isr(a, timeout_s=self.rejoin_timeout_s, progress=progress)
        return [b.id for b in dead]

    # ---- one broker --------------------------------------------------------------------------------
    def _set(self, b: Broker, want: Mapping[str, str | None], progress: Progress) -> bool:
        """Make `b`'s server.properties carry `want`; restart it if that changed the file."""
        t = self.target(b)
        text = self._read(b)
        if self._values(b, text) == {k: want.get(k) for k in self.keys}:
            return False
        new = set_keys(text, {k: want.get(k) for k in self.keys})
        try:
            backup = self.pool.read_file(t, self.backup_path(b))
        except OSError:
            backup = None
        if (
            backup is not None
            and self._values(b, backup) == self._values(b, new)
            and without_keys(backup, self.keys) == without_keys(new, self.keys)
        ):
            new = backup  # back to the file as found, byte for byte
        # one broker is a step Ctrl-C does not cut: an interrupted restart command may still be running on
        # the host when the restore starts the same command again
        with interrupts.deferred():
            progress(f"broker {b.id}: writing {', '.join(f'{k}={want.get(k)}' for k in self.keys if k in want)}")
            self.pool.write_file(t, b.server_properties, new)
            self._restart(b, progress)
        return True

    def _restart(self, b: Broker, progress: Progress) -> None:
        t = self.target(b)
        progress(f"broker {b.id}: restarting ({b.restart})")
        self.pool.run(t, b.restart, timeout_s=self.rejoin_timeout_s)
        a = self.admin()
        deadline = time.monotonic() + self.rejoin_timeout_s
        while True:
            try:
                if b.id in kadmin.live_brokers(a, timeout_s=5):
                    break
            except Exception:  # metadata briefly unavailable while it starts
                pass
            if time.monotonic() > deadline:
                raise RunFailed(
                    f"broker {b.id} did not rejoin the cluster {self.rejoin_timeout_s:.0f} s after a restart"
                )
            time.sleep(0.5)
        try:
            kadmin.wait_full_isr(a, timeout_s=max(10.0, deadline - time.monotonic()), progress=progress)
        except TimeoutError as e:
            raise RunFailed(f"after restarting broker {b.id}: {e}") from None
        progress(f"broker {b.id}: back, every partition in sync")

    def files_equal_backups(self) -> dict[int, bool]:
        """Per broker id: does server.properties equal the backup byte for byte?"""
        out = {}
        for b in self.inv.brokers:
            t = self.target(b)
            q, bk = shlex.quote(b.server_properties), shlex.quote(self.backup_path(b))
            out[b.id] = self.pool.run(t, f"cmp -s {q} {bk}", check=False).rc == 0
        return out
