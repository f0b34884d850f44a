"""What the judgement reads from a cluster profile (records.profile.Limits): the measured link and disk rates and
the broker count, from a profile as recorded, and nothing made up when the profile does not say."""

from __future__ import annotations

import json

from records.profile import Limits
from tests.helpers import FIXTURES


def test_a_recorded_profile_gives_its_measured_link_disk_and_brokers() -> None:
    doc = json.loads((FIXTURES / "recorded" / "shaped-tuned" / "profile.json").read_text())
    lim = Limits.of(doc)
    assert lim.nic_mb_s == doc["network"]["nic_mb_s_measured"] and lim.nic_mb_s != doc["network"]["nic_mb_s_configured"]
    assert lim.disk_mb_s == doc["disk"]["write_mb_s_measured"] and lim.brokers == len(doc["brokers"]) == 3


def test_what_a_profile_does_not_measure_stays_unknown() -> None:
    assert Limits.of(None) == Limits(None, None, 3)
    loopback = {"brokers": [{"id": i} for i in range(1, 6)], "network": {"mode": "loopback", "shaped": False}}
    assert Limits.of(loopback) == Limits(nic_mb_s=None, disk_mb_s=None, brokers=5)
