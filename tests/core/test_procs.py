"""core.procs.free_port: a port for a server started next, which no outgoing connection can take first."""

from __future__ import annotations

import socket

import pytest

from core import procs


def test_a_free_port_is_bindable_and_outside_the_range_outgoing_connections_take_theirs_from() -> None:
    ephemeral = procs.ephemeral_ports()
    ports = [procs.free_port() for _ in range(50)]
    assert all(p in procs.FREE_PORTS and p not in ephemeral for p in ports), ports
    assert len(set(ports)) > 40  # drawn at random, not the kernel's next port
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[0]))  # a server can take it


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", procs.free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(procs, "FREE_PORTS", range(port, port + 2))  # the taken port and the one after it
        assert {procs.free_port() for _ in range(20)} == {port + 1}
