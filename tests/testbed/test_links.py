"""testbed.links: what TCP met on each pair of shaped hosts over a run, summed from per-connection counters into
typed records (records.result.Link), busiest pair first. Pure: the counters are given, no namespace is read."""

from __future__ import annotations

from records.result import Link
from testbed.links import MACHINE, Sampler, parse_ss
from testbed.netns import NetHost, ShapedNetwork

NET = ShapedNetwork(
    "kt",
    "198.18.0",
    "kt-br",
    "198.18.0.1",
    tuple(NetHost(n, f"kt-{n}", f"198.18.0.{i}") for i, n in ((11, "b1"), (12, "b2"), (21, "c1"))),
    25.0,
)


def test_the_run_s_segments_are_summed_per_host_pair_and_typed() -> None:
    s = Sampler(NET)
    b1_b2, c1_b1, scrape = (
        ("kt-b1", "198.18.0.11:40000", "198.18.0.12:9092"),
        ("kt-c1", "198.18.0.21:1", "[::ffff:198.18.0.11]:9092"),
        ("kt-b1", "198.18.0.11:9404", "198.18.0.1:5000"),
    )
    s.before = {b1_b2: (100, 1, 1.0)}
    # b1->b2 sent 1,000 segments and resent 10 during the run; c1's connection opened during it (counts from 0)
    s.last = {b1_b2: (1100, 11, 1.2), c1_b1: (50, 0, 2.0), scrape: (7, 0, 0.1)}
    s.rtts = {("b1", "b2"): [1.0, 3.0, 2.0]}
    assert s.rows() == [
        Link(("b1", "b2"), data_segs=1000, retrans=10, retrans_pct=1.0, rtt_ms=2.0, rtt_readings=3),
        Link(("b1", "c1"), data_segs=50, retrans=0, retrans_pct=0.0, rtt_ms=None, rtt_readings=0),
        Link(("b1", MACHINE), data_segs=7, retrans=0, retrans_pct=0.0, rtt_ms=None, rtt_readings=0),
    ]


def test_a_connection_seen_again_with_lower_counters_is_a_new_one_counted_from_zero() -> None:
    s = Sampler(NET)
    conn = ("kt-b1", "198.18.0.11:40000", "198.18.0.12:9092")
    s.before, s.last = {conn: (5000, 40, 1.0)}, {conn: (300, 2, 1.0)}
    assert s.rows() == [Link(("b1", "b2"), data_segs=300, retrans=2, retrans_pct=0.667, rtt_readings=0)]


def test_ss_output_reads_as_sent_resent_and_round_trip() -> None:
    text = "0 0 198.18.0.11:40000 198.18.0.12:9092\n\t cubic rtt:1.5/0.2 data_segs_out:42 retrans:0/3\n"
    assert parse_ss(text) == {("198.18.0.11:40000", "198.18.0.12:9092"): (42, 3, 1.5)}
