"""The raw-socket baseline: producers write length-prefixed frames straight into consumers' TCP sockets.

No broker, no persistence, no acknowledgement beyond "the kernel took it" (a message counts as delivered
once `send` returned, as for Zenoh and DDS). Run through the same workers, recorder and result code as
every other driver, it measures the harness's own ceiling on this machine: what the Python load
generator can push through one TCP connection per producer, so each system's figure can be read
against it.

Rendezvous: a consumer listens on an ephemeral port of `tcp.host` (common; default 127.0.0.1) and
registers it as a file under `tcp.dir` (common; default <KAFKATUNE_HOME>/tcp)/<topic>/<subscription>/.
A producer connects to every consumer registered on its topic when it is created, and sends each message
to one consumer of each subscription in turn (a shared subscription, as a Kafka group splits messages).

Producer key: `buffer.bytes` (frames are batched in user space up to this, then written; default 65536).
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import shutil
import socket
import struct
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from core import paths
from core.errors import EnvironmentProblem, UserError
from drivers import api, handoff
from drivers.settings import key, settings

FRAME = struct.Struct("<I")
RCVTIMEO = struct.Struct("@ll")  # struct timeval
CONNECT_WAIT_S = 10.0
SCRATCH_BYTES = 256 * 1024


class _Conn:
    """Receive state of one producer connection: small frames accumulate in `buf`; a frame larger than
    the scratch buffer is read into `big` as it arrives."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.big = bytearray()
        self.size = 0  # of the large frame being read into `big` (0: none)
        self.filled = 0
        self.rcvtimeo = -1.0  # SO_RCVTIMEO last set on the socket (poll_one's blocking read)


def _complete(c: _Conn) -> bool:
    """Whether `c.buf` holds at least one whole frame (left there by a poll whose budget ran out)."""
    buf = c.buf
    return len(buf) >= 4 and len(buf) - 4 >= FRAME.unpack_from(buf, 0)[0]


@dataclasses.dataclass(frozen=True)
class ProducerSettings:
    """`buffer.bytes`: frames are batched in user space up to this many bytes, then written."""

    buffer_bytes: int = key("buffer.bytes", 65536)

    @classmethod
    def of(cls, conf: Mapping[str, str]) -> ProducerSettings:
        return settings(cls, conf, "producerConfig", "TCP")


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """A consumer takes no keys."""


class TcpProducer(api.Producer):
    def __init__(self, topic_dir: Path, conf: ProducerSettings) -> None:
        self.limit = conf.buffer_bytes
        self.acks = handoff.SentOnReturn()
        self.groups: list[list[socket.socket]] = []
        end = time.monotonic() + CONNECT_WAIT_S
        while True:
            subs = sorted(p for p in topic_dir.iterdir() if p.is_dir()) if topic_dir.is_dir() else []
            regs = [sorted(s.glob("*.port")) for s in subs]
            if any(regs) or time.monotonic() > end:
                break
            time.sleep(0.05)
        for files in regs:
            socks = []
            for f in files:
                host, _, port = f.read_text().strip().rpartition(":")
                s = socket.create_connection((host, int(port)), timeout=10)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.setblocking(True)
                socks.append(s)
            if socks:
                self.groups.append(socks)
        self.bufs = [bytearray() for _ in self.groups]
        self.turn = 0
        # no consumer: messages go nowhere, and are reported as errors rather than counted as delivered
        self.nowhere = not self.groups

    def send(self, key: bytes | None, payload: bytes, on_done: api.DeliveryCallback) -> None:
        if self.nowhere:
            on_done("no consumer is listening on this topic", payload)
            return
        head = FRAME.pack(len(payload))
        large = len(payload) >= self.limit
        for g, buf in enumerate(self.bufs):
            if large:  # written as it is: no copy into the batch buffer
                self._write(g)
                sock = self.groups[g][self.turn % len(self.groups[g])]
                sock.sendall(head)
                sock.sendall(payload)
                self.turn += 1
                continue
            buf += head
            buf += payload
            if len(buf) >= self.limit:
                self._write(g)
        self.acks.sent(on_done, payload)

    def send_now(self, payload: bytes, on_done: api.DeliveryCallback, timeout_s: float = 30.0) -> None:
        """The ping-pong's path: one write per subscription, no batch buffer, no deferred callback."""
        if self.nowhere:
            on_done("no consumer is listening on this topic", payload)
            return
        frame = FRAME.pack(len(payload)) + payload
        for g, socks in enumerate(self.groups):
            self._write(g)  # anything batched before goes first
            socks[self.turn % len(socks)].sendall(frame)
        self.turn += 1
        on_done(None, payload)

    def _write(self, g: int) -> None:
        """Write subscription g's batch to its next consumer (members take whole batches in turn)."""
        buf = self.bufs[g]
        if not buf:
            return
        socks = self.groups[g]
        socks[self.turn % len(socks)].sendall(buf)
        self.turn += 1
        buf.clear()

    def poll(self, timeout_s: float = 0.0) -> int:
        for g in range(len(self.bufs)):
            self._write(g)
        return self.acks.poll()

    def flush(self, timeout_s: float) -> int:
        self.poll()
        return 0

    def close(self) -> None:
        self.poll()
        for g in self.groups:
            for s in g:
                s.close()


