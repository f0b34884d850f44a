"""NTU's ping-pong method (docs/reference.md §3): one message at a time there and back through the system,
an echo process on the far end; latency = RTT/2."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue
import struct
import time
import traceback
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from compare.harness import Say, SystemTarget, Tick, error_text
from compare.spec import CompareSpec, PingPong
from core.errors import EnvironmentProblem
from drivers import api
from records import comparison as comparisons
from records.comparison import LatencyRow

SEQ = struct.Struct("<Q")


@dataclass
class _EchoSeen:
    """What the echo did, reported when it stops (a missing reply is then placed on one leg)."""

    received: int = 0
    delivered: int = 0
    failed: int = 0
    last_error: str | None = None
    consumer: str | None = None  # its consumer's state in words (api.Consumer.client_state)


def _echo(
    driver: str, common: dict[str, str], ping: str, pong: str, pc: dict[str, str], cc: dict[str, str], q: Any, stop: Any
) -> None:
    """The far end of the ping-pong: every message received on `ping` goes straight back on `pong`. When stopped
    it reports what it received and sent, and its consumer's state: a missing reply is then placed on one leg."""
    try:
        drv = api.load_driver(driver)(common)
        inbox: list[bytes] = []
        c = drv.create_consumer(ping, f"echo-{ping}", inbox.append, cc)
        while not c.ready():
            c.poll(0.05)
        p = drv.create_producer(pong, pc)
        q.put(("ready", None))
        seen = _EchoSeen()

        def count(err: str | None, payload: bytes) -> None:
            if err is None:
                seen.delivered += 1
            else:
                seen.failed += 1
                seen.last_error = err

        while True:
            if not c.poll_one(0.05):  # idle: the pinger may be done (checked only then, off the hot path)
                if stop.is_set():
                    break
                p.poll(0)
            seen.received += len(inbox)
            for m in inbox:
                p.send_now(m, count)
            inbox.clear()
        p.flush(5)
        seen.consumer = c.client_state()
        q.put(("done", seen))
        p.close()
        c.close()
        drv.close()
    except BaseException:
        q.put(("error", traceback.format_exc(limit=6)))


class _RepliesMissing(EnvironmentProblem):
    """Too many pings went unanswered; pingpong_once adds what each end saw."""


def _echo_report(q: Any, wait_s: float = 5.0) -> str:
    """What the stopped echo said of itself, in words (waiting up to `wait_s` for each thing it put)."""
    with contextlib.suppress(queue.Empty):
        while True:
            kind, detail = q.get(timeout=wait_s)
            if kind == "error":
                return f"the echo side failed:\n{detail}"
            if kind == "done":
                err = f" (last: {detail.last_error})" if detail.last_error else ""
                return (
                    f"the echo received {detail.received} ping(s), its replies: {detail.delivered} delivered, "
                    f"{detail.failed} failed{err}; the echo's consumer: {detail.consumer or 'no statistics'}"
                )
    return "the echo said nothing when stopped"


def pingpong_once(t: SystemTarget, spec: CompareSpec) -> tuple[list[float], int]:
    """Round-trip times (µs) of `messages` pings after the warm-up; and how many replies never came."""
    cfg = spec.pingpong
    assert cfg is not None
    s = t.system
    pc = {k: str(v) for k, v in {**s.producerConfig, **s.pingpongProducerConfig}.items()}
    cc = {k: str(v) for k, v in s.consumerConfig.items()}
    drv = api.load_driver(s.driver)(t.common)
    drv.validate(pc, cc)

    tag = uuid.uuid4().hex[:8]
    ping, pong = f"kt-{t.name}-ping-{tag}", f"kt-{t.name}-pong-{tag}"
    drv.create_topics(
        [api.TopicSpec(n, 1, s.replicationFactor, {k: str(v) for k, v in s.topicConfig.items()}) for n in (ping, pong)]
    )
    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    stop = ctx.Event()
    replies: list[bytes] = []
    c = drv.create_consumer(pong, f"pinger-{pong}", replies.append, cc)
    proc = None
    p = None
    try:
        deadline = time.monotonic() + 60
        while not c.ready():
            c.poll(0.05)
            if time.monotonic() > deadline:
                raise EnvironmentProblem("ping-pong: the reply consumer never became ready")
        proc = ctx.Process(target=_echo, args=(s.driver, t.common, ping, pong, pc, cc, q, stop), daemon=True)
        proc.start()
        kind, detail = q.get(timeout=90)
        if kind == "error":
            raise EnvironmentProblem(f"ping-pong echo failed:\n{detail}")
        p = drv.create_producer(ping, pc)
        try:
            return _exchange(cfg, p, c, replies)
        except _RepliesMissing as e:  # stop the echo first: it reports when it ends
            stop.set()
            proc.join(15)
            state = c.client_state() or "no statistics"
            raise EnvironmentProblem(f"{e}; {_echo_report(q)}; the reply consumer: {state}") from None
    finally:
        stop.set()
        if proc is not None:
            proc.join(10)
            if proc.is_alive():
                proc.terminate()
        if p is not None:
            p.close()
        c.close()
        drv.delete_topics([ping, pong])
        drv.close()


