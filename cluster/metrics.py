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

# What the agent exports. Meters and timers are read through their cumulative Count (and a histogram's Mean,
# the mean over its whole life: Count x Mean is its running sum), so every figure over a window is a
# difference of two scrapes, never Kafka's one-minute moving average (which lags a trial of seconds).
EXPORTER_CONFIG = """\
includeObjectNames:
  - "kafka.server:type=BrokerTopicMetrics,name=*"
  - "kafka.server:type=ReplicaManager,name=*"
  - "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica"
  - "kafka.server:type=KafkaRequestHandlerPool,name=*RequestHandlerAvgIdlePercent"
  - "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"
  - "kafka.network:type=RequestMetrics,name=*TimeMs,request=Produce"
  - "kafka.network:type=RequestMetrics,name=*TimeMs,request=FetchFollower"
  - "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs"
  - "kafka.controller:type=KafkaController,name=ActiveControllerCount"
  - "kafka.server:type=KafkaServer,name=BrokerState"
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
    # the furthest any of this broker's followers is behind its leader, in messages (a gauge)
    "replica_max_lag": ("kafka_server_ReplicaFetcherManager_Value", "MaxLag"),
    "isr_shrinks": ("kafka_server_ReplicaManager_Count", "IsrShrinksPerSec"),
    "isr_expands": ("kafka_server_ReplicaManager_Count", "IsrExpandsPerSec"),
    # each handler thread marks its idle nanoseconds / the node's handler threads: d(Count)/dt/1e9 = their idle
    # fraction. On a combined broker+controller node (the testbed's) the controller's pool shares this meter, so
    # with num.io.threads=1 the node's meter still reads mostly idle: 1 broker thread among 8 controller threads
    # (docs/measurement.md, "Figures behind the code's thresholds").
    # Kafka 4.2+ (KIP-1207) also keeps one meter per pool: the broker pool's is read when it is there.
    "request_handler_idle_ns": ("kafka_server_KafkaRequestHandlerPool_Count", "RequestHandlerAvgIdlePercent"),
    "broker_handler_idle_ns": ("kafka_server_KafkaRequestHandlerPool_Count", "BrokerRequestHandlerAvgIdlePercent"),
    "request_handler_idle_1m": ("kafka_server_KafkaRequestHandlerPool_OneMinuteRate", "RequestHandlerAvgIdlePercent"),
    "network_processor_idle": ("kafka_network_SocketServer_Value", "NetworkProcessorAvgIdlePercent"),
    "log_flushes": ("kafka_log_LogFlushStats_Count", "LogFlushRateAndTimeMs"),
    "active_controller": ("kafka_controller_KafkaController_Value", "ActiveControllerCount"),
    # 3 = RUNNING (org.apache.kafka.metadata.BrokerState): the broker serves; a starting one reads 0-2
    "broker_state": ("kafka_server_KafkaServer_Value", "BrokerState"),
    "process_cpu_load": ("java_lang_OperatingSystem_ProcessCpuLoad", None),
    # the JVM's JIT compilers' accumulated time (the exporter's own JVM collector): a fresh broker spends minutes
    # of CPU here (docs/measurement.md, "Why the warm-up has shapes"), and a trial measured meanwhile measures the
    # compiler as much as Kafka
    "jit_compile_s": ("jvm_compilation_time_seconds_total", None),
}
# Summed over the label that tells collectors apart (the exporter's JVM collector): the brokers' GC pause time, s.
# A stop-the-world pause holds every request the broker has. A concurrent collector's "Cycles" bean (Shenandoah's,
# ZGC's) times the work done beside the application, not a pause: it is left out (_CONCURRENT).
LABEL_SUMS: Mapping[str, str] = {
    "gc_pause_s": "jvm_gc_collection_seconds_sum",
    "gc_pauses": "jvm_gc_collection_seconds_count",
}
# A produce request's time, split as Kafka's RequestMetrics split it (request="Produce"): queued for a handler,
# on the leader (append, flush), waiting for the followers (acks=all), queued for and sending the response.
PRODUCE_TIMES: Mapping[str, str] = {
    "produce_queue_ms": "RequestQueueTimeMs",
    "produce_local_ms": "LocalTimeMs",
    "produce_remote_ms": "RemoteTimeMs",
    "produce_response_queue_ms": "ResponseQueueTimeMs",
    "produce_response_send_ms": "ResponseSendTimeMs",
    "produce_total_ms": "TotalTimeMs",
}
# The followers' fetches are served by the same request handlers: their queue time is the handlers' backlog too.
FOLLOWER_TIMES: Mapping[str, str] = {
    "follower_fetch_queue_ms": "RequestQueueTimeMs",
    "follower_fetch_total_ms": "TotalTimeMs",
}
# Histograms and timers whose running sum (Count x Mean) we keep: short name -> (family prefix, name label, request).
SUMS: Mapping[str, tuple[str, str, str]] = {
    **{k: ("kafka_network_RequestMetrics", n, "Produce") for k, n in PRODUCE_TIMES.items()},
    **{k: ("kafka_network_RequestMetrics", n, "FetchFollower") for k, n in FOLLOWER_TIMES.items()},
    "log_flush_ms": ("kafka_log_LogFlushStats", "LogFlushRateAndTimeMs", ""),
}
COUNTERS = (
    "bytes_in",
    "bytes_out",
    "replication_bytes_in",
    "replication_bytes_out",
    "messages_in",
    "isr_shrinks",
    "isr_expands",
    "request_handler_idle_ns",
    "broker_handler_idle_ns",
    "log_flushes",
    "produce_requests",
    "follower_fetches",
    "jit_compile_s",
    *LABEL_SUMS,
    *SUMS,
)

# True counters (one attribute each, never decreasing while the broker runs): a drop means it restarted.
RESET_WITNESSES = ("bytes_in", "messages_in", "replication_bytes_in", "produce_requests")

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)")
_NAME_LABEL = re.compile(r'(?:^|,)name="([^"]*)"')
_CONCURRENT = re.compile(r'(?:^|,)gc="[^"]* Cycles"')
_REQUEST_LABEL = re.compile(r'(?:^|,)request="([^"]*)"')


def write_exporter_config(path: Path) -> None:
    path.write_text(EXPORTER_CONFIG)


def parse(text: str) -> dict[str, float]:
    """Pick our series out of a Prometheus text page (metrics absent from the page are left out)."""
    wanted: dict[tuple[str, str | None], str] = {v: k for k, v in SERIES.items()}
    sums = {v: k for k, v in SUMS.items()}
    label_sums = {v: k for k, v in LABEL_SUMS.items()}
    out: dict[str, float] = {}
    counts: dict[str, float] = {}
    means: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _LINE.match(line)
        if not m:
            continue
        fam, labels, value = m.group(1), m.group(2) or "", m.group(3)
        if fam in label_sums:
            if not _CONCURRENT.search(labels):
                out[label_sums[fam]] = out.get(label_sums[fam], 0.0) + float(value)
            continue
        if "topic=" in labels:
            continue
        nm = _NAME_LABEL.search(labels)
        name = nm.group(1) if nm else None
        req = _REQUEST_LABEL.search(labels)
        request = req.group(1) if req else ""
        key = wanted.get((fam, name))
        if key is not None and not request:
            out[key] = float(value)
        prefix, _, attr = fam.rpartition("_")
        skey = sums.get((prefix, name or "", request))
        if skey is not None and attr in ("Count", "Mean"):
            (counts if attr == "Count" else means)[skey] = float(value)
    for k, n in counts.items():
        if k in means:
            out[k] = n * means[k]
    if "produce_total_ms" in counts:
        out["produce_requests"] = counts["produce_total_ms"]
    if "follower_fetch_total_ms" in counts:
        out["follower_fetches"] = counts["follower_fetch_total_ms"]
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
    """Scrapes {broker_id: url} every `interval_s` until stopped, appending to `samples` as it goes (readable
    while it runs: a list append is atomic; `stop` returns a copy)."""

    urls: Mapping[int, str]
    interval_s: float = 1.0
    clock: Callable[[], int] = time.time_ns
    samples: list[BrokerSample] = field(default_factory=list)
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
        return list(self.samples)

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            for bid, url in self.urls.items():
                try:
                    values = scrape(url)
                except OSError:
                    self.errors += 1  # a killed broker: its row is absent for that second
                    continue
                self.samples.append(BrokerSample(bid, self.clock(), values))
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))


# One broker's interval as `rates` gives it: column -> figure (its id and time too; None: not read)
MetricRow = dict[str, float | None]


def rates(samples: list[BrokerSample]) -> list[MetricRow]:
    """Per-broker per-interval rows: counters as per-second rates, gauges as read."""
    by_broker: dict[int, list[BrokerSample]] = {}
    for s in samples:
        by_broker.setdefault(s.broker_id, []).append(s)
    controllers = _active_controllers(samples, len(by_broker))
    rows: list[MetricRow] = []
    for bid, ss in sorted(by_broker.items()):
        for prev, cur in itertools.pairwise(ss):
            dt = (cur.t_ns - prev.t_ns) / 1e9
            if dt <= 0:
                continue
            row: MetricRow = {"broker_id": bid, "t_ns": cur.t_ns, "interval_s": dt}
            if (n := controllers.get((bid, cur.t_ns))) is not None:
                row["active_controllers"] = n
            # A restarted broker resets every counter: its byte and message counters drop. A running sum (Count x
            # Mean, read as two attributes) can also drop a little when a request lands between the two reads;
            # that is a read race to absorb, never a restart (the whole lifetime sum taken as one second's figure
            # swamps it: docs/measurement.md, "Figures behind the code's thresholds").
            restarted = any(cur.values.get(c, 0.0) < prev.values.get(c, 0.0) for c in RESET_WITNESSES)
            row["restarted"] = restarted  # the broker's process started again since the previous sample
            for k in COUNTERS:
                if k in cur.values and k in prev.values:
                    delta = cur.values[k] - prev.values[k]
                    row[f"{k}_per_s"] = (delta if delta >= 0 else cur.values[k] if restarted else 0.0) / dt
            for k, v in cur.values.items():
                if k not in COUNTERS:
                    row[k] = v
            idle = row.pop("request_handler_idle_ns_per_s", None)
            pool = row.pop("broker_handler_idle_ns_per_s", None)
            idle = pool if pool is not None else idle
            one_min = row.pop("request_handler_idle_1m", None)
            # a handler marks its idle time when it wakes, so a second can carry some of the one before: ≤ 1
            row["request_handler_idle"] = min(1.0, idle / 1e9) if idle is not None else one_min
            rows.append(row)
    return rows


def _active_controllers(samples: list[BrokerSample], brokers: int) -> dict[tuple[int, int], float]:
    """At each sample, the brokers' ActiveControllerCount added up, each broker's latest value (once every
    broker has reported): 1 for a healthy quorum. Latest values, not one second's rows, because the brokers of
    one scrape round can straddle a second boundary; a leader that moves shows as a 0 or a 2 between scrapes.
    Empty when no scraped node was ever the controller (KRaft controllers of their own are not scraped: nothing
    can be said of the quorum then)."""
    latest: dict[int, float] = {}
    out: dict[tuple[int, int], float] = {}
    for s in sorted(samples, key=lambda x: x.t_ns):
        if "active_controller" in s.values:
            latest[s.broker_id] = s.values["active_controller"]
        if len(latest) == brokers:
            out[(s.broker_id, s.t_ns)] = sum(latest.values())
    return out if any(n >= 1 for n in out.values()) else {}
