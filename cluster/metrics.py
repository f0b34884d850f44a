"""Broker metrics over HTTP from the Prometheus JMX exporter agent that every testbed broker runs.

`BrokerMetricsSampler` scrapes every broker once a second in a background thread and keeps the
cumulative counters; per-second rates are differences of consecutive samples, so a missed scrape
widens one interval instead of losing bytes.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What the agent exports. Meters are read through their cumulative Count.
EXPORTER_CONFIG = """\
includeObjectNames:
  - "kafka.server:type=BrokerTopicMetrics,name=*"
  - "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
  - "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
  - "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"
  - "kafka.controller:type=KafkaController,name=ActiveControllerCount"
  - "java.lang:type=OperatingSystem"
"""

# Our short name -> (metric family, name label); None label means an unlabelled gauge.
SERIES: Mapping[str, tuple[str, str | None]] = {
    "bytes_in": ("kafka_server_BrokerTopicMetrics_Count", "BytesInPerSec"),
    "bytes_out": ("kafka_server_BrokerTopicMetrics_Count", "BytesOutPerSec"),
    "replication_bytes_in": ("kafka_server_BrokerTopicMetrics_Count", "ReplicationBytesInPerSec"),
    "replication_bytes_out": ("kafka_server_BrokerTopicMetrics_Count", "ReplicationBytesOutPerSec"),
    "messages_in": ("kafka_server_BrokerTopicMetrics_Count", "MessagesInPerSec"),
    "under_replicated": ("kafka_server_ReplicaManager_Value", "UnderReplicatedPartitions"),
    "request_handler_idle": ("kafka_server_KafkaRequestHandlerPool_OneMinuteRate", "RequestHandlerAvgIdlePercent"),
    "network_processor_idle": ("kafka_network_SocketServer_Value", "NetworkProcessorAvgIdlePercent"),
    "active_controller": ("kafka_controller_KafkaController_Value", "ActiveControllerCount"),
    "process_cpu_load": ("java_lang_OperatingSystem_ProcessCpuLoad", None),
}
COUNTERS = ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out", "messages_in")

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)")
_NAME_LABEL = re.compile(r'(?:^|,)name="([^"]*)"')


def write_exporter_config(path: Path) -> None:
    path.write_text(EXPORTER_CONFIG)


def parse(text: str) -> dict[str, float]:
    """Pick our series out of a Prometheus text page (metrics absent from the page are left out)."""
    wanted: dict[tuple[str, str | None], str] = {v: k for k, v in SERIES.items()}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _LINE.match(line)
        if not m:
            continue
        fam, labels, value = m.group(1), m.group(2) or "", m.group(3)
        nm = _NAME_LABEL.search(labels)
        key = wanted.get((fam, nm.group(1) if nm else None))
        if key is not None and ("topic=" not in labels):
            out[key] = float(value)
    return out


def scrape(url: str, timeout_s: float = 2.0) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return parse(resp.read().decode())


@dataclass
class BrokerSample:
    broker_id: int
    t_ns: int
    values: dict[str, float]


@dataclass
class BrokerMetricsSampler:
    """Scrapes {broker_id: url} every `interval_s` until stopped. Thread-safe `samples` snapshot."""

    urls: Mapping[int, str]
    interval_s: float = 1.0
    clock: Callable[[], int] = time.time_ns
    _samples: list[BrokerSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    errors: int = 0

    def start(self) -> BrokerMetricsSampler:
        self._thread = threading.Thread(target=self._loop, name="broker-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[BrokerSample]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        return list(self._samples)

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            for bid, url in self.urls.items():
                try:
                    values = scrape(url)
                except OSError:
                    self.errors += 1  # a killed broker: its row is absent for that second
                    continue
                self._samples.append(BrokerSample(bid, self.clock(), values))
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))


def rates(samples: list[BrokerSample]) -> list[dict[str, Any]]:
    """Per-broker per-interval rows: counters as per-second rates, gauges as read."""
    by_broker: dict[int, list[BrokerSample]] = {}
    for s in samples:
        by_broker.setdefault(s.broker_id, []).append(s)
    rows: list[dict[str, Any]] = []
    for bid, ss in sorted(by_broker.items()):
        for prev, cur in itertools.pairwise(ss):
            dt = (cur.t_ns - prev.t_ns) / 1e9
            if dt <= 0:
                continue
            row: dict[str, Any] = {"broker_id": bid, "t_ns": cur.t_ns, "interval_s": dt}
            for k in COUNTERS:
                if k in cur.values and k in prev.values:
                    # A restarted broker resets its counters: treat a drop as a fresh start.
                    delta = cur.values[k] - prev.values[k]
                    row[f"{k}_per_s"] = (delta if delta >= 0 else cur.values[k]) / dt
            for k, v in cur.values.items():
                if k not in COUNTERS:
                    row[k] = v
            rows.append(row)
    return rows
