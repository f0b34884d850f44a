"""'Lost' means lost (loadgen.verify, loadgen.result): a missing acknowledged message found when the log is read
again was late, not lost, and only what is not in the log fails the run. (On a real cluster, with a bounced leader:
benchmarks/loss_matrix.py.)"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from drivers import api
from loadgen import payload
from loadgen.channel import Timing
from loadgen.rawrun import ConsumerEnd, ProducerEnd, RawRun, Verified
from loadgen.result import build
from loadgen.verify import missing, verify
from loadgen.workload import parse_workload


class LogOnly(api.Driver):
    """A driver whose only use here is `replay`: the log a test says the brokers hold."""

    name = "log-only"

    def __init__(self, log: Mapping[str, Sequence[bytes]] | None) -> None:
        super().__init__({})
        self.log = log

    def replay(self, topic: str, timeout_s: float = 60.0) -> Iterator[bytes] | None:
        return None if self.log is None else iter(self.log[topic])

    def create_topics(self, topics: Sequence[api.TopicSpec], *, validate_only: bool = False) -> None: ...
    def delete_topics(self, names: Sequence[str]) -> None: ...
    def create_producer(self, topic: str, overrides: Mapping[str, str] | None = None) -> api.Producer: ...  # type: ignore[empty-body]
    def create_consumer(
        self,
        topic: str,
        subscription: str,
        on_message: api.MessageCallback,  # type: ignore[empty-body]
        overrides: Mapping[str, str] | None = None,
    ) -> api.Consumer: ...


def raw_run(acked: int, received: set[int]) -> RawRun:
    """One producer that had `acked` messages acknowledged; one consumer that received `received` of them."""
    w = parse_workload({"name": "v", "messageSize": 100, "testDurationMinutes": 0.05})
    raw = RawRun(w, ["t"], Timing(t0_ns=0, measure_start_ns=0, measure_end_ns=3_000_000_000), 0)
    seen = bytearray(acked)
    for s in received:
        seen[s] = 1
    raw.producers[0] = ProducerEnd(sent=acked, acked=acked, acked_map=bytes([1] * acked))
    raw.consumers[0] = ConsumerEnd(received=len(received), seen={0: bytes(seen)})
    return raw


def message(seq: int) -> bytes:
    return payload.pack(0, seq, 0) + bytes(80)


def test_a_missing_message_in_the_log_is_late_and_one_not_in_it_is_lost() -> None:
    raw = raw_run(10, set(range(7)))  # 7, 8 and 9 never arrived
    assert missing(raw) == {0: {7, 8, 9}}
    log = [message(s) for s in range(9)]  # 9 is not in the log
    raw.verified = verify(raw, LogOnly({"t": log}))
    assert raw.verified == Verified(True, 3, {0: (7, 8)})
    s = build(raw).result.summary
    assert s.lost == 1 and s.not_consumed_in_time == 2 and s.loss_verified is True
    assert s.per_producer["0"].lost_seqs == ((9, 9),)


def test_nothing_missing_reads_nothing_and_a_system_without_a_log_says_so() -> None:
    whole = raw_run(5, set(range(5)))
    assert verify(whole, LogOnly(None)) is None  # nothing to verify: the log is never read
    assert build(whole).result.summary.loss_verified is None
    raw = raw_run(5, {0, 1})
    raw.verified = verify(raw, LogOnly(None))
    assert raw.verified == Verified(False, 3)
    s = build(raw).result.summary
    assert s.lost == 3 and s.not_consumed_in_time == 0 and s.loss_verified is False