def _exchange(cfg: PingPong, p: api.Producer, c: api.Consumer, replies: list[bytes]) -> tuple[list[float], int]:
    """The pings, one at a time: round trips (µs) after the warm-up, and how many replies never came.

    Between the two clock reads there is only the driver: the ping is built before, one `send_now`, then
    `poll_one` until the reply with this ping's number is in (a driver with a direct path makes that one
    write and one read); completions are served only while a reply is still awaited."""
    pad = bytes(max(0, cfg.size - SEQ.size))
    timeout_s = cfg.replyTimeoutSeconds
    rtts: list[float] = []
    missing = 0
    errors: list[str] = []

    def done(err: str | None, payload: bytes) -> None:
        if err is not None:
            errors.append(err)

    clock, unpack = time.perf_counter_ns, SEQ.unpack_from
    for i in range(cfg.warmupMessages + cfg.messages):
        msg = SEQ.pack(i) + pad
        end = time.monotonic() + timeout_s
        got = False
        t0 = clock()
        p.send_now(msg, done, timeout_s)
        while True:
            c.poll_one(0.05)
            while replies:
                got = unpack(replies.pop())[0] == i or got
            if got:
                break
            p.poll(0)
            if time.monotonic() > end:
                break
        t1 = clock()
        if errors:
            raise EnvironmentProblem(f"ping-pong: send failed: {errors[0]}")
        if not got:
            missing += 1
            if missing >= 3:
                raise _RepliesMissing(
                    f"ping-pong: {missing} replies not received within {timeout_s:g} s ({i + 1} ping(s) sent)"
                )
            continue
        if i >= cfg.warmupMessages:
            rtts.append((t1 - t0) / 1e3)
    return rtts, missing


def pingpong(t: SystemTarget, spec: CompareSpec, out: Path, say: Say, tick: Tick) -> LatencyRow:
    cfg = spec.pingpong
    assert cfg is not None
    rtts: list[float] = []
    missing = 0
    error = None
    for _ in range(cfg.repeats):
        try:
            r, m = pingpong_once(t, spec)
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            error = error_text(e)
            say(f"  {t.name} ping-pong: FAILED {error}")
            tick()
            break
        rtts += r
        missing += m
        tick()
    row = replace(
        latency_row(t.name, t.system.driver, [x / 2 for x in rtts], cfg.size),
        round_trips=len(rtts),
        missing_replies=missing,
        error=error,
    )
    comparisons.write_round_trips(out, t.name, rtts)
    if rtts:
        say(f"  {t.name:<16} ping-pong {cfg.size} B: RTT/2 median {row.p50_us:.1f} µs, p99 {row.p99_us:.1f} µs")
    return row


PCTS = (50, 90, 99, 99.9)


def latency_row(name: str, driver: str, one_way_us: list[float], size: int) -> LatencyRow:
    """The percentiles (PCTS), mean and max of one-way latencies (µs); every figure None without one."""
    if not one_way_us:
        return LatencyRow(name, driver, size)
    a = np.asarray(one_way_us)
    p50, p90, p99, p999 = (float(np.percentile(a, p)) for p in PCTS)
    return LatencyRow(name, driver, size, p50, p90, p99, p999, float(a.mean()), float(a.max()))
