"""Load workers on other machines, started over SSH, feeding the same run as local workers.

The coordinator (drivers.runner) places each producer and consumer on a client host. For a host reached
over SSH it opens one channel running `PYTHON -m drivers.remote_workers` there (an interpreter with
kafkatune installed, from the inventory's `clients[].python`). Over that channel, as JSON lines:

- coordinator -> agent: the tasks first (client configs travel here, never on a command line, so a SASL
  password is not visible in `ps`), then `go` with the run's time line, `stop_producers`,
  `stop_consumers`. End of input (the coordinator died or closed the channel) stops every worker.
- agent -> coordinator: `hello` (the address it was reached at), every message its workers put on their
  queue (ticks with encoded HdrHistograms, `done` records with the sequence maps) and, last, `exit` with
  the workers' exit codes.

The coordinator puts the workers' messages on its own queue, so the run is merged exactly as if every
worker were local: counts add up, histograms merge losslessly. Clocks must be synchronised (NTP/PTP):
the time line is wall-clock nanoseconds, as end-to-end latency is.

Nothing is unpickled: the codec is JSON with tagged bytes and non-string-keyed mappings.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import multiprocessing as mp
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from cluster.clients import WORKER_AGENT, RemoteClient
from drivers.worker import TIMING_FIELDS, WorkerTask, read_timing, run_consumer, run_producer


# ---- codec -------------------------------------------------------------------------------------------
def _enc(v: Any) -> Any:
    if isinstance(v, bytes | bytearray):
        return {"$b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {k: _enc(x) for k, x in v.items()}
        return {"$d": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, list | tuple):
        return [_enc(x) for x in v]
    return v


def _dec(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"$b"}:
            return base64.b64decode(v["$b"])
        if set(v) == {"$d"}:
            return {_dec(k): _dec(x) for k, x in v["$d"]}
        return {k: _dec(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_dec(x) for x in v]
    return v


def encode(obj: Any) -> str:
    return json.dumps(_enc(obj), separators=(",", ":"))


def decode(line: str) -> Any:
    return _dec(json.loads(line))


# ---- the agent, on the client host ------------------------------------------------------------------------
def agent(stdin: Any = None, stdout: Any = None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    lock = threading.Lock()

    def send(obj: Any) -> None:
        with lock:
            stdout.write(encode(obj) + "\n")
            stdout.flush()

    first = stdin.readline()
    if not first:
        return 2
    tasks = [WorkerTask(**{**t, "netns": None}) for t in decode(first)["tasks"]]
    conn = os.environ.get("SSH_CONNECTION", "").split()
    send(["hello", {"address": conn[2] if len(conn) == 4 else None, "pid": os.getpid(), "workers": len(tasks)}])

    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    timing = ctx.Array("q", len(TIMING_FIELDS), lock=False)
    go, stop_p, stop_c = ctx.Event(), ctx.Event(), ctx.Event()
    procs = []
    for t in tasks:
        target, stop = (run_producer, stop_p) if t.role == "producer" else (run_consumer, stop_c)
        procs.append(ctx.Process(target=target, args=(t, q, timing, go, stop), name=f"{t.role}-{t.wid}", daemon=True))
    for p in procs:
        p.start()

    def control() -> None:
        for line in stdin:
            cmd = decode(line)
            if cmd.get("cmd") == "go":
                for i, k in enumerate(TIMING_FIELDS):
                    timing[i] = int(cmd["timing"][k])
                go.set()
            elif cmd.get("cmd") == "stop_producers":
                stop_p.set()
            elif cmd.get("cmd") == "stop_consumers":
                stop_c.set()
        # the coordinator is gone: every worker stops (a worker waiting for `go` is released to stop)
        stop_p.set()
        stop_c.set()
        go.set()

    def relay() -> None:
        while True:
            m = q.get()
            if m is None:
                return
            send(["q", m])

    threading.Thread(target=control, daemon=True).start()
    relay_t = threading.Thread(target=relay, daemon=True)
    relay_t.start()
    for p in procs:
        p.join()
    q.put(None)
    relay_t.join(timeout=30)
    send(["exit", [p.exitcode for p in procs]])
    return 0


# ---- the coordinator's side ----------------------------------------------------------------------------
class RemoteWorkers:
    """The workers placed on one remote host, behaving like one multiprocessing.Process to the runner."""

    def __init__(
        self,
        client: RemoteClient,
        tasks: list[WorkerTask],
        q: Any,
        timing: Any,
        go: Any,
        stop_producers: Any,
        stop_consumers: Any,
    ) -> None:
        self.client = client
        self.tasks = tasks
        self.q, self.timing, self.go = q, timing, go
        self.stop_producers, self.stop_consumers = stop_producers, stop_consumers
        self.name = f"workers on {client.label}"
        self.pid: int | None = None
        self.exitcode: int | None = None
        self.hello: dict[str, Any] = {}
        self._chan: Any = None
        self._reader: threading.Thread | None = None
        self._closed = threading.Event()
        self._err: list[str] = []

    def start(self) -> None:
        import shlex

        c = self.client.pool.client(self.client.target)
        transport = c.get_transport()
        self._chan = transport.open_session()
        self._chan.exec_command(f"{shlex.quote(self.client.python)} -u -m {WORKER_AGENT}")
        self.pid = 0  # started (the runner only checks that it is not None)
        self._send({"tasks": [dataclasses.asdict(t) for t in self.tasks]})
        self._reader = threading.Thread(target=self._read, name=f"read {self.client.label}", daemon=True)
        self._reader.start()
        threading.Thread(target=self._forward, name=f"control {self.client.label}", daemon=True).start()
        threading.Thread(target=self._stderr, name=f"stderr {self.client.label}", daemon=True).start()

    def _send(self, obj: Any) -> None:
        with contextlib.suppress(OSError, EOFError):
            self._chan.sendall((encode(obj) + "\n").encode())

    def _forward(self) -> None:
        """The runner's events, each as one command to the agent once it is set (in any order: consumers
        are stopped while producers end on their own time line)."""
        steps: list[tuple[Any, Callable[[], dict[str, Any]]]] = [
            (self.go, lambda: {"cmd": "go", "timing": read_timing(self.timing)}),
            (self.stop_producers, lambda: {"cmd": "stop_producers"}),
            (self.stop_consumers, lambda: {"cmd": "stop_consumers"}),
        ]
        while steps and not self._closed.is_set():
            for step in [s for s in steps if s[0].is_set()]:
                self._send(step[1]())
                steps.remove(step)
            self._closed.wait(0.02)

    def _stderr(self) -> None:
        f = self._chan.makefile_stderr("r")
        for line in f:
            text = line.decode(errors="replace") if isinstance(line, bytes) else line
            self._err.append(text)
            del self._err[:-40]

    def _read(self) -> None:
        f = self._chan.makefile("r")
        codes: list[int] | None = None
        try:
            for line in f:
                text = line.decode() if isinstance(line, bytes) else line
                if not text.strip():
                    continue
                kind, body = decode(text)
                if kind == "q":
                    self.q.put(tuple(body))
                elif kind == "hello":
                    self.hello = body
                elif kind == "exit":
                    codes = list(body)
        except (OSError, EOFError, ValueError) as e:
            self._err.append(f"reading from {self.client.label}: {e}\n")
        finally:
            rc = self._chan.recv_exit_status() if codes is not None else None
            if codes is not None and rc == 0:
                bad = [c for c in codes if c != 0]
                self.exitcode = bad[0] if bad else 0
            else:
                self.exitcode = 255 if rc in (None, 0) else rc
                tail = "".join(self._err).strip()[-1500:]
                self.q.put(
                    (
                        "error",
                        "workers on",
                        self.client.label,
                        f"the remote worker agent ended without its final report: {tail or 'no output'}",
                    )
                )
            self._closed.set()

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None

    def join(self, timeout: float | None = None) -> None:
        if self._reader is not None:
            self._reader.join(timeout)

    def terminate(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()  # the agent reads end of input and stops its workers


if __name__ == "__main__":
    sys.exit(agent())
