"""Lossless modes lose nothing in a counted run through the real load harness (`kafkatune bench`).

Kafka with acks=all is counted in test_bench_kafka.py; here MQTT QoS 1, Zenoh with BLOCK congestion
control, and reliable KEEP_ALL DDS, each against its real server, producers and consumers in their own
worker processes, every acknowledged message matched to a consumed one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kafkatune, write_workload

RUN = {"warmupDurationMinutes": 0.05, "testDurationMinutes": 0.12, "partitionsPerTopic": 1}


def _bench(tmp: Path, name: str, bootstrap: str, **fields: Any) -> dict[str, Any]:
    wl = write_workload(tmp / f"{name}.yaml", name=name, **RUN, **fields)
    out = tmp / name
    proc = kafkatune("bench", str(wl), "--bootstrap", bootstrap, "--out", str(out), "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads((out / "result.json").read_text())["summary"])


@pytest.mark.parametrize(
    ("driver", "server", "producer", "consumer"),
    [
        ("mqtt", "mosquitto", {"qos": "1"}, {"qos": "1"}),
        ("zenoh", "zenoh", {"congestion_control": "BLOCK"}, {}),
    ],
)
def test_brokered_lossless_mode_loses_nothing(
    servers: tuple[Any, dict[str, str]], tmp_path: Path, driver: str, server: str, producer: dict, consumer: dict
) -> None:
    s = _bench(
        tmp_path,
        f"lossless-{driver}",
        servers[1][server],
        driver=driver,
        producerConfig=producer,
        consumerConfig=consumer,
    )
    assert s["acknowledged"] > 1000, s
    assert s["lost"] == 0 and s["duplicated"] == 0 and s["consumed"] == s["acknowledged"], s


def test_reliable_keep_all_dds_loses_nothing(tmp_path: Path) -> None:
    s = _bench(
        tmp_path,
        "lossless-dds",
        "127.0.0.1:1",  # not used by DDS (discovery on lo)
        driver="dds",
        producerConfig={"reliability": "RELIABLE", "history": "KEEP_ALL"},
        consumerConfig={"reliability": "RELIABLE", "history": "KEEP_ALL"},
    )
    assert s["acknowledged"] > 1000, s
    assert s["lost"] == 0 and s["duplicated"] == 0 and s["consumed"] == s["acknowledged"], s
