"""Handing a client library's completions and messages from its own threads to the load worker's thread.

Drivers whose client calls back on a library thread (paho, pulsar-client, kafka-python, Cyclone DDS, Zenoh)
queue what arrives there and hand it over in `Producer.poll` / `Consumer.poll`, on the worker's thread, so
callbacks never race the worker's per-second accounting.
"""

from __future__ import annotations

import collections
import threading
import time

from drivers.api import POLL_BUDGET_S, DeliveryCallback, MessageCallback


class SentOnReturn:
    """For systems that acknowledge nothing (Zenoh, DDS): a message counts as delivered once the client
    call that sent it returned; its callback runs on the next `poll`, like any other driver's."""

    def __init__(self) -> None:
        self.done: collections.deque[tuple[DeliveryCallback, bytes]] = collections.deque()

    def sent(self, on_done: DeliveryCallback, payload: bytes) -> None:
        self.done.append((on_done, payload))

    def poll(self, timeout_s: float = 0.0) -> int:
        n = 0
        while self.done:
            cb, payload = self.done.popleft()
            cb(None, payload)
            n += 1
        return n


class Inbox:
    """Messages a client library's own thread hands over, and a wake-up for a consumer waiting in `poll`.

    `put` runs on the library's thread; `drain` on the worker's. A waiting `drain` returns as soon as a
    message arrives (not after a fixed sleep), so ping-pong latency is the system's, not a poll period.
    The event is set only while someone waits: the hot path is one append and one attribute read.
    """

    def __init__(self) -> None:
        self.q: collections.deque[bytes] = collections.deque()
        self.ev = threading.Event()
        self.waiting = False

    def put(self, data: bytes) -> None:
        self.q.append(data)
        if self.waiting:
            self.ev.set()

    def drain(self, on_message: MessageCallback, timeout_s: float) -> int:
        q = self.q
        if not q and timeout_s > 0:
            self.ev.clear()
            self.waiting = True
            if not q:  # an append between the first check and `waiting` is seen here
                self.ev.wait(timeout_s)
            self.waiting = False
        n = 0
        end = time.monotonic() + POLL_BUDGET_S
        popleft = q.popleft
        while q:
            on_message(popleft())
            n += 1
            # a library thread that appends faster than we hand over would keep this loop going forever
            if not n & 255 and time.monotonic() > end:
                break
        return n


# A delivery the client library's thread completed: (callback, error or None, payload).
Done = tuple[DeliveryCallback, str | None, bytes]


def serve_done(done: collections.deque[Done], timeout_s: float) -> int:
    """Run completed deliveries' callbacks on the caller's thread (a producer's `poll`); when there were
    none and a timeout was given, sleep up to 1 ms. Returns how many ran."""
    n = 0
    while done:
        cb, err, payload = done.popleft()
        cb(err, payload)
        n += 1
    if not n and timeout_s > 0:
        time.sleep(min(timeout_s, 0.001))
    return n
