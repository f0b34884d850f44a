"""A conformance suite every driver passes against its real server (as Optuna ships StorageTestCase).

Subclass `DriverConformance` in a test module and provide a `driver` fixture that returns a live driver;
set `producer_overrides` / `consumer_overrides` for the mode under test (e.g. MQTT QoS 1). The suite
checks the contract the load workers rely on: a consumer that says `ready` receives every message a
producer then sends, intact and exactly once, across payload sizes; acknowledgements arrive through
`poll`; a full local buffer raises `BufferFull` rather than blocking forever; bad keys are rejected by
`validate` before anything is created.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from drivers import api
from kafkatune.errors import UserError

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

    def round_trip(self, driver: api.Driver, sizes: Sequence[int]) -> tuple[int, list[str], list[bytes], list[bytes]]:
        """Send one message per size (cycled to n); returns (acked, errors, sent, received)."""
        topic = f"kt-conf-{uuid.uuid4().hex[:10]}"
        driver.create_topics([api.TopicSpec(topic, 1)])
        received: list[bytes] = []
        errors: list[str] = []
        acked = 0
        c = driver.create_consumer(topic, f"sub-{topic}", received.append, self.consumer_overrides)
        p = None
        try:
            deadline = time.monotonic() + self.timeout_s
            while not c.ready():
                c.poll(0.05)
                assert time.monotonic() < deadline, "consumer never became ready"
            p = driver.create_producer(topic, self.producer_overrides)

            def done(err: str | None, payload: bytes) -> None:
                nonlocal acked
                if err is None:
                    acked += 1
                else:
                    errors.append(err)

            sent = []
            for i, size in enumerate(sizes):
                msg = _payload(i, size)
                while True:
                    try:
                        p.send(None, msg, done)
                        break
                    except api.BufferFull:
                        p.poll(0.01)
                        c.poll(0)
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
            return acked, errors, sent, received
        finally:
            if p is not None:
                p.close()
            c.close()
            driver.delete_topics([topic])

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
