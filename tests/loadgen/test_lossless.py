"""Lossless modes lose nothing in a counted run through the real load harness (`kafkatune bench`).

Kafka with acks=all is counted in test_bench_kafka.py; here MQTT QoS 1, Zenoh with BLOCK congestion
control, and reliable KEEP_ALL DDS, each against its real server, producers and consumers in their own
worker processes, every acknowledged message matched to a consumed one.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from core.typed import to_json
from drivers.api import load_driver
from tests.helpers import kafkatune, write_workload

# real runs at a rate, drained within deadlines: run where the CPU comes when asked (tests/lanes.py)
pytestmark = pytest.mark.timing

RUN = {"warmupDurationMinutes": 0.05, "testDurationMinutes": 0.12, "partitionsPerTopic": 1}


def _bench(tmp: Path, name: str, bootstrap: str, **fields: Any) -> dict[str, Any]:
    """The run's summary; its record names the system's own client, and no Kafka admin client asked a server that
    is not Kafka for broker configs (it waited 10 s to fail)."""
    wl = write_workload(tmp / f"{name}.yaml", name=name, **RUN, **fields)
    out = tmp / name
    proc = kafkatune(
        "bench", str(wl), "--no-scale-out", "--bootstrap", bootstrap, "--out", str(out), "--json", timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads((out / "result.json").read_text())
    lib = load_driver(fields["driver"]).library
    assert rec["driver_info"] == {"client": lib, "version": metadata.version(lib)}, rec["driver_info"]
    assert rec["brokerConfig"] is None and "broker configs" not in proc.stderr, proc.stderr[-3000:]
    return dict(rec["summary"])


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


class RouterStall:
    """A router that runs 2 ms in every 200 ms while the producer sends, so the publisher's send queue fills; once
    the producer has finished sending (its tick for the second after the run's end), the router stops for 4 s,
    longer than a closing Zenoh session waits to flush its queue. `on_tick` starts it with the run."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid = pid
        self.stop, self.finished = threading.Event(), threading.Event()
        self.started: list[threading.Thread] = []

    def on_tick(self, raw: Any, tick: Any) -> None:
        import threading

        if not self.started:
            self.started.append(threading.Thread(target=self._stall, args=(raw,), daemon=True))
            self.started[0].start()
        if tick.role == "producer" and tick.second >= 3:  # warm-up 1 s + measured 2 s
            self.finished.set()

    def _stall(self, raw: Any) -> None:
        import os
        import signal
        import time

        deadline = raw.timing.produce_end_ns + 60_000_000_000
        while not (self.stop.is_set() or self.finished.is_set()) and time.time_ns() < deadline:
            os.kill(self.pid, signal.SIGSTOP)
            self.finished.wait(0.2)
            os.kill(self.pid, signal.SIGCONT)
            time.sleep(0.002)
        os.kill(self.pid, signal.SIGSTOP)
        self.stop.wait(4)
        os.kill(self.pid, signal.SIGCONT)

    def end(self) -> None:
        import os
        import signal

        self.stop.set()
        for t in self.started:
            t.join()
        os.kill(self.pid, signal.SIGCONT)


@pytest.mark.server  # a Zenoh router of its own
def test_a_congested_zenoh_router_at_the_end_of_a_run_loses_nothing(tmp_path: Path) -> None:
    """Zenoh acknowledges a put when it returns; what is still in the publisher's send queue when the run
    ends must reach the subscriber. A router of our own is stalled (SIGSTOP/SIGCONT) through the end of
    production, so the queue is full then: a producer that closed its session at that point lost it."""
    from loadgen import result as res
    from loadgen import runner
    from loadgen.workload import Workload
    from testbed.servers import Servers
    from tests.conftest import free_port

    sv = Servers(tmp_path / "servers")
    st = sv.up("zenoh", port=free_port(), progress=print)
    stall = RouterStall(st.pid)
    w = Workload(
        name="zenoh-stalled",
        driver="zenoh",
        messageSize=64,
        producerConfig={"congestion_control": "BLOCK"},
        warmupDurationMinutes=1 / 60,
        testDurationMinutes=2 / 60,
        drainTimeoutSeconds=30,
    )
    try:
        at = runner.RunSettings({"bootstrap.servers": st.address, "zenoh.mode": "client"}, on_tick=stall.on_tick)
        raw = runner.run(w, at)
    finally:
        stall.end()
        sv.down("zenoh", progress=print)
    assert stall.started and stall.finished.is_set(), "the router was never stalled at the end of production"
    s = to_json(res.build(raw).result.summary)
    assert s["acknowledged"] > 1000, s
    assert s["lost"] == 0 and s["consumed"] == s["acknowledged"], s
