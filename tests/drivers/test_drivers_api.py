"""Driver registry: entry points, lazy import, clear errors."""

from __future__ import annotations

import pytest

from core.errors import UserError
from drivers import api
from drivers.kafka import KafkaDriver, translate


def test_kafka_driver_registered_by_entry_point() -> None:
    assert "kafka" in api.available_drivers()
    assert api.load_driver("kafka") is KafkaDriver


def test_unknown_driver_names_the_installed_ones() -> None:
    with pytest.raises(UserError, match=r"unknown driver 'nats'.*kafka"):
        api.load_driver("nats")


def test_bad_client_config_is_a_user_error_before_any_connection() -> None:
    drv = KafkaDriver({"bootstrap.servers": "127.0.0.1:1"})  # nothing listens there
    with pytest.raises(UserError, match=r"producerConfig: .*linger\.mss"):
        drv.validate({"linger.mss": "5"}, {})
    with pytest.raises(UserError, match="consumerConfig"):
        drv.validate({}, {"fetch.min.bytes": "-3"})
    drv.validate({"acks": "all", "batch.size": "131072", "buffer.memory": "67108864"}, {"fetch.min.bytes": "1"})


def test_java_only_keys_are_translated() -> None:
    assert translate({"buffer.memory": "33554432", "acks": "all"}) == {
        "queue.buffering.max.kbytes": "32768",
        "acks": "all",
    }


def test_the_kafka_clients_open_their_sockets_as_javas_do_unless_the_workload_says_otherwise() -> None:
    """The Java clients set TCP_NODELAY on every connection; librdkafka leaves Nagle's algorithm on: both of the
    harness's clients turn it off (drivers.kafka.NODELAY), and a workload's key of the same name wins."""
    drv = KafkaDriver({"bootstrap.servers": "127.0.0.1:1"})
    assert drv._producer_conf(None)["socket.nagle.disable"] == "true"
    assert drv._consumer_conf("g", None)["socket.nagle.disable"] == "true"
    assert drv._producer_conf({"socket.nagle.disable": "false"})["socket.nagle.disable"] == "false"
    assert drv._consumer_conf("g", {"socket.nagle.disable": "false"})["socket.nagle.disable"] == "false"


def test_a_kafka_producer_keeps_javas_five_requests_in_flight_unless_the_workload_says_otherwise() -> None:
    """librdkafka allows 1,000,000 requests in flight per connection, the Java producer 5: the harness's producer
    sends as the Java one does (drivers.kafka.HARNESS_PRODUCER), and a producerConfig key overrides it."""
    drv = KafkaDriver({"bootstrap.servers": "127.0.0.1:1"})
    assert drv._producer_conf(None)["max.in.flight.requests.per.connection"] == "5"
    assert drv._producer_conf({"acks": "all"})["max.in.flight.requests.per.connection"] == "5"
    assert (
        drv._producer_conf({"max.in.flight.requests.per.connection": "1"})["max.in.flight.requests.per.connection"]
        == "1"
    )
