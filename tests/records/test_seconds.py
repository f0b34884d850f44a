"""The per-second rows typed at their edge (records.seconds): every column a reader uses, a missing or NaN figure
as None (never 0), and the columns named after a link, a broker or a part of a produce request grouped by name."""

from __future__ import annotations

import math

from records.seconds import BrokerSecond, ClientSecond, HostSecond


def test_a_broker_row_keeps_its_figures_and_groups_the_produce_time_by_part() -> None:
    row = {
        "broker_id": 2,
        "second": 7,
        "phase": "measure",
        "t_ns": 1,
        "restarted": False,
        "produce_requests_per_s": 400.0,
        "produce_queue_ms_per_s": 12.0,
        "produce_remote_ms_per_s": 800.0,
        "bytes_in_per_s": math.nan,  # a NaN is not a figure
        "jit_compile_s_per_s": 0.3,
    }
    b = BrokerSecond.of(row)
    assert (b.broker_id, b.second, b.phase, b.restarted) == (2, 7, "measure", False)
    assert b.produce_ms_per_s == {"produce_queue_ms": 12.0, "produce_remote_ms": 800.0}
    assert b.bytes_in_per_s is None and b.request_handler_idle is None and b.jit_compile_s_per_s == 0.3
    assert BrokerSecond.of({"second": 0, "restarted": True}).restarted


def test_a_host_row_names_each_link_and_direction_and_each_brokers_wait() -> None:
    row = {
        "second": 3,
        "cpu_busy": 0.5,
        "other_cpu": None,
        "other_top": "",
        "broker1_cpu": 0.4,
        "broker1_wait": 0.02,
        "link_kt1_in": 0.8,
        "link_kt1_out": 0.3,
        "link_kt1_peak_in": 1.0,
        "link_kt1_peak_out": 0.5,
        "link_kt1_backlog": 1500,
        "link_kt1_dropped": 2,
    }
    h = HostSecond.of(row)
    assert (h.second, h.cpu_busy, h.other_cpu, h.other_top) == (3, 0.5, None, None)
    assert h.broker_wait == {"1": 0.02}
    assert h.link == {("kt1", "in"): 0.8, ("kt1", "out"): 0.3}
    assert h.link_peak == {("kt1", "in"): 1.0, ("kt1", "out"): 0.5} and h.link_dropped == {"kt1": 2.0}


def test_a_worker_row_keeps_its_clients_figures() -> None:
    c = ClientSecond.of({"role": "producer", "worker": 1, "second": 4, "queue_p99_ms": 9.5, "msgs": 100})
    assert (c.role, c.worker, c.second, c.queue_p99_ms, c.rtt_p99_ms) == ("producer", 1, 4, 9.5, None)
