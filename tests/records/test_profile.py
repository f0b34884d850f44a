"""What the judgement reads from a cluster profile (records.profile.Limits): the measured link and disk rates and
the broker count, from a profile as recorded, and nothing made up when the profile does not say."""

from __future__ import annotations

import json

from records.profile import ClusterProfile, Limits, ProfileBroker
from tests.helpers import FIXTURES


def test_a_recorded_profile_gives_its_measured_link_disk_and_brokers() -> None:
    doc = json.loads((FIXTURES / "recorded" / "shaped-tuned" / "profile.json").read_text())
    lim = Limits.of(ClusterProfile.from_json(doc))
    assert lim.nic_mb_s == doc["network"]["nic_mb_s_measured"] and lim.nic_mb_s != doc["network"]["nic_mb_s_configured"]
    assert lim.disk_mb_s == doc["disk"]["write_mb_s_measured"] and lim.brokers == len(doc["brokers"]) == 3


def test_what_a_profile_does_not_measure_stays_unknown() -> None:
    assert Limits.of(None) == Limits(None, None, 3)
    loopback = {"brokers": [{"id": i} for i in range(1, 6)], "network": {"mode": "loopback", "shaped": False}}
    assert Limits.of(ClusterProfile.from_json(loopback)) == Limits(nic_mb_s=None, disk_mb_s=None, brokers=5)


def test_a_profile_reads_back_as_written_and_an_older_one_without_the_newer_keys() -> None:
    """profile.json is a typed record: to_json then from_json is the same profile; keys a reader does not know are
    left out, and keys an older writer did not write take their defaults."""
    p = ClusterProfile("testbed", (ProfileBroker(1, "127.0.0.1"),), "h:1", {"nic_mb_s_measured": 12.0}, {}, probed_ns=1)
    assert ClusterProfile.from_json(json.loads(json.dumps(p.to_json()))) == p
    old = ClusterProfile.from_json({"brokers": [{"id": 1, "rack": "r1"}], "network": {"mode": "loopback"}})
    assert old.brokers == (ProfileBroker(1),) and old.machine == {} and old.source == "unknown"
