"""The local cluster kafkatune runs itself, and the other messaging systems' servers.

dist (Kafka's jars from Maven Central, `kafka/pom.xml`; the Maven install Pulsar's jars use too), lifecycle
(the 3-node KRaft testbed: up, down, kill, restart, rolling restarts, heal, status), nodes (one node's files
and process), tls (the SASL_SSL client listener), netns (the shaped network: namespaces, a bridge, tc),
profile (the testbed's measured ceilings), writeback (the host's page-cache writeback while a testbed is up),
servers (Mosquitto, a Zenoh router, a Pulsar standalone) and
zenoh_router (the router process).
"""
