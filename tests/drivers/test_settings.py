"""A driver's settings record: the keys it reads, their defaults, and the refusal of a wrong key or value, naming
the field and what is allowed (drivers.settings), for each driver that has one."""

from __future__ import annotations

import pytest

from core.errors import UserError
from drivers import dds, mqtt, pulsar_driver, tcp, zenoh_driver
from drivers.settings import known


def test_absent_keys_take_the_defaults_and_given_ones_their_types() -> None:
    assert mqtt.Settings.of({}, "producerConfig") == mqtt.Settings(1, mqtt.MAX_INFLIGHT, 100000, mqtt.BUFFER_MEMORY)
    got = pulsar_driver.ProducerSettings.of({"batching": "false", "max.pending.messages": "5", "chunking": "true"})
    assert (got.batching, got.max_pending_messages, got.chunking, got.compression) == (False, 5, True, "none")
    assert mqtt.Settings.of({"qos": "2"}, "consumerConfig").qos == 2
    assert dds.Settings.of({"history": "KEEP_LAST", "depth": "8"}, "producerConfig").depth == 8
    assert tcp.ProducerSettings.of({"buffer.bytes": "1024"}).buffer_bytes == 1024


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: mqtt.Settings.of({"qos": "3"}, "producerConfig"), "producerConfig: qos must be one of 0, 1, 2"),
        (
            lambda: mqtt.Settings.of({"acks": "all"}, "consumerConfig"),
            "consumerConfig: unknown MQTT key 'acks'; known: qos, max.inflight, max.queued, buffer.memory",
        ),
        (lambda: pulsar_driver.ProducerSettings.of({"batching": "yes"}), "batching must be one of true, false"),
        (lambda: pulsar_driver.ConsumerSettings.of({"type": "queue"}), "type must be one of shared, exclusive"),
        (lambda: dds.Settings.of({"depth": "0"}, "producerConfig"), "depth must be a positive integer (got '0')"),
        (lambda: zenoh_driver.ProducerSettings.of({"congestion_control": "WAIT"}), "must be one of BLOCK, DROP"),
        (lambda: tcp.ProducerSettings.of({"buffer.bytes": "-1"}), "buffer.bytes must be a positive integer"),
    ],
)
def test_a_wrong_key_or_value_is_refused_naming_it_and_what_is_allowed(build: object, says: str) -> None:
    with pytest.raises(UserError, match=says.replace("(", r"\(").replace(")", r"\)")):
        build()  # type: ignore[operator]


def test_each_record_reads_the_keys_its_driver_documents() -> None:
    """The module docstring (or the record's own) names every key the record reads, as the user's reference."""
    records = [
        (mqtt, mqtt.Settings),
        (pulsar_driver, pulsar_driver.ProducerSettings),
        (pulsar_driver, pulsar_driver.ConsumerSettings),
        (dds, dds.Settings),
        (zenoh_driver, zenoh_driver.ProducerSettings),
        (tcp, tcp.ProducerSettings),
    ]
    for module, cls in records:
        doc = (module.__doc__ or "") + (cls.__doc__ or "")
        assert [k for k in known(cls) if f"`{k}`" not in doc] == [], cls
    assert known(pulsar_driver.ConsumerSettings) == ["receiver.queue.size", "type"]
