"""cluster.admin against the real testbed: which brokers are down, told at once."""

from __future__ import annotations

from cluster import admin
from records.testbed import TestbedState


def test_down_names_a_broker_the_metadata_lacks_and_none_of_the_live_ones(healthy: TestbedState) -> None:
    a = admin.admin_client(healthy.bootstrap_servers)
    assert admin.down(a, [1, 2, 3]) == []
    assert admin.down(a, [1, 9]) == ["broker 9 is not in the cluster's metadata"]
