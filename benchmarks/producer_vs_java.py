"""kafkatune's producer (librdkafka, N processes) vs Kafka's own ProducerPerformance (Java), same testbed.

Same topic layout (a pre-created topic, 6 partitions, RF 3), same producer configs (acks=all,
linger.ms=5, batch.size=128 KiB, no compression), no consumers, 100 B and 1 KB records. Each size runs
the three contenders in turn, `--reps` times (median reported), on one warmed loopback testbed.
Prints a table, then one JSON line of the figures.

    .venv/bin/python benchmarks/producer_vs_java.py [--seconds 20] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from _common import log, median, testbed

from drivers import api
from loadgen import result, runner
from loadgen.workload import parse_workload
from testbed import dist

CONFIGS = {"acks": "all", "linger.ms": "5", "batch.size": str(128 * 1024), "compression.type": "none"}
PARTITIONS = 6
_JAVA_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def java_run(d: dist.KafkaDist, boot: str, topic: str, size: int, seconds: float, est_rate: float) -> float:
    """ProducerPerformance sends a fixed count: size it to ~`seconds` from the last measured rate."""
    n = max(50_000, int(est_rate * seconds))
    log4j = Path(tempfile.gettempdir()) / "kt-bench-log4j2.xml"
    log4j.write_text(
        '<Configuration status="WARN"><Appenders><Console name="o" target="SYSTEM_ERR">'
        '<PatternLayout pattern="%p %m%n"/></Console></Appenders><Loggers><Root level="WARN">'
        '<AppenderRef ref="o"/></Root></Loggers></Configuration>'
    )
    props = [f"{k}={v}" for k, v in CONFIGS.items()] + [f"bootstrap.servers={boot}"]
    cmd = [
        str(d.java),
        f"-Dlog4j2.configurationFile={log4j}",
        "-Xmx1g",
        "-cp",
        d.classpath,
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        *props,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 120, check=True).stdout
    last = out.strip().splitlines()[-1]
    m = _JAVA_LINE.search(last)
    assert m, out[-500:]
    return float(m.group(2)) * size / 1e6


def kafkatune_run(boot: str, size: int, seconds: float, processes: int) -> float:
    w = parse_workload(
        {
            "name": "vsjava",
            "partitionsPerTopic": PARTITIONS,
            "messageSize": size,
            "producersPerTopic": processes,
            "subscriptionsPerTopic": 0,
            "testDurationMinutes": seconds / 60,
            "warmupDurationMinutes": 2 / 60,
            "producerConfig": CONFIGS,
        }
    )
    raw = runner.run(w, {"bootstrap.servers": boot}, say=lambda m: None)
    s = result.build(raw)[0]["summary"]
    if s["warnings"]:
        log(f"  kafkatune x{processes}: {'; '.join(s['warnings'])}")
    return float(s["publish_mb_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warm-up", type=float, default=90)
    ap.add_argument("--sizes", default="100,1024")
    a = ap.parse_args()
    figures: dict[str, dict[str, float]] = {}
    with testbed(Path(tempfile.mkdtemp(prefix="kt-bench-")), warm_up_s=a.warm_up) as tb:
        boot = tb.state().bootstrap_servers
        d = dist.default_dist()
        for size in [int(s) for s in a.sizes.split(",")]:
            runs: dict[str, list[float]] = {"java": [], "kafkatune_1proc": [], "kafkatune_2proc": []}
            est = 200_000.0 if size <= 100 else 30_000.0
            for rep in range(a.reps):
                drv = api.load_driver("kafka")({"bootstrap.servers": boot})
                topic = f"kt-vsjava-{uuid.uuid4().hex[:8]}"
                drv.create_topics([api.TopicSpec(topic, PARTITIONS)])
                time.sleep(2)
                mb = java_run(d, boot, topic, size, a.seconds, est)
                est = mb * 1e6 / size
                drv.delete_topics([topic])
                runs["java"].append(mb)
                runs["kafkatune_1proc"].append(kafkatune_run(boot, size, a.seconds, 1))
                runs["kafkatune_2proc"].append(kafkatune_run(boot, size, a.seconds, 2))
                log(f"{size} B rep {rep + 1}: " + "  ".join(f"{k} {v[-1]:.2f} MB/s" for k, v in runs.items()))
            med = {k: median(v) for k, v in runs.items()}
            figures[f"{size}B"] = {
                **{f"{k}_mb_s": round(v, 2) for k, v in med.items()},
                "ratio_1proc": round(med["kafkatune_1proc"] / med["java"], 3),
                "ratio_2proc": round(med["kafkatune_2proc"] / med["java"], 3),
                "runs": {k: [round(x, 2) for x in v] for k, v in runs.items()},  # type: ignore[dict-item]
            }
    print(f"{'size':>6} {'java MB/s':>10} {'kt 1 proc':>10} {'kt 2 proc':>10} {'ratio 1':>8} {'ratio 2':>8}")
    for size, f in figures.items():
        print(
            f"{size:>6} {f['java_mb_s']:>10.2f} {f['kafkatune_1proc_mb_s']:>10.2f} "
            f"{f['kafkatune_2proc_mb_s']:>10.2f} {f['ratio_1proc']:>8.3f} {f['ratio_2proc']:>8.3f}"
        )
    print(
        json.dumps(
            {
                "bench": "producer_vs_java",
                "median_of": a.reps,
                "seconds": a.seconds,
                "configs": CONFIGS,
                "partitions": PARTITIONS,
                "figures": figures,
            }
        )
    )


if __name__ == "__main__":
    main()
