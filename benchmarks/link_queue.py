"""Where the records wait when the LAN case misses its SLO with the links half full: the sending side's link queues.

The tuning benchmark's LAN scenarios stop at 47-67 % of the ceiling, most runs bound by `none` (advisor.limit): from
the step that held to the one that missed, the producers' request round trip p99 grew by tens of milliseconds while
the brokers' own time per produce request grew by one or two. Between the two are the network and the wait in the
producer's connection. The testbed shapes each host's link with a `tbf` qdisc at both ends (testbed.netns); the
run's host rows read the bridge end's queue (what a host receives), which a sender already shaped upstream rarely
fills, not the host end's (what it sends), inside its namespace. This reads the sending side, and the producer's
queue and connection beside it.

On the shaped testbed (25 MB/s links), Kafka's defaults (linger.ms 5, batch.size 16 KB) and the same with 128-KB
batches (the negative control's start, benchmarks/tuning/control-producer.properties) run at `--rates` msg/s of 1-KB
records (acks=all, 6 partitions, one producer and one consumer), every (configuration, rate) cell in a new random
order each of `--rounds` rounds. While each runs, every host's sending qdisc (`tc -n NETNS -s qdisc show dev eth0`)
is read every `--every` s: its backlog (bytes waiting, as milliseconds of the link's rate) and its throttle events
(tbf's `overlimits`: a packet that waited for tokens). Per run: p99 publish and end-to-end, the producer's request
round trip median and p99 (librdkafka's `rtt`) and its records' queue p99 (`int_latency`), the tail budget's
first causes (loadgen.tail), the brokers' produce requests a second and time per request (and their product: the
share of the time the producer's connection to a broker had a request there, which it serves one at a time:
loadgen.tail.CONNECTION_BUSY), and per host its mean share of the link's rate, its throttle events a second and its
queue's p90 and largest backlog in milliseconds. It prints each run and the medians per cell, and keeps
them in benchmarks/results/link_queue.json.

    .venv/bin/python benchmarks/link_queue.py [--rates 6000,9000,12000,15000] [--rounds 2] [--seconds 20]
"""

from __future__ import annotations

import argparse
import itertools
import random
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import bench, by_cause, demo_workload, log, median, producer_stats, result_file, testbed

from advisor.diagnose import TIME_PARTS
from cluster.hoststats import link_bytes, tbf_queues
from records import run as runs
from testbed import netns

SLO_MS = 100.0  # the LAN scenarios' (benchmarks/tuning/common.yaml)
CONFIGS = {
    "kafka-defaults": {"acks": "all", "linger.ms": 5, "batch.size": 16384},
    "batch-128k": {"acks": "all", "linger.ms": 5, "batch.size": 131072},
}


def _send_queue(ns: str) -> dict[str, float]:
    """The host's sending tbf qdisc (eth0 in its namespace): rate (bytes/s), backlog (bytes), overlimits, drops."""

    def tc(argv: list[str]) -> str:
        return subprocess.run(["tc", "-n", ns, *argv[1:]], capture_output=True, text=True, timeout=2).stdout

    return tbf_queues(tc).get("eth0", {})


@contextmanager
def watch(net: netns.ShapedNetwork, every_s: float) -> Iterator[dict[str, list[tuple[float, dict[str, float], int]]]]:
    """Per host, (time, its sending qdisc, bytes it sent) every `every_s` while the block runs."""
    seen: dict[str, list[tuple[float, dict[str, float], int]]] = {h.name: [] for h in net.hosts}
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            for h in net.hosts:
                # what the host behind the bridge end sent is what that end received
                q, b = _send_queue(h.netns), link_bytes(f"{net.prefix}{h.name}")
                if q and b is not None:
                    seen[h.name].append((time.monotonic(), q, b[0]))

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield seen
    finally:
        stop.set()
        t.join()


def link_figures(samples: list[tuple[float, dict[str, float], int]]) -> dict[str, float] | None:
    """One host's sending link over the samples taken while it carried traffic: mean share of its rate, throttle
    events a second, and its backlog's p90 and largest as milliseconds of its rate."""
    busy = [(a, b) for a, b in itertools.pairwise(samples) if b[2] > a[2]]
    if not busy:
        return None
    rate = busy[0][1][1]["rate"]
    span = sum(b[0] - a[0] for a, b in busy)
    sent = sum(b[2] - a[2] for a, b in busy)
    throttled = sum(max(0.0, b[1]["overlimits"] - a[1]["overlimits"]) for a, b in busy)
    backlog = sorted(b[1]["backlog"] for _, b in busy)
    return {
        "share": sent / span / rate,
        "throttled_per_s": throttled / span,
        "queue_p90_ms": backlog[int(0.9 * (len(backlog) - 1))] / rate * 1000,
        "queue_max_ms": backlog[-1] / rate * 1000,
    }


def broker_side(out: Path) -> dict[str, float] | None:
    """The brokers over the run's measured seconds (records.run.seconds): produce requests a second per broker, their
    mean time per request (ms, the parts advisor.diagnose.TIME_PARTS names) and its replication part, and their
    product, the share of the time the producer's one connection to a broker had a request there (it serves one at a
    time: advisor.limit's connection figure, here over every broker rather than the busiest)."""
    rows = [r for r in runs.seconds(out).brokers if r.phase == "measure"]
    requests = sum(r.produce_requests_per_s or 0.0 for r in rows)
    if not requests:
        return None
    per_s = requests / len(rows)
    ms = sum(v for r in rows for k, v in r.produce_ms_per_s.items() if k in TIME_PARTS) / requests
    remote = sum(r.produce_ms_per_s.get("produce_remote_ms", 0.0) for r in rows) / requests
    return {"requests_per_s": per_s, "ms_per_request": ms, "remote_ms": remote, "connection_busy": per_s * ms / 1000}


