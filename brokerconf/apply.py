"""Apply broker configs, read them back, snapshot and restore them.

Dynamic keys are set per broker id with IncrementalAlterConfigs (confluent-kafka cannot address the
cluster-wide default resource `BROKER ""`). A broker applies a change asynchronously, so every step
waits until DescribeConfigs shows it before the next one: thread pools may only move within
[old/2, old×2] of the value the broker currently runs with. `apply` sets all brokers' keys in rounds, one
request and one wait per round (a round is each key's next legal step). Restart-only keys need a `Restarts`: the
testbed's (it rewrites each node's server.properties) or a remote cluster's (brokerconf.restarts: edits
server.properties over SSH); either restarts the brokers one at a time, each back in full ISR first.

A snapshot records, per broker, each catalogue key's value and whether it was a per-broker dynamic
override. `restore` brings a cluster back to it: overrides that existed get their old value again, the
others are deleted (thread pools stepped back first so the deletion is a legal change), and the
testbed's restart-only overrides are put back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from brokerconf import catalogue
from brokerconf.catalogue import DYNAMIC_KEYS, READ_BACK_KEYS
from brokerconf.restarts import LocalRestarts, Progress, Restarts
from cluster import admin as kadmin
from core.errors import RunFailed
from records.snapshot import OVERRIDE, BrokerSnapshot, Setting


def _retriable(e: KafkaException) -> bool:
    err = e.args[0] if e.args else None
    return isinstance(err, KafkaError) and (err.retriable() or err.code() == KafkaError._TIMED_OUT)


class ConfigMismatch(RunFailed):
    """A broker does not run with the value that was set (read back through DescribeConfigs)."""


@dataclass
class Applied:
    """What one apply did: the values read back per broker, and how many node restarts it took."""

    read_back: dict[str, dict[str, str | None]] = field(default_factory=dict)  # broker id -> key -> value
    restarts: int = 0
    steps: int = 0


class BrokerConfigs:
    def __init__(
        self,
        admin: AdminClient,
        broker_ids: list[int],
        *,
        testbed: Any = None,
        restarts: Restarts | None = None,
        progress: Progress = print,
        settle_timeout_s: float = 30,
        reconnect: Callable[[], AdminClient] | None = None,
    ) -> None:
        self.admin = admin
        self.reconnect = reconnect
        self.broker_ids = broker_ids
        self.restarts: Restarts | None = LocalRestarts(testbed) if testbed is not None else restarts
        self.progress = progress
        self.settle_timeout_s = settle_timeout_s

    @classmethod
    def connect(cls, bootstrap: str, admin_conf: Mapping[str, str] | None = None, **kw: Any) -> BrokerConfigs:
        def new() -> AdminClient:
            return kadmin.admin_client(bootstrap, admin_conf)

        a = new()
        return cls(a, kadmin.live_brokers(a, timeout_s=10), reconnect=new, **kw)

    # ---- reading -----------------------------------------------------------------------------------
    def describe(self, broker_id: int, keys: tuple[str, ...] | list[str]) -> dict[str, tuple[str | None, str]]:
        """key -> (value, source name) as the broker reports them now."""
        res = ConfigResource("BROKER", str(broker_id))
        for attempt in range(3):  # a broker busy compiling or collecting garbage can miss one timeout
            try:
                entries = self.admin.describe_configs([res], request_timeout=10)[res].result(timeout=15)
                break
            except KafkaException as exc:
                gone = kadmin.down(self.admin, [broker_id]) if _retriable(exc) else []  # no use waiting again
                if attempt == 2 or not _retriable(exc) or gone:
                    raise RunFailed(
                        f"cannot read the configs of broker {broker_id}: {'; '.join([*gone, str(exc)])}"
                    ) from None
                time.sleep(1 + attempt)
                if self.reconnect is not None:
                    # after a rolling restart an old client can stay stuck on a dead connection
                    self.admin = self.reconnect()
        out = {}
        for k in keys:
            e = entries.get(k)
            if e is None:
                raise RunFailed(f"broker {broker_id} does not know config {k!r}")
            out[k] = (e.value, ConfigSource(e.source).name)
        return out

    def read_back(self, keys: list[str]) -> dict[str, dict[str, str | None]]:
        return {str(b): {k: v for k, (v, _) in self.describe(b, keys).items()} for b in self.broker_ids}

    # ---- snapshot / restore ------------------------------------------------------------------------
    def snapshot(self) -> BrokerSnapshot:
        """What every broker runs now for the dynamic catalogue keys, and the restart-only overrides."""
        brokers = {
            str(b): {k: Setting(v, s) for k, (v, s) in self.describe(b, DYNAMIC_KEYS).items()} for b in self.broker_ids
        }
        restart = self.restarts.snapshot() if self.restarts is not None else None
        return BrokerSnapshot(brokers, restart, taken_ns=time.time_ns())

    def restore(self, snap: BrokerSnapshot, *, skip: tuple[str, ...] = (), restart: bool = True) -> list[str]:
        """Bring the brokers back to `snap` (except keys in `skip`); returns what changed."""
        changed: list[str] = []
        if restart and snap.restart_overrides is not None and self.restarts is not None:
            changed += self.restarts.restore(snap.restart_overrides, self.progress)
        for b, keys in snap.brokers.items():
            now = self.describe(int(b), list(keys))
            for k, old in keys.items():
                if k in skip:
                    continue
                val, src = now[k]
                if val == old.value and (src == OVERRIDE) == old.override:
                    continue
                changed.append(f"broker {b} {k}: {val} -> {old.value}")
                p = catalogue.param(k)
                if p.thread_pool and val is not None and old.value is not None:
                    for step in catalogue.thread_pool_steps(int(val), int(old.value)):
                        self._alter(int(b), k, str(step))
                        self._await(int(b), k, str(step), override=True)
                self._alter(int(b), k, old.value if old.override else None)
                self._await(int(b), k, old.value, override=old.override)
        return changed

    # ---- applying ----------------------------------------------------------------------------------
    def apply(self, dynamic: Mapping[str, str], restart: Mapping[str, str], snap: BrokerSnapshot) -> Applied:
        """Make the brokers run `snap` overlaid with `dynamic` and `restart`; verify what was set.

        Keys a previous trial changed and this one does not set go back to the snapshot first, so a
        trial's record describes the whole broker state it ran with.
        """
        out = Applied()
        if gone := kadmin.down(self.admin, self.broker_ids):  # nothing half-applied on a cluster that lost a broker
            raise RunFailed(f"not applied: {'; '.join(gone)}")
        if self.restarts is not None:
            out.restarts = self.restarts.apply(snap.restart_overrides, restart, self.progress)
        elif restart:
            raise RunFailed(
                f"{', '.join(restart)} need a broker restart: possible on the testbed or a cluster with an inventory"
            )
        self.restore(snap, skip=tuple(dynamic), restart=False)
        plan: dict[tuple[int, str], list[str]] = {}  # (broker, key) -> the values to set, in order
        for b in self.broker_ids:
            cur = self.describe(b, list(dynamic))
            for k, v in dynamic.items():
                have = cur[k][0]
                if catalogue.param(k).thread_pool and have is not None and have != v:
                    plan[(b, k)] = [str(s) for s in catalogue.thread_pool_steps(int(have), int(v))]
                elif not (have == v and cur[k][1] == OVERRIDE):
                    plan[(b, k)] = [v]
        # Round i sets every (broker, key)'s i-th value in one request and waits for all of them: a thread pool
        # still moves one legal step at a time, other keys and brokers no longer wait on each other.
        for i in range(max((len(v) for v in plan.values()), default=0)):
            batch: dict[int, dict[str, str]] = {}
            for (b, k), values in plan.items():
                if i < len(values):
                    batch.setdefault(b, {})[k] = values[i]
            self._alter_many(batch)
            self._await_many(batch)
            out.steps += sum(len(kv) for kv in batch.values())
        # Every catalogue broker key, not only the ones set: the record shows the whole broker state.
        out.read_back = self.read_back(list(READ_BACK_KEYS))
        want = {**dynamic, **restart}
        bad = [
            f"broker {b} {k}={got[k]!r} (set {want[k]!r})"
            for b, got in out.read_back.items()
            for k in want
            if got[k] != want[k]
        ]
        if bad:
            raise ConfigMismatch("configs did not take effect: " + "; ".join(bad))
        return out

    def _alter(self, broker_id: int, key: str, value: str | None) -> None:
        self._alter_many({broker_id: {key: value}})

    def _alter_many(self, batch: Mapping[int, Mapping[str, str | None]]) -> None:
        """Set (None: delete the override of) every broker's keys of `batch`: one IncrementalAlterConfigs request
        per broker (librdkafka allows one BROKER resource a call), all sent before any answer is awaited."""
        pending = []
        for b, kv in batch.items():
            entries = [
                ConfigEntry(
                    k, v, incremental_operation=AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE
                )
                for k, v in kv.items()
            ]
            res = ConfigResource("BROKER", str(b), incremental_configs=entries)
            pending.append((b, self.admin.incremental_alter_configs([res], request_timeout=20)[res]))
        for b, f in pending:
            try:
                f.result(timeout=30)
            except Exception as e:
                what = ", ".join(f"{k}={v}" for k, v in batch[b].items())
                raise RunFailed(f"broker {b} refused {what}: {e}") from None

    def _await(self, broker_id: int, key: str, value: str | None, *, override: bool) -> None:
        self._await_many({broker_id: {key: value}}, override=override)

    def _await_many(self, batch: Mapping[int, Mapping[str, str | None]], *, override: bool = True) -> None:
        """Wait until every broker of `batch` reports each of its values, as a dynamic override or not (the change
        travels through the metadata log; DescribeConfigs every 50 ms). The source matters: deleting an override
        equal to the default leaves the value unchanged, and only the source shows whether the delete has landed."""
        deadline = time.monotonic() + self.settle_timeout_s
        pending = {b: dict(kv) for b, kv in batch.items() if kv}
        seen: dict[tuple[int, str], tuple[str | None, str]] = {}
        while pending:
            for b in list(pending):
                for k, got in self.describe(b, list(pending[b])).items():
                    seen[(b, k)] = got
                    if got[0] == pending[b][k] and (got[1] == OVERRIDE) == override:
                        del pending[b][k]
                if not pending[b]:
                    del pending[b]
            if pending and time.monotonic() > deadline:
                b, kv = next(iter(pending.items()))
                k = next(iter(kv))
                got = seen.get((b, k), (None, ""))
                state = "an override" if override else "no override"
                raise ConfigMismatch(
                    f"broker {b} still reports {k}={got[0]!r} ({got[1]}) {self.settle_timeout_s:.0f} s after "
                    f"{kv[k]!r} as {state} was set"
                )
            if pending:
                time.sleep(0.05)


def current_configs(
    bootstrap: str, conf: Mapping[str, str], progress: Progress
) -> dict[str, dict[str, str | None]] | None:
    """The catalogue's broker keys as each broker runs them (for a run's record), or None when the cluster
    does not let us read them: a cluster that refuses DescribeConfigs still gets measured."""
    try:
        bc = BrokerConfigs.connect(
            bootstrap, {k: v for k, v in conf.items() if k != "bootstrap.servers"}, progress=progress
        )
        return bc.read_back(list(READ_BACK_KEYS))
    except Exception as e:
        progress(f"note: broker configs not recorded ({e})")
        return None
