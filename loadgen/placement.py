"""Where load workers run, behind one interface (OMB's Worker / DistributedWorkersEnsemble idea).

A `Host` takes tasks and gives the coordinator process-like `Workers` to start and watch:

- `LocalHost`: this machine, or one of its network namespaces (a client host of the shaped testbed): one
  spawned process per task;
- `RemoteHost`: a client host reached over SSH: one channel to `python -m loadgen.agent` there, which runs
  that host's tasks and relays their reports (loadgen.agent, loadgen.wire).

Either way every worker reports on the coordinator's one queue, so a run is merged the same way wherever
its workers ran.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import shlex
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from cluster.clients import WORKER_AGENT, RemoteClient
from cluster.ssh import exit_status
from cluster.target import Placement
from core.typed import to_json
from loadgen.channel import Channel, read_step, read_timing
from loadgen.consumer import run_consumer
from loadgen.wire import decode, encode
from loadgen.worker import WorkerTask, run_producer


class Workers(Protocol):
    """What the coordinator starts and watches: a multiprocessing.Process, or all workers of a remote host."""

    name: str

    @property
    def pid(self) -> int | None: ...

    @property
    def exitcode(self) -> int | None: ...

    def start(self) -> None: ...

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...

    def terminate(self) -> None: ...


class Host(abc.ABC):
    label: str | None  # how the run record names where the workers ran (None: this host)
    # How long `go` may take to reach this host's workers: the run's t0 is set this far ahead of `go`.
    go_delay_s = 0.25

    def __init__(self) -> None:
        self.tasks: list[WorkerTask] = []

    def add(self, task: WorkerTask) -> None:
        self.tasks.append(task)

    @abc.abstractmethod
    def workers(self, ch: Channel) -> list[Workers]: ...


class LocalHost(Host):
    def __init__(self, netns: str | None) -> None:
        super().__init__()
        self.label = self.netns = netns

    def add(self, task: WorkerTask) -> None:
        self.tasks.append(dataclasses.replace(task, netns=self.netns))

    def workers(self, ch: Channel) -> list[Workers]:
        return [
            ch.ctx.Process(
                target=run_producer if t.role == "producer" else run_consumer,
                args=(t, ch.q, ch.timing, ch.go, ch.stop(t.role))
                + ((ch.pause_consumers, ch.stop_producers) if t.role == "consumer" else (ch.next_step,)),
                name=f"{t.role}-{t.wid}",
                daemon=True,
            )
            for t in self.tasks
        ]


class RemoteHost(Host):
    go_delay_s = 1.0  # relayed over SSH (RemoteWorkers._forward polls every 20 ms); a steered run's steps too

    def __init__(self, client: RemoteClient) -> None:
        super().__init__()
        self.client = client
        self.label = client.label

    def workers(self, ch: Channel) -> list[Workers]:
        return [RemoteWorkers(self.client, self.tasks, ch)] if self.tasks else []


def hosts(placements: Sequence[Placement]) -> list[Host]:
    """One Host per placement of a target (cluster.target): None or a namespace here, or a client over SSH."""
    return [RemoteHost(p) if isinstance(p, RemoteClient) else LocalHost(p) for p in placements]


class RemoteWorkers:
    """The workers placed on one remote host, behaving like one multiprocessing.Process to the runner."""

    def __init__(self, client: RemoteClient, tasks: list[WorkerTask], ch: Channel) -> None:
        self.client = client
        self.tasks = tasks
        self.ch = ch
        self.name = f"workers on {client.label}"
        self.pid: int | None = None
        self.exitcode: int | None = None
        self.hello: dict[str, Any] = {}
        self._chan: Any = None
        self._reader: threading.Thread | None = None
        self._closed = threading.Event()
        self._err: list[str] = []

    def start(self) -> None:
        agent = f"{shlex.quote(self.client.python)} -u -m {WORKER_AGENT}"
        self._chan = self.client.pool.start(self.client.target, agent)
        self.pid = 0  # started (the runner only checks that it is not None)
        # in the agent the workers run on the host itself, in no network namespace
        self._send({"tasks": [{**dataclasses.asdict(t), "netns": None} for t in self.tasks]})
        label = self.client.label
        self._reader = threading.Thread(target=self._read, name=f"read {label}", daemon=True)
        self._reader.start()
        threading.Thread(target=self._forward, name=f"control {label}", daemon=True).start()
        threading.Thread(target=self._stderr, name=f"stderr {label}", daemon=True).start()

    def _send(self, obj: Any) -> None:
        with contextlib.suppress(OSError, EOFError):
            self._chan.sendall((encode(obj) + "\n").encode())

    def _forward(self) -> None:
        """The runner's events, each as one command to the agent once it is set (in any order: consumers
        are stopped while producers end on their own time line)."""
        steps: list[tuple[Any, Callable[[], dict[str, Any]]]] = [
            (self.ch.go, lambda: {"cmd": "go", "timing": to_json(read_timing(self.ch.timing))}),
            (self.ch.stop_producers, lambda: {"cmd": "stop_producers"}),
            (self.ch.stop_consumers, lambda: {"cmd": "stop_consumers"}),
        ]
        paused, step_version = False, 0
        while steps and not self._closed.is_set():
            for step in [s for s in steps if s[0].is_set()]:
                self._send(step[1]())
                steps.remove(step)
            if self.ch.pause_consumers.is_set() != paused:  # a backlog run pauses, then resumes, its consumers
                paused = not paused
                self._send({"cmd": "pause_consumers" if paused else "resume_consumers"})
            version, at, rate = read_step(self.ch.next_step)
            if version != step_version:  # a steered run's next rate (loadgen.search)
                step_version = version
                self._send({"cmd": "step", "second": at, "msg_s": rate})
            self._closed.wait(0.02)

    def _stderr(self) -> None:
        for line in self._chan.makefile_stderr("r"):
            self._err.append(line.decode(errors="replace") if isinstance(line, bytes) else line)
            del self._err[:-40]

    def _read(self) -> None:
        codes: list[int] | None = None
        try:
            for line in self._chan.makefile("r"):
                text = line.decode() if isinstance(line, bytes) else line
                if not text.strip():
                    continue
                kind, body = decode(text)
                if kind == "q":
                    self.ch.q.put(tuple(body))
                elif kind == "hello":
                    self.hello = body
                elif kind == "exit":
                    codes = list(body)
        except (OSError, EOFError, ValueError) as e:
            self._err.append(f"reading from {self.client.label}: {e}\n")
        finally:
            self._finished(codes)

    def _finished(self, codes: list[int] | None) -> None:
        rc = exit_status(self._chan, 30) if codes is not None else None
        if codes is not None and rc == 0:
            bad = [c for c in codes if c != 0]
            self.exitcode = bad[0] if bad else 0
        else:
            self.exitcode = 255 if rc in (None, 0) else rc
            tail = "".join(self._err).strip()[-1500:]
            why = f"the remote worker agent ended without its final report: {tail or 'no output'}"
            self.ch.q.put(("error", "workers on", self.client.label, why))
        self._closed.set()

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None

    def join(self, timeout: float | None = None) -> None:
        if self._reader is not None:
            self._reader.join(timeout)

    def terminate(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()  # the agent reads end of input and stops its workers