class TcpConsumer(api.Consumer):
    def __init__(self, reg_dir: Path, host: str, on_message: api.MessageCallback) -> None:
        self.on_message = on_message
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket()
        self.listener.bind((host, 0))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.conns: dict[socket.socket, _Conn] = {}
        self.scratch = bytearray(SCRATCH_BYTES)
        self.view = memoryview(self.scratch)
        reg_dir.mkdir(parents=True, exist_ok=True)
        self.reg = reg_dir / f"{uuid.uuid4().hex}.port"
        tmp = self.reg.with_suffix(".tmp")
        tmp.write_text(f"{host}:{self.listener.getsockname()[1]}\n")
        tmp.rename(self.reg)  # a producer never reads a half-written registration

    def poll(self, timeout_s: float) -> int:
        end = time.monotonic() + api.POLL_BUDGET_S
        n = 0
        for c in self.conns.values():  # frames a budget-limited call left behind come first
            if _complete(c):
                n += self._frames(c, end)
        if n or any(_complete(c) for c in self.conns.values()):
            timeout_s = 0.0  # there is work in hand: do not wait for the sockets
        for ready, _ in self.sel.select(timeout_s):
            if time.monotonic() > end:
                break
            s = ready.fileobj
            assert isinstance(s, socket.socket)
            if s is self.listener:
                conn, _addr = s.accept()
                # blocking, so poll_one's read is one syscall; poll's reads pass MSG_DONTWAIT
                conn.setblocking(True)
                self.sel.register(conn, selectors.EVENT_READ, None)
                self.conns[conn] = _Conn()
                continue
            c = self.conns[s]
            if not _complete(c):  # else that connection's buffer is spent first, next call
                n += self._read(s, c, end)
        return n

    def poll_one(self, timeout_s: float) -> int:
        """With exactly one producer connected and nothing left in hand, one blocking read (SO_RCVTIMEO bounds
        it): the ping-pong's receive is a single syscall. Otherwise (connections still to accept, frames in
        hand, a large frame half read) it is `poll`."""
        if len(self.conns) != 1 or timeout_s < 1e-6:  # SO_RCVTIMEO 0 would block for ever
            return self.poll(timeout_s)
        ((s, c),) = self.conns.items()
        if c.size or _complete(c):
            return self.poll(timeout_s)
        if c.rcvtimeo != timeout_s:
            sec = int(timeout_s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, RCVTIMEO.pack(sec, int((timeout_s - sec) * 1e6)))
            c.rcvtimeo = timeout_s
        try:
            got = s.recv_into(self.scratch)
        except (BlockingIOError, TimeoutError):
            return 0
        if not got:
            return self._closed(s)
        c.buf += self.view[:got]
        return self._frames(c, time.monotonic() + api.POLL_BUDGET_S)

    def _read(self, s: socket.socket, c: _Conn, end: float) -> int:
        """Reads until the socket is empty or the poll's time budget is spent: a producer that never
        pauses must not keep poll from returning."""
        n = 0
        while True:
            if c.size:  # the rest of a large frame goes straight into the connection's large-frame buffer
                try:
                    got = s.recv_into(memoryview(c.big)[c.filled : c.size], 0, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return n
                if not got:
                    return n + self._closed(s)
                c.filled += got
                if c.filled == c.size:
                    self.on_message(bytes(memoryview(c.big)[: c.size]))
                    c.size = 0
                    n += 1
            else:
                try:
                    got = s.recv_into(self.scratch, 0, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return n
                if not got:
                    return n + self._closed(s)
                c.buf += self.view[:got]
                n += self._frames(c, end)
                if _complete(c):  # the budget ran out inside the buffer
                    return n
            if time.monotonic() > end:
                return n

    def _closed(self, s: socket.socket) -> int:
        self.sel.unregister(s)
        s.close()
        del self.conns[s]
        return 0

    def _frames(self, c: _Conn, end: float) -> int:
        """Hands over the complete frames in `c.buf` (until the time budget `end`); a trailing partial
        frame stays, and one larger than the scratch buffer moves to `c.big`."""
        buf = c.buf
        n, pos, stop = 0, 0, len(buf)
        unpack, on_message = FRAME.unpack_from, self.on_message
        view = memoryview(buf)
        while stop - pos >= 4:
            (size,) = unpack(buf, pos)
            if stop - pos - 4 < size:
                if size > len(self.scratch):  # a large frame: collect it apart from the small-frame buffer
                    if len(c.big) < size:
                        c.big = bytearray(size)  # kept for the next large frame: no allocation per message
                    c.size = size
                    have = stop - pos - 4
                    c.big[:have] = view[pos + 4 : stop]
                    c.filled = have
                    pos = stop
                break
            on_message(bytes(view[pos + 4 : pos + 4 + size]))
            pos += 4 + size
            n += 1
            if not n & 255 and time.monotonic() > end:
                break
        view.release()
        del buf[:pos]
        return n

    def ready(self) -> bool:
        return True  # registered and listening: a producer created from now on connects to it

    def close(self) -> None:
        self.reg.unlink(missing_ok=True)
        for s in list(self.conns):
            s.close()
        self.listener.close()
        self.sel.close()


class TcpDriver(api.Driver):
    name: ClassVar[str] = "tcp"

    def __init__(self, common: Mapping[str, str]) -> None:
        super().__init__(common)
        self.dir = Path(common.get("tcp.dir") or paths.home() / "tcp")
        self.host = str(common.get("tcp.host") or "127.0.0.1")

    def validate(self, producer_config: Mapping[str, str], consumer_config: Mapping[str, str]) -> None:
        ProducerSettings.of(producer_config)
        settings(NoSettings, consumer_config, "consumerConfig", "TCP")

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None:
        for t in topics:
            if os.sep in t.name or t.name.startswith("."):
                raise UserError(f"TCP topic {t.name!r}: a plain name is needed (it names a folder)")
        if validate_only:
            return
        try:
            for t in topics:
                (self.dir / t.name).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EnvironmentProblem(f"tcp.dir {self.dir}: {e.strerror}") from None

    def delete_topics(self, names: Sequence[str]) -> None:
        for n in names:
            shutil.rmtree(self.dir / n, ignore_errors=True)

    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer:
        return TcpProducer(self.dir / topic, ProducerSettings.of(overrides or {}))

    def create_consumer(
        self, topic: str, subscription: str, on_message: api.MessageCallback, overrides: Mapping[str, str] | None = None
    ) -> api.Consumer:
        return TcpConsumer(self.dir / topic / subscription, self.host, on_message)
