"""The agent on a client host (`PYTHON -m loadgen.agent`, started over SSH by loadgen.placement): it runs the
workers placed there and relays what they report, as JSON lines (loadgen.wire) on its stdin and stdout:

- coordinator -> agent: the tasks first (client configs travel here, never on a command line, so a SASL
  password is not visible in `ps`), then `go` with the run's time line, `stop_producers`,
  `stop_consumers`, for a backlog run `pause_consumers` / `resume_consumers`, and for a steered run
  (loadgen.search) `step` (from which second, at what rate per producer). End of input (the coordinator died
  or closed the channel) stops every worker.
- agent -> coordinator: `hello` (the address it was reached at), every message its workers put on their
  queue (ticks with encoded HdrHistograms, `done` records with the sequence maps) and, last, `exit` with
  the workers' exit codes.

The coordinator puts the workers' messages on its own queue, so the run is merged exactly as if every
worker were local: counts add up, histograms merge losslessly. Clocks must be synchronised (NTP/PTP):
the time line is wall-clock nanoseconds, as end-to-end latency is.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, TextIO

from core.typed import from_json
from loadgen.channel import Channel, Timing
from loadgen.placement import LocalHost
from loadgen.wire import decode, encode
from loadgen.worker import WorkerTask


def _control(stdin: TextIO, ch: Channel) -> None:
    """The coordinator's commands, until its end of the channel closes; then every worker stops (a worker
    still waiting for `go` is released to stop)."""
    for line in stdin:
        cmd = decode(line)
        match cmd.get("cmd"):
            case "go":
                ch.set_timing(from_json(Timing, cmd["timing"], "go"))
                ch.go.set()
            case "stop_producers":
                ch.stop_producers.set()
            case "stop_consumers":
                ch.stop_consumers.set()
            case "pause_consumers":
                ch.pause_consumers.set()
            case "resume_consumers":
                ch.pause_consumers.clear()
            case "step":
                ch.publish_step(int(cmd["second"]), float(cmd["msg_s"]))
    ch.stop_producers.set()
    ch.stop_consumers.set()
    ch.go.set()


def agent(stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    stdin = stdin or sys.stdin
    out = stdout or sys.stdout
    lock = threading.Lock()

    def send(obj: Any) -> None:
        with lock:
            out.write(encode(obj) + "\n")
            out.flush()

    first = stdin.readline()
    if not first:
        return 2
    here = LocalHost(None)
    for t in decode(first)["tasks"]:
        here.add(WorkerTask(**{**t, "owner_pid": os.getpid()}))  # the agent owns its workers, not the caller
    conn = os.environ.get("SSH_CONNECTION", "").split()
    send(["hello", {"address": conn[2] if len(conn) == 4 else None, "pid": os.getpid(), "workers": len(here.tasks)}])
    ch = Channel.new()
    procs = here.workers(ch)
    for p in procs:
        p.start()

    def relay() -> None:
        while (m := ch.q.get()) is not None:
            send(["q", m])

    threading.Thread(target=_control, args=(stdin, ch), daemon=True).start()
    relay_t = threading.Thread(target=relay, daemon=True)
    relay_t.start()
    for p in procs:
        p.join()
    ch.q.put(None)
    relay_t.join(timeout=30)
    send(["exit", [p.exitcode for p in procs]])
    return 0


if __name__ == "__main__":
    sys.exit(agent())
