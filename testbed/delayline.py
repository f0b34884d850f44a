"""A delay line for one host of the shaped testbed, on kernels without the netem qdisc: every packet netfilter
hands it waits `delay_ms` in a queue of netfilter's before it goes on.

iptables sends what the host receives (not its loopback) to an NFQUEUE (testbed.netns.degrade; `--queue-bypass`:
with no program on the queue they pass); this process, run inside the host's namespace, binds that queue over
netlink with metadata only (no payload copied) and GSO packets whole (NFQA_CFG_F_GSO: the kernel does not cut
them into segments first, so there are fewer to hold), and accepts the packets in arrival order once each has
waited `delay_ms`: one batch verdict accepts every packet up to an id, so a burst costs one message back. The
queue fails open when full (the kernel accepts what it cannot queue): a delay line never drops a packet. What a
stream through it carries: benchmarks/delay_line.py.

    ip netns exec <ns> python -m testbed.delayline --queue 7 --delay-ms 20

The kernel's nfnetlink_queue protocol (include/uapi/linux/netfilter/nfnetlink_queue.h) is spoken directly:
a struct per message, no library.
"""

from __future__ import annotations

import argparse
import collections
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 2, 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_GSO = 1, 4
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1
SOL_NETLINK, NETLINK_NO_ENOBUFS = 270, 5
QUEUE_MAXLEN = 65536


def _attr(kind: int, payload: bytes) -> bytes:
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * (-n % 4)


def _msg(msg: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body


def _check_ack(sock: socket.socket, what: str) -> None:
    data = sock.recv(65536)
    kind = struct.unpack_from("=H", data, 4)[0]
    if kind == NLMSG_ERROR:
        (err,) = struct.unpack_from("=i", data, 16)
        if err:
            raise OSError(-err, f"nfnetlink_queue {what}: {os.strerror(-err)}")


def bind(queue: int) -> socket.socket:
    """A netlink socket bound to NFQUEUE `queue`: metadata only, a long queue that fails open."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    try:
        sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root): bursts while packets wait
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
    cmd = _attr(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, socket.htons(socket.AF_INET)))
    sock.send(_msg(NFQNL_MSG_CONFIG, queue, cmd, NLM_F_REQUEST | NLM_F_ACK, 1))
    _check_ack(sock, f"bind queue {queue}")
    params = _attr(NFQA_CFG_PARAMS, struct.pack(">IB", 0, NFQNL_COPY_META))
    params += _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", QUEUE_MAXLEN))
    flags = struct.pack(">I", NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO)
    params += _attr(NFQA_CFG_FLAGS, flags) + _attr(NFQA_CFG_MASK, flags)
    sock.send(_msg(NFQNL_MSG_CONFIG, queue, params, NLM_F_REQUEST | NLM_F_ACK, 2))
    _check_ack(sock, "configure")
    return sock


def packet_ids(data: bytes) -> list[int]:
    """The packet ids of the NFQNL_MSG_PACKET messages in one netlink read."""
    out, off = [], 0
    while off + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, off)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            a = off + 20  # nlmsghdr (16) + nfgenmsg (4)
            while a + 4 <= off + length:
                alen, akind = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if akind & 0x7FFF == NFQA_PACKET_HDR:
                    out.append(struct.unpack_from(">I", data, a + 4)[0])
                    break
                a += alen + (-alen % 4)
        off += length + (-length % 4)
    return out


def accept_upto(queue: int, packet_id: int) -> bytes:
    """The batch verdict that accepts every packet of `queue` up to `packet_id`."""
    return _msg(NFQNL_MSG_VERDICT_BATCH, queue, _attr(NFQA_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, packet_id)))


def run(queue: int, delay_ms: float) -> None:
    """Hold every packet of `queue` for `delay_ms`, in order, until SIGTERM or SIGINT, or until the process that
    started it is gone (the packets then pass: the rules bypass a queue nobody reads)."""
    parent = os.getppid()
    sock = bind(queue)
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    delay = delay_ms / 1000
    waiting: collections.deque[tuple[float, int]] = collections.deque()
    print(f"delay line: queue {queue}, {delay_ms:g} ms", flush=True)
    while not stop and os.getppid() == parent:
        now = time.monotonic()
        timeout = max(0.0, waiting[0][0] - now) if waiting else 0.2
        try:
            ready, _, _ = select.select([sock], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        if ready:
            for pid in packet_ids(sock.recv(1 << 20)):
                waiting.append((now + delay, pid))
        last = None
        while waiting and waiting[0][0] <= now:
            last = waiting.popleft()[1]
        if last is not None:
            sock.send(accept_upto(queue, last))
    if waiting:  # let what waits go on at once: unbinding would leave it to the bypass
        sock.send(accept_upto(queue, waiting[-1][1]))
    sock.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.delayline", description=__doc__.split("\n\n")[0])
    ap.add_argument("--queue", type=int, required=True, help="the NFQUEUE number iptables sends the packets to")
    ap.add_argument("--delay-ms", type=float, required=True, help="how long each packet waits, ms")
    a = ap.parse_args(argv)
    if not 0 < a.delay_ms <= 20_000:  # testbed.netns.degrade holds 2 x a fault's delay (at most 10 s) here
        print("--delay-ms: between 0 and 20000 ms", file=sys.stderr)
        return 2
    run(a.queue, a.delay_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
