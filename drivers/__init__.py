"""Messaging-system drivers behind one small contract (`api`), and the conformance suite each passes (`testing`).

A driver creates topics, producers and consumers for one system and moves bytes; it never takes a
timestamp a measurement uses (loadgen owns the clock) and never touches broker configuration
(brokerconf). One module per system: kafka (confluent-kafka), kafka_python, mqtt (paho), zenoh_driver,
dds (Cyclone DDS), pulsar_driver, tcp (the raw-socket baseline). They are found by the `kafkatune.drivers`
entry point group and imported lazily, so a system's client library is needed only when it is used.
`handoff` carries completions and messages from a client library's threads to the worker's.
"""

from __future__ import annotations

from drivers.api import Consumer, DeliveryCallback, Driver, MessageCallback, Producer, TopicSpec, load_driver

__all__ = ["Consumer", "DeliveryCallback", "Driver", "MessageCallback", "Producer", "TopicSpec", "load_driver"]
