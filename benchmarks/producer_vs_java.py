"""kafkatune's producer (librdkafka, N processes) vs Kafka's own ProducerPerformance (Java), same testbed.

Same topic layout (a pre-created topic, 6 partitions, RF 3), same producer configs (acks=all,
linger.ms=5, batch.size=128 KiB, no compression), no consumers, 100 B and 1 KB records. Each size runs
the three contenders in turn, `--reps` times (each one first in a third of the rounds; medians reported), on
one warmed loopback testbed, after `--warm-rounds` rounds left out of the medians (the testbed's warm-up
loads 16-KiB and 1-MiB batches; a size's own record shape warms the brokers' JIT further, and last
stops' rounds rose from the first to the third). Beside MB/s, each side's client CPU per record (µs): for
kafkatune the producer processes' CPU (loop and librdkafka threads) over the measure window per record sent;
for the Java tool its process's CPU between its first and last 5-s report lines per record in those windows
(JVM start-up and the first window's JIT left out). Prints a table, then one JSON line of the figures.

    .venv/bin/python benchmarks/producer_vs_java.py [--seconds 20] [--reps 3] [--warm-rounds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from _common import log, median, testbed

from core.typed import to_json
from drivers import api
from loadgen import result, runner
from loadgen.workload import parse_workload
from testbed import dist

CONFIGS = {"acks": "all", "linger.ms": "5", "batch.size": str(128 * 1024), "compression.type": "none"}
PARTITIONS = 6
_JAVA_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def java_run(
    d: dist.KafkaDist, boot: str, topic: str, size: int, seconds: float, est_rate: float
) -> tuple[float, float | None]:
    """ProducerPerformance sends a fixed count: size it to ~`seconds` from the last measured rate. Returns MB/s
    and the process's CPU µs per record in its steady windows (None: too few windows)."""
    n = max(50_000, int(est_rate * seconds * 1.5))  # rates climb as the JVMs warm: a run too short has no CPU figure
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
    # CPU per record over the steady windows: the tool prints a line per 5-s window; the process's CPU time is
    # read as each one arrives, and the first window (JVM start, JIT) is left out.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ps = psutil.Process(proc.pid)
    marks: list[tuple[int, float]] = []
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        m = _JAVA_LINE.search(line)
        if m and "50th" not in line:  # a window's line, not the final summary
            with contextlib.suppress(psutil.NoSuchProcess):
                c = ps.cpu_times()
                marks.append((int(m.group(1)), c.user + c.system))
    if proc.wait(timeout=seconds * 10 + 120):
        raise RuntimeError(f"ProducerPerformance exited with {proc.returncode}: {''.join(lines)[-500:]}")
    m = _JAVA_LINE.search(lines[-1])
    assert m, "".join(lines)[-500:]
    cpu_us = None
    if len(marks) >= 3:
        cpu_us = (marks[-1][1] - marks[0][1]) / sum(n for n, _ in marks[1:]) * 1e6
    return float(m.group(2)) * size / 1e6, cpu_us


def cpu_per_record_us(raw: runner.RawRun) -> float | None:
    """The producer processes' CPU (main loop and librdkafka's threads) per record sent, over the measure window."""
    w = raw.workload
    by: dict[int, list[runner.Tick]] = {}
    for t in raw.ticks:
        if t.role == "producer" and runner.phase_of(t.second, w.warmup_seconds, w.test_seconds) == "measure":
            by.setdefault(t.wid, []).append(t)
    cpu, recs = 0.0, 0
    for ticks in by.values():
        ticks.sort(key=lambda t: t.second)
        if len(ticks) >= 2:
            cpu += ticks[-1].process_cpu_s - ticks[0].process_cpu_s
            recs += sum(t.sent for t in ticks[1:])
    return cpu / recs * 1e6 if recs else None


