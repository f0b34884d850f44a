"""Broker metrics from the JMX exporter's text format; counters to per-second rates."""

from __future__ import annotations

import pytest

from cluster.metrics import BrokerSample, parse, rates

PAGE = """# HELP x
kafka_server_BrokerTopicMetrics_Count{name="BytesInPerSec",} 1000.0
kafka_server_BrokerTopicMetrics_Count{name="BytesInPerSec",topic="t1",} 7.0
kafka_server_BrokerTopicMetrics_Count{name="ReplicationBytesInPerSec",} 2000.0
kafka_server_BrokerTopicMetrics_OneMinuteRate{name="BytesInPerSec",} 12.5
kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions",} 3.0
kafka_controller_KafkaController_Value{name="ActiveControllerCount",} 1.0
java_lang_OperatingSystem_ProcessCpuLoad 0.25
"""


def test_parse_picks_cluster_wide_series_only() -> None:
    m = parse(PAGE)
    assert m["bytes_in"] == 1000.0  # not the per-topic row, not the one-minute rate
    assert m["replication_bytes_in"] == 2000.0
    assert m["under_replicated"] == 3.0 and m["active_controller"] == 1.0
    assert m["process_cpu_load"] == 0.25
    assert "bytes_out" not in m


def test_gc_pause_time_sums_every_collectors_pauses_and_leaves_concurrent_cycles_out() -> None:
    g1 = (
        'jvm_gc_collection_seconds_sum{gc="G1 Young Generation",} 1.5\n'
        'jvm_gc_collection_seconds_sum{gc="G1 Old Generation",} 0.5\n'
    )
    assert parse(g1)["gc_pause_s"] == 2.0
    shenandoah = (
        'jvm_gc_collection_seconds_sum{gc="Shenandoah Pauses",} 0.25\n'
        'jvm_gc_collection_seconds_sum{gc="Shenandoah Cycles",} 9.0\n'
        'jvm_gc_collection_seconds_count{gc="Shenandoah Pauses",} 40.0\n'
        'jvm_gc_collection_seconds_count{gc="Shenandoah Cycles",} 10.0\n'
    )
    m = parse(shenandoah)  # the cycles ran beside Kafka: only the pauses held its requests
    assert m["gc_pause_s"] == 0.25 and m["gc_pauses"] == 40.0


def test_rates_are_deltas_over_time_and_survive_a_restart() -> None:
    s = [
        BrokerSample(1, 0, {"bytes_in": 0.0}),
        BrokerSample(1, 2_000_000_000, {"bytes_in": 4000.0}),
        BrokerSample(1, 3_000_000_000, {"bytes_in": 500.0}),
    ]  # restarted: counter reset
    rows = rates(s)
    assert [r["bytes_in_per_s"] for r in rows] == [2000.0, 500.0]


def test_request_handler_idle_is_the_broker_pools_own_meter_when_kafka_keeps_one() -> None:
    """A combined broker+controller node's aggregate meter counts the controller's idle threads too (KIP-1207):
    with the broker's one thread busy it still reads mostly idle; the broker pool's meter does not."""
    family = "kafka_server_KafkaRequestHandlerPool_Count"

    def page(agg: float, pool: float) -> str:
        return (
            f'{family}{{name="RequestHandlerAvgIdlePercent",}} {agg}\n'
            f'{family}{{name="BrokerRequestHandlerAvgIdlePercent",}} {pool}\n'
        )

    first, then = parse(page(0.0, 0.0)), parse(page(0.9e9, 0.05e9))
    assert first["broker_handler_idle_ns"] == 0.0 and then["request_handler_idle_ns"] == 0.9e9
    (row,) = rates([BrokerSample(1, 0, first), BrokerSample(1, 1_000_000_000, then)])
    assert row["request_handler_idle"] == 0.05
    older = {k: v for k, v in then.items() if k != "broker_handler_idle_ns"}  # Kafka before 4.2: the aggregate
    (row,) = rates([BrokerSample(1, 0, {"request_handler_idle_ns": 0.0}), BrokerSample(1, 1_000_000_000, older)])
    assert row["request_handler_idle"] == 0.9


def test_a_running_sum_that_dips_between_two_reads_is_not_taken_for_a_restart() -> None:
    """Count x Mean read as two attributes dips when a request lands between the reads; only a drop of the byte
    counters means the broker restarted and its counters began again."""
    s = [
        BrokerSample(1, 0, {"bytes_in": 100.0, "produce_queue_ms": 5000.0}),
        BrokerSample(1, 1_000_000_000, {"bytes_in": 200.0, "produce_queue_ms": 4999.2}),  # the race
        BrokerSample(1, 2_000_000_000, {"bytes_in": 300.0, "produce_queue_ms": 5003.0}),
        BrokerSample(1, 3_000_000_000, {"bytes_in": 50.0, "produce_queue_ms": 4.0}),  # restarted
    ]
    assert [r["produce_queue_ms_per_s"] for r in rates(s)] == [0.0, pytest.approx(3.8), 4.0]


def test_active_controllers_add_up_each_brokers_latest_value_across_second_boundaries() -> None:
    """The controller (broker 1) is scraped just before a second boundary, the others just after, every round:
    each row still sees one active controller. When the leadership moves to broker 3, a row in between sees 0."""
    s = 1_000_000_000
    samples = []
    for k in range(4):
        lead = 1 if k < 2 else 3
        samples += [
            BrokerSample(1, k * s + s - 1_000_000, {"active_controller": float(lead == 1)}),
            BrokerSample(2, k * s + s + 1_000_000, {"active_controller": 0.0}),
            BrokerSample(3, k * s + s + 2_000_000, {"active_controller": float(lead == 3)}),
        ]
    by_t = {(r["broker_id"], r["t_ns"]): r.get("active_controllers") for r in rates(samples)}

    def round_(k: int) -> list[float | None]:
        return [by_t[(b, k * s + s + d)] for b, d in ((1, -1_000_000), (2, 1_000_000), (3, 2_000_000))]

    assert round_(1) == [1.0, 1.0, 1.0]
    assert round_(2) == [0.0, 0.0, 1.0]  # broker 1 gave it up before broker 3 was seen to take it
    assert round_(3) == [1.0, 1.0, 1.0]
    # controllers of their own (not scraped): every broker reads 0, and nothing is said of the quorum
    quiet = [BrokerSample(b, k * s + b, {"active_controller": 0.0}) for k in range(3) for b in (1, 2, 3)]
    assert all("active_controllers" not in r for r in rates(quiet))
