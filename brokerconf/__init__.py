"""Broker configuration: what can be set, setting it, and putting it back.

catalogue (every sweepable key: scope, range, Kafka's default, how it is applied; cross-key rules),
properties (server.properties text), apply (dynamic configs per broker id, read back; restart-only ones
through a `Restarts`: the testbed's rolling restart or, over SSH, remote), guard (the pre-sweep snapshot
restored on every exit path).
"""