def kafkatune_run(
    boot: str, size: int, seconds: float, processes: int, extra: dict[str, str] | None = None
) -> tuple[float, float | None]:
    """`bench`'s path at max rate with CONFIGS (and `extra` producer configs): MB/s and CPU µs per record."""
    w = parse_workload(
        {
            "name": "vsjava",
            "partitionsPerTopic": PARTITIONS,
            "messageSize": size,
            "producersPerTopic": processes,
            "subscriptionsPerTopic": 0,
            "testDurationMinutes": seconds / 60,
            "warmupDurationMinutes": 2 / 60,
            "producerConfig": {**CONFIGS, **(extra or {})},
        }
    )
    raw = runner.run(w, runner.RunSettings({"bootstrap.servers": boot}).quiet())
    s = to_json(result.build(raw).result.summary)
    if s["warnings"]:
        log(f"  kafkatune x{processes}: {'; '.join(s['warnings'])}")
    return float(s["publish_mb_s"]), cpu_per_record_us(raw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warm-up", type=float, default=90)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument(
        "--warm-rounds",
        type=int,
        default=1,
        help="rounds of all three contenders run first at each size and left out of the medians (the cluster's "
        "JIT warms for the size's own record shape; their figures are printed and kept apart in the JSON)",
    )
    a = ap.parse_args()
    figures: dict[str, dict[str, Any]] = {}
    names = ["java", "kafkatune_1proc", "kafkatune_2proc"]
    with testbed(Path(tempfile.mkdtemp(prefix="kt-bench-")), warm_up_s=a.warm_up) as tb:
        boot = tb.state().bootstrap_servers
        d = dist.default_dist()
        for size in [int(s) for s in a.sizes.split(",")]:
            mbs: dict[str, list[float]] = {k: [] for k in names}
            cpu: dict[str, list[float]] = {k: [] for k in names}
            est = 200_000.0 if size <= 100 else 30_000.0
            warm: dict[str, list[float]] = {k: [] for k in names}
            for rep in range(-a.warm_rounds, a.reps):
                for name in names[rep % 3 :] + names[: rep % 3]:  # each contender first once in three reps
                    if name == "java":
                        drv = api.load_driver("kafka")({"bootstrap.servers": boot})
                        topic = f"kt-vsjava-{uuid.uuid4().hex[:8]}"
                        drv.create_topics([api.TopicSpec(topic, PARTITIONS)])
                        time.sleep(2)
                        mb, us = java_run(d, boot, topic, size, a.seconds, est)
                        est = max(est, mb * 1e6 / size)  # sized up, never down: ≥ 3 report windows
                        drv.delete_topics([topic])
                    else:
                        mb, us = kafkatune_run(boot, size, a.seconds, 1 if name.endswith("1proc") else 2)
                    if rep < 0:
                        warm[name].append(mb)
                        log(f"{size} B warm round {rep + a.warm_rounds + 1} (left out): {name} {mb:.2f} MB/s")
                        continue
                    mbs[name].append(mb)
                    if us is not None:
                        cpu[name].append(us)
                if rep >= 0:
                    log(
                        f"{size} B rep {rep + 1}: "
                        + "  ".join(
                            f"{k} {mbs[k][-1]:.2f} MB/s {cpu[k][-1] if cpu[k] else float('nan'):.2f} us/rec"
                            for k in names
                        )
                    )
            med = {k: median(v) for k, v in mbs.items()}
            cmed = {k: median(v) if v else None for k, v in cpu.items()}
            figures[f"{size}B"] = {
                **{f"{k}_mb_s": round(v, 2) for k, v in med.items()},
                **{f"{k}_cpu_us_per_record": (round(v, 3) if v else None) for k, v in cmed.items()},
                "ratio_1proc": round(med["kafkatune_1proc"] / med["java"], 3),
                "ratio_2proc": round(med["kafkatune_2proc"] / med["java"], 3),
                "runs": {k: [round(x, 2) for x in v] for k, v in mbs.items()},
                "cpu_runs": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
                "warm_rounds_left_out": {k: [round(x, 2) for x in v] for k, v in warm.items()},
            }
    print(
        f"{'size':>6} {'java MB/s':>10} {'kt 1 proc':>10} {'kt 2 proc':>10} {'ratio 1':>8} {'ratio 2':>8}"
        f" {'CPU us/record: java':>20} {'kt 1':>6} {'kt 2':>6}"
    )
    for size, f in figures.items():
        c = [f[f"{k}_cpu_us_per_record"] for k in names]
        print(
            f"{size:>6} {f['java_mb_s']:>10.2f} {f['kafkatune_1proc_mb_s']:>10.2f} "
            f"{f['kafkatune_2proc_mb_s']:>10.2f} {f['ratio_1proc']:>8.3f} {f['ratio_2proc']:>8.3f} "
            + " ".join(f"{('n/a' if v is None else f'{v:.2f}'):>{w}}" for v, w in zip(c, (20, 6, 6), strict=True))
        )
    print(
        json.dumps(
            {
                "bench": "producer_vs_java",
                "median_of": a.reps,
                "warm_rounds": a.warm_rounds,
                "seconds": a.seconds,
                "configs": CONFIGS,
                "partitions": PARTITIONS,
                "figures": figures,
            }
        )
    )


if __name__ == "__main__":
    main()
