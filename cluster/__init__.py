"""Reaching and observing a Kafka cluster, whoever runs it.

target (the one resolver: the local testbed, any bootstrap, or an inventory's cluster, as a `Target`),
admin (the Admin API: reach, brokers, ISR), metrics (the brokers' JMX through the Prometheus exporter),
inventory (a cluster kafkatune did not start: hosts, SSH, security, secrets by reference), ssh (paramiko
with checked host keys), clients (client hosts that run load workers), hosts (`hosts check`), probe and
remote_probe (link and disk ceilings, here or over SSH).
"""
