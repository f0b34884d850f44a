"""The ping-pong's account of a missing reply: what the echo saw, so the leg that lost it is named."""

from __future__ import annotations

import queue

from compare.pingpong import _echo_report, _EchoSeen


def test_a_stopped_echo_says_what_it_received_and_what_became_of_its_replies() -> None:
    q: queue.Queue[tuple[str, object]] = queue.Queue()
    q.put(("ready", None))
    q.put(("done", _EchoSeen(received=5, delivered=3, failed=2, last_error="timed out", consumer="group up/steady")))
    assert _echo_report(q) == (
        "the echo received 5 ping(s), its replies: 3 delivered, 2 failed (last: timed out); "
        "the echo's consumer: group up/steady"
    )


def test_an_echo_that_failed_or_said_nothing_is_reported_as_such() -> None:
    q: queue.Queue[tuple[str, object]] = queue.Queue()
    q.put(("error", "Traceback: boom"))
    assert _echo_report(q) == "the echo side failed:\nTraceback: boom"
    assert _echo_report(queue.Queue(), wait_s=0.01) == "the echo said nothing when stopped"