def one(tb: Any, net: netns.ShapedNetwork, tmp: Path, name: str, config: str, rate: int, a: Any) -> dict[str, Any]:
    """One run of `config` at `rate` msg/s with its sending queues watched."""
    wl = demo_workload(tmp / f"{name}.json", f"linkq-{name}", CONFIGS[config], rate, a.seconds)
    with watch(net, a.every) as seen:
        d = bench(tb, wl, tmp / name, SLO_MS)
    ps = producer_stats(Path(d["out"]))
    links = {h: f for h, xs in seen.items() if (f := link_figures(xs)) is not None}
    busiest = max(links, key=lambda h: links[h]["queue_p90_ms"], default=None)
    return {
        "config": config,
        "rate_msg_s": rate,
        "p99_e2e_ms": d["end_to_end_latency_ms"]["p99"],
        "p99_publish_ms": d["publish_latency_ms"]["p99"],
        "consume_msg_s": d["consume_msg_s"],
        "rtt_ms": ps.get("rtt_ms"),
        "rtt_p99_ms": ps.get("rtt_p99_ms"),
        "queue_p99_ms": ps.get("queue_p99_ms"),
        "tail": by_cause(d.get("tail")),
        "brokers": broker_side(Path(d["out"])),
        "links": links,
        "deepest": busiest,
    }


def say(row: dict[str, Any]) -> None:
    q = row["links"].get(row["deepest"] or "", {})
    log(
        f"round {row['round']}, {row['config']} at {row['rate_msg_s']:,} msg/s: p99 e2e {row['p99_e2e_ms']} ms, "
        f"producer rtt median {row['rtt_ms']} p99 {row['rtt_p99_ms']} ms, queue p99 {row['queue_p99_ms']} ms; "
        f"brokers {row['brokers']}; deepest sending queue {row['deepest']}: p90 "
        f"{q.get('queue_p90_ms', 0):.1f} ms, max {q.get('queue_max_ms', 0):.1f} ms, link {q.get('share', 0):.0%}, "
        f"{q.get('throttled_per_s', 0):.0f} throttles/s"
    )


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (configuration, rate): the medians over its rounds, and per host its sending queue's median p90."""
    out = []
    for config in CONFIGS:
        for rate in sorted({r["rate_msg_s"] for r in runs}):
            mine = [r for r in runs if r["config"] == config and r["rate_msg_s"] == rate]
            row: dict[str, Any] = {"config": config, "rate_msg_s": rate, "n": len(mine)}
            for f in ("p99_e2e_ms", "p99_publish_ms", "rtt_ms", "rtt_p99_ms", "queue_p99_ms", *BROKER_KEYS):
                xs = [float(x) for r in mine if (x := r.get(f, (r.get("brokers") or {}).get(f))) is not None]
                row[f"median_{f}"] = median(xs) if xs else None
                row[f"range_{f}"] = [min(xs), max(xs)] if xs else None
            hosts = sorted({h for r in mine for h in r["links"]})
            row["links"] = {
                h: {k: median([r["links"][h][k] for r in mine if h in r["links"]]) for k in LINK_KEYS} for h in hosts
            }
            out.append(row)
            print(
                f"{config} at {rate:,} msg/s (n={len(mine)}): p99 e2e median {row['median_p99_e2e_ms']} ms, rtt p99 "
                f"{row['median_rtt_p99_ms']} ms, producer queue p99 {row['median_queue_p99_ms']} ms, connection busy "
                f"{row['median_connection_busy']}; sending queue "
                "p90 ms by host: "
                + ", ".join(f"{h} {v['queue_p90_ms']:.1f} ({v['share']:.0%})" for h, v in row["links"].items())
            )
    return out


BROKER_KEYS = ("requests_per_s", "ms_per_request", "remote_ms", "connection_busy")
LINK_KEYS = ("share", "throttled_per_s", "queue_p90_ms", "queue_max_ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="6000,9000,12000,15000", help="msg/s of 1-KB records, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--every", type=float, default=0.5, help="seconds between reads of the sending queues")
    ap.add_argument("--warm-up", type=float, default=120)
    a = ap.parse_args()
    rates = [int(x) for x in a.rates.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="kt-linkq-"))
    runs: list[dict[str, Any]] = []
    up = {"network": "shaped", "nic_mb_s": 25.0, "subnet": "198.18.6"}
    with testbed(tmp / "tb", warm_up_s=a.warm_up, **up) as tb:
        net = tb.network(tb.state())
        if net is None:
            raise SystemExit("the sending queues need the shaped testbed")
        for r in range(a.rounds):
            cells = [(c, x) for c in CONFIGS for x in rates]
            random.Random(r).shuffle(cells)
            for config, rate in cells:
                row = {"round": r, **one(tb, net, tmp, f"r{r}-{config}-{rate}", config, rate, a)}
                runs.append(row)
                say(row)
    summary = summarise(runs)
    args = {"rates_msg_s": rates, "rounds": a.rounds, "seconds": a.seconds, "every_s": a.every, "nic_mb_s": 25.0}
    result_file("link_queue", {"args": args, "slo_ms": SLO_MS, "configs": CONFIGS, "summary": summary, "runs": runs})


if __name__ == "__main__":
    main()
