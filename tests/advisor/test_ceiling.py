"""The ceiling model of docs/design.md, its CLI, and the disk probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.ceiling import p_max
from cluster.probe import probe_disk
from core.errors import UserError
from tests.helpers import cli


def test_reference_case_is_1170_network_bound() -> None:
    # docs/reference.md §1: 3 brokers, r=3, C=1, 10GbE ≈ 1,170 MB/s, disks 8 × 150 = 1,200 MB/s.
    c = p_max(1170, brokers=3, rf=3, consumer_groups=1, disk_mb_s=1200)
    assert c.mb_s == pytest.approx(1170)
    assert c.binding.startswith("network")
    assert c.terms["disk"] == pytest.approx(1200)
    # each broker receives P/3 produce + 2P/3 replication, and sends 2P/3 replication + P/3 to consumers
    assert c.per_broker["in"] == pytest.approx(1170) and c.per_broker["out"] == pytest.approx(1170)


@pytest.mark.parametrize(
    ("kwargs", "bound", "mb_s"),
    [
        # inbound-only NIC limit (asymmetric link): N·B_in/r
        ({"nic_in_mb_s": 300, "nic_out_mb_s": 1000, "disk_mb_s": 1000}, "network_in", 300),
        # three consumer groups: each broker sends (r-1+C)/N = 5/3 P
        ({"nic_mb_s": 1000, "consumer_groups": 3, "disk_mb_s": 5000}, "network_out", 600),
        ({"nic_mb_s": 1000, "disk_mb_s": 200}, "disk", 200),
        # one producer host on a 100 MB/s NIC carries everything the cluster receives
        ({"nic_mb_s": 1000, "producer_hosts": 1, "client_nic_mb_s": 100}, "client_network", 100),
        # two consumer groups on two consumer hosts: they receive 2P between them
        ({"nic_mb_s": 1000, "consumer_groups": 2, "consumer_hosts": 2, "client_nic_mb_s": 100}, "client_network", 100),
    ],
)
def test_each_resource_can_bind(kwargs: dict, bound: str, mb_s: float) -> None:
    c = p_max(brokers=3, rf=3, **kwargs)
    assert c.binding == bound, c.terms
    assert c.mb_s == pytest.approx(mb_s)


def test_more_brokers_and_lower_rf_raise_the_ceiling_and_compression_scales_it() -> None:
    assert p_max(100, brokers=6, rf=3).mb_s == pytest.approx(2 * p_max(100, brokers=3, rf=3).mb_s)
    assert p_max(100, brokers=3, rf=1, consumer_groups=1).mb_s == pytest.approx(300)
    assert p_max(100, brokers=3, compression_ratio=0.5).mb_s == pytest.approx(200)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"nic_mb_s": 100, "brokers": 2, "rf": 3}, "--rf"),
        ({"nic_mb_s": 100, "brokers": 0, "rf": 1}, "--brokers"),
        ({"nic_mb_s": 0}, "--nic-mbps"),
        ({"nic_mb_s": float("nan")}, "--nic-mbps"),
        ({"nic_mb_s": 100, "disk_mb_s": -5}, "--disk-mbps"),
        ({"nic_mb_s": 100, "consumer_groups": -1}, "--consumer-groups"),
        ({"nic_mb_s": 100, "compression_ratio": 0}, "--compression-ratio"),
        ({"nic_mb_s": 100, "acks": "2"}, "--acks"),
    ],
)
def test_bad_combinations_are_clear_errors(kwargs: dict, field: str) -> None:
    with pytest.raises(UserError, match=field):
        p_max(**kwargs)


def test_ceiling_cli_json_and_errors() -> None:
    proc = cli("ceiling", "--brokers", "3", "--rf", "3", "--nic-mbps", "1170", "--disk-mbps", "1200", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ceiling_mb_s"] == pytest.approx(1170) and out["bound"].startswith("network")
    assert set(out["limits"]) == {"network_in", "network_out", "disk"}
    proc = cli("ceiling", "--brokers", "3", "--nic-mbps", "100", "--disk-mbps", "30")
    assert proc.returncode == 0 and "bound by disk" in proc.stdout
    bad = cli("ceiling", "--brokers", "2", "--rf", "3", "--nic-mbps", "100")
    assert bad.returncode == 2 and "--rf" in bad.stderr and "Traceback" not in bad.stderr
    bad = cli("ceiling", "--brokers", "3", "--nic-mbps", "0")
    assert bad.returncode == 2 and "--nic-mbps" in bad.stderr


def test_disk_probe_writes_and_cleans_up(tmp_path: Path) -> None:
    dirs = [tmp_path / f"d{i}" for i in range(3)]
    d = probe_disk(dirs, segment_mb=8, files=2)
    assert d.write_mb_s_measured > 0 and d.write_mb_s_total == pytest.approx(3 * d.write_mb_s_measured, rel=0.01)
    assert d.fsync_per_s > 0 and d.fsync_ms_p50 > 0
    assert all(not list(x.iterdir()) for x in dirs), "probe files left behind"
    proc = cli("probe", "--log-dir", str(dirs[0]), "--segment-mb", "4", "--files", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["write_mb_s_measured"] > 0
