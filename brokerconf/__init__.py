"""Broker side of kafkatune: the Kafka distribution, the local testbed cluster, broker metrics.

Later: the config catalogue, applying and reverting configs, remote hosts over SSH.
"""
