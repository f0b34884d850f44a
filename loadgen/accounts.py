"""What a load worker keeps of every message: which sequence numbers were acknowledged (producers) or received
and how often (consumers), and each one's (latency, send time) for the recorder. The callbacks here run once per
message: everything they touch is bound as a local when they are made."""

from __future__ import annotations

from collections.abc import Callable

from drivers import api
from loadgen import payload
from loadgen.channel import Timing
from loadgen.recorder import LatencyBuffer
from loadgen.ticker import Ticker

Clock = Callable[[], int]


class ProducerState:
    """Delivery callbacks: mark the sequence acknowledged, buffer (latency, send time). Nothing more."""

    def __init__(self, timing: Timing, clock: Clock) -> None:
        self.clock = clock
        self.buf = LatencyBuffer()
        self.buf.m_start, self.buf.m_end = timing.measure_start_ns, timing.measure_end_ns
        self.acked = bytearray(1 << 16)
        self.n_errors = 0
        self.n_dropped = 0
        self.error_samples: list[str] = []
        self.ticker: Ticker | None = None
        self.failed_seqs: list[int] = []  # a counting producer's: every message reported not acknowledged
        self._lat, self._sent = self.buf.lat.append, self.buf.sent.append
        self.unpack: Callable[[bytes], tuple[int, int, int]] = payload.unpacker(payload.HEADER_BYTES)

    def on_done(self) -> api.DeliveryCallback:
        """The delivery callback, with everything it touches bound as locals (it runs once per message)."""
        clock, unpack, acked, lat, sent_at = self.clock, self.unpack, self.acked, self._lat, self._sent

        def on_done(err: str | None, data: bytes) -> None:
            now = clock()
            _pid, seq, sent = unpack(data)
            if err is not None:
                self.failed(err)
                return
            acked[seq] = 1
            if not sent:
                sent = now
            lat(now - sent)
            sent_at(sent)

        return on_done

    def on_failure(self) -> api.DeliveryCallback:
        """A counting producer's callback: it runs for the messages not acknowledged, and only for those."""
        unpack, failed_seqs = self.unpack, self.failed_seqs

        def on_failure(err: str | None, data: bytes) -> None:
            failed_seqs.append(unpack(data)[1])
            self.failed(err or "reported without an error")

        return on_failure

    def acked_map(self, sent: int) -> bytearray:
        """A counting producer's acknowledged map once every message it sent is resolved: all but the failed."""
        m = bytearray(b"\x01") * sent
        for s in self.failed_seqs:
            m[s] = 0
        return m

    def failed(self, err: str) -> None:
        if err == api.DROPPED:
            self.n_dropped += 1
            return
        if err == api.ABANDONED:  # counted as unacknowledged at the end (the flush's outstanding), not an error
            return
        self.n_errors += 1
        if self.ticker is not None:
            self.ticker.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(err)


class ConsumerState:
    """Per message: count it against its producer's sequence map, buffer (latency, send time)."""

    def __init__(self, clock: Clock, size: int) -> None:
        self.clock = clock
        self.buf = LatencyBuffer()
        self.seen: dict[int, bytearray] = {}
        self._lat, self._sent = self.buf.lat.append, self.buf.sent.append
        self.unpack = payload.unpacker(size)
        self.batches = 0  # on_batch calls

    def distinct(self) -> int:
        """Records received at least once: duplicates (a consumer that re-reads after its group rebalanced, a
        producer's retry) counted once. A byte count per record map, in C: 6.0-6.3 ms for a map of 10 million
        (measured), so asked only after the producers' end, 10 times a second (loadgen.consumer)."""
        return sum(len(m) - m.count(0) for m in self.seen.values())

    def on_message(self, data: bytes) -> None:
        now = self.clock()
        pid, seq, sent = self.unpack(data)
        m = self.seen.get(pid)
        if m is None:
            m = self.seen[pid] = bytearray(1 << 16)
        if seq >= len(m):
            m.extend(bytes(max(len(m), seq + 1 - len(m))))
        c = m[seq]
        if c < 255:
            m[seq] = c + 1
        if not sent:  # a payload too small for a send time: counted in the second it arrived, no latency
            sent = now
        self._lat(now - sent)
        self._sent(sent)

    def on_batch(self, values: list[bytes]) -> None:
        """`on_message` for messages received together: one clock read for all of them (they arrived at one
        moment; reading it per message would add our own processing time to their latency)."""
        now = self.clock()
        self.batches += 1
        unpack, seen, lat, sent_at = self.unpack, self.seen, self._lat, self._sent
        last_pid, m = -1, bytearray()
        for data in values:
            pid, seq, sent = unpack(data)
            if pid != last_pid:  # a batch is mostly one partition's, so mostly one producer's
                last_pid, found = pid, seen.get(pid)
                m = found if found is not None else seen.setdefault(pid, bytearray(1 << 16))
            if seq >= len(m):
                m.extend(bytes(max(len(m), seq + 1 - len(m))))
            c = m[seq]
            if c < 255:
                m[seq] = c + 1
            if not sent:
                sent = now
            lat(now - sent)
            sent_at(sent)
