"""A conformance suite every driver passes against its real server (as Optuna ships StorageTestCase).

Subclass `DriverConformance` in a test module and provide a `driver` fixture that returns a live driver;
set `producer_overrides` / `consumer_overrides` for the mode under test (e.g. MQTT QoS 1). The suite
checks the contract the load workers rely on: a consumer that says `ready` receives every message a
producer then sends, intact and exactly once, across payload sizes; acknowledgements arrive through
`poll`; a full local buffer raises `BufferFull` rather than blocking forever; bad keys are rejected by
`validate` before anything is created.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest

from core.errors import UserError
from drivers import api

SEQ = struct.Struct("<Q")


def _payload(i: int, size: int) -> bytes:
    head = SEQ.pack(i)
    body = bytes((i + k) % 251 for k in range(min(size, 64)))
    return (head + body * (size // max(1, len(body)) + 1))[: max(size, SEQ.size)]


class DriverConformance:
    producer_overrides: ClassVar[dict[str, str]] = {}
    consumer_overrides: ClassVar[dict[str, str]] = {}
    n_messages: ClassVar[int] = 2000
    timeout_s: ClassVar[float] = 60.0
    backlog_messages: ClassVar[int] = 20000
    partitions: ClassVar[int] = 1
    # producer overrides that shrink the client's local queue to a message or two; None for a system whose
    # client has no local queue to fill (its send blocks or drops by design: said by the driver)
    small_buffer: ClassVar[dict[str, str] | None] = None

    @contextlib.contextmanager
    def subscribed(self, driver: api.Driver, handler_ns: int = 0) -> Iterator[tuple[str, api.Consumer, list[bytes]]]:
        """A new topic and a consumer on it that is ready; both removed afterwards. `handler_ns`: CPU time
        the message callback spends per message (a busy wait), as the load worker's accounting does."""
        topic = f"kt-conf-{uuid.uuid4().hex[:10]}"
        driver.create_topics([api.TopicSpec(topic, self.partitions)])
        received: list[bytes] = []
        on_message: api.MessageCallback = received.append
        if handler_ns:

            def on_message(data: bytes) -> None:
                end = time.perf_counter_ns() + handler_ns
                while time.perf_counter_ns() < end:
                    pass
                received.append(data)

        c = driver.create_consumer(topic, f"sub-{topic}", on_message, self.consumer_overrides)
        try:
            deadline = time.monotonic() + self.timeout_s
            while not c.ready():
                c.poll(0.05)
                assert time.monotonic() < deadline, "consumer never became ready"
            yield topic, c, received
        finally:
            c.close()
            driver.delete_topics([topic])

    def round_trip(self, driver: api.Driver, sizes: Sequence[int]) -> tuple[int, list[str], list[bytes], list[bytes]]:
        """Send one message per size (cycled to n); returns (acked, errors, sent, received)."""
        errors: list[str] = []
        acked = 0
        with self.subscribed(driver) as (topic, c, received):
            deadline = time.monotonic() + self.timeout_s
            p = driver.create_producer(topic, self.producer_overrides)
            try:

                def done(err: str | None, payload: bytes) -> None:
                    nonlocal acked
                    if err is None:
                        acked += 1
                    else:
                        errors.append(err)

                sent = []
                for i, size in enumerate(sizes):
                    msg = _payload(i, size)
                    api.send_waiting(p, None, msg, done, self.timeout_s, also=lambda: c.poll(0))
                    sent.append(msg)
                    if i % 64 == 0:
                        p.poll(0)
                        c.poll(0)
                left = p.flush(self.timeout_s)
                assert left == 0, f"{left} message(s) unacknowledged after flush"
                p.poll(0)
                while len(received) < len(sent) and time.monotonic() < deadline + self.timeout_s:
                    c.poll(0.05)
                c.poll(0.2)  # anything extra (duplicates) arrives now
                return acked, errors, sent, list(received)
            finally:
                p.close()

    def test_every_acknowledged_message_arrives_intact_and_once(self, driver: api.Driver) -> None:
        acked, errors, sent, received = self.round_trip(driver, [1024] * self.n_messages)
        assert errors == []
        assert acked == len(sent) == self.n_messages
        assert sorted(received) == sorted(sent), f"received {len(received)} of {len(sent)} (or altered)"

    def test_payload_sizes_from_8_bytes_to_256_KiB(self, driver: api.Driver) -> None:
        sizes = [8, 64, 1024, 16384, 65536, 262144]
        acked, errors, sent, received = self.round_trip(driver, sizes)
        assert errors == [] and acked == len(sizes)
        assert sorted(len(r) for r in received) == sorted(len(s) for s in sent)
        assert sorted(received) == sorted(sent)

    def test_poll_returns_as_soon_as_a_message_is_there(self, driver: api.Driver) -> None:
        """A poll with a long timeout must hand over a waiting message at once: ping-pong and fixed-rate
        latencies are measured through it (a poll that waits for a batch or its timeout adds that wait to every round
        trip)."""
        with self.subscribed(driver) as (topic, c, received):
            p = driver.create_producer(topic, self.producer_overrides)
            try:
                api.send_waiting(p, None, _payload(0, 64), lambda err, payload: None, self.timeout_s)
                assert p.flush(self.timeout_s) == 0
                long_poll = 30.0
                t0 = time.monotonic()
                while not received and time.monotonic() - t0 < 2 * long_poll:
                    c.poll(long_poll)
                waited = time.monotonic() - t0
            finally:
                p.close()
            assert received == [_payload(0, 64)]
            # the message was acknowledged (or, for systems without acknowledgements, sent) before the wait
            # began: a poll that honours the contract returns well before its 30 s timeout
            assert waited < long_poll / 2, f"poll({long_poll:.0f}) kept an arrived message for {waited:.1f} s"

    def test_a_poll_with_a_backlog_returns_within_its_budget(self, driver: api.Driver) -> None:
        """With thousands of messages waiting and a consumer that spends 100 µs on each, every poll hands
        over a bounded share and returns: the load worker counts messages per second between polls (a
        raw-TCP poll that drained a backlog the producer kept feeding put every message in second 0)."""
        n, longest = self.backlog_messages, 0.0
        with self.subscribed(driver, handler_ns=100_000) as (topic, c, received):
            p = driver.create_producer(topic, self.producer_overrides)
            sent = threading.Event()

            def send_all() -> None:
                try:
                    for i in range(n):
                        api.send_waiting(p, None, _payload(i, 64), lambda err, payload: None, self.timeout_s)
                    p.flush(self.timeout_s)
                finally:
                    sent.set()

            sender = threading.Thread(target=send_all, daemon=True)
            sender.start()
            try:
                sent.wait(2.0)  # a backlog builds up (for a raw socket: until the kernel's buffers are full)
                last, last_change = 0, time.monotonic()
                while len(received) < n and time.monotonic() - last_change < 3:
                    t0 = time.monotonic()
                    c.poll(0.05)
                    longest = max(longest, time.monotonic() - t0)
                    if len(received) != last:
                        last, last_change = len(received), time.monotonic()
            finally:
                sender.join(self.timeout_s)
                p.close()
        assert len(received) > n // 2, f"only {len(received)} of {n} messages arrived"
        assert longest < 1.0, f"one poll took {longest:.2f} s with a backlog (budget {api.POLL_BUDGET_S} s)"

    def test_a_full_local_buffer_raises_buffer_full_and_loses_nothing(self, driver: api.Driver) -> None:
        """Back-to-back sends into a tiny local queue: `send` raises BufferFull (the load generator then
        counts it and backs off) instead of queueing without bound or blocking; every message it accepted
        is acknowledged and arrives."""
        if self.small_buffer is None:
            pytest.skip(f"{driver.name}: no local send queue to fill")
        acked: list[bytes] = []
        full = 0
        with self.subscribed(driver) as (topic, c, received):
            p = driver.create_producer(topic, {**self.producer_overrides, **self.small_buffer})
            try:
                accepted = []
                for i in range(200):
                    msg = _payload(i, 16384)
                    try:
                        p.send(None, msg, lambda err, payload: acked.append(payload) if err is None else None)
                        accepted.append(msg)
                    except api.BufferFull:
                        full += 1
                assert full > 0, "200 back-to-back 16 KiB sends into a tiny buffer never raised BufferFull"
                assert p.flush(self.timeout_s) == 0
                p.poll(0)
            finally:
                p.close()
            wait_for(lambda: (c.poll(0.05), len(received) >= len(accepted))[1], self.timeout_s, "the accepted messages")
            assert sorted(acked) == sorted(accepted) and sorted(received) == sorted(accepted)

    def test_validate_rejects_an_unknown_key(self, driver: api.Driver) -> None:
        with pytest.raises(UserError, match=r"no\.such\.key|no_such_key"):
            driver.validate({"no.such.key": "1"}, {})

    def test_close_then_a_new_producer_works(self, driver: api.Driver) -> None:
        # each round trip closes its clients; a second one on the same driver must work
        for _ in range(2):
            acked, errors, sent, received = self.round_trip(driver, [256] * 50)
            assert errors == [] and acked == 50 and sorted(received) == sorted(sent)


def wait_for(pred: Any, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
