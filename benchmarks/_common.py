"""Shared pieces of the benchmarks: a private testbed, a kafkatune sweep on it, medians."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import interrupts, reaper
from records.tail import TailBudget
from testbed import dist
from testbed.lifecycle import Testbed

REPO = Path(__file__).resolve().parent.parent
STOP_S = 300  # how long a child asked to stop may take: a sweep's restore rolls brokers back one at a time


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def testbed(
    state_dir: Path,
    *,
    base_port: int = 27090,
    warm_up_s: float = 60,
    paced: float | None = 0.6,
    jvm_extra: tuple[str, ...] = (),
    **up: Any,
) -> Iterator[Testbed]:
    """A private testbed, wiped before and after; `warm_up_s` of load at the most, ended sooner once the brokers'
    JIT compilers are quiet (loadgen.warmup; `paced`: its fixed-rate shape, None: none), so the first figure is not
    a cold cluster's. `jvm_extra`: JVM options the brokers run with beyond the testbed's own (testbed.nodes).
    A `kill` of the benchmark tears the testbed down as Ctrl-C does; a `kill -9` leaves it to core.reaper."""
    interrupts.interrupt_on_signals()
    reaper.watch()
    tb = Testbed(state_dir, dist.install(), base_port=base_port, prefix="ktb", jvm_extra=jvm_extra)
    tb.down(wipe=True, progress=lambda m: None)
    try:
        st = tb.up(progress=log, **up)
        if warm_up_s:
            from loadgen.warmup import warm_up

            warm_up(
                st.bootstrap_servers,
                warm_up_s,
                say=log,
                placements=tb.client_netns(st),
                metrics_urls=st.metrics_urls,
                paced=paced,
            )
        yield tb
    finally:
        tb.down(wipe=True, progress=lambda m: None)


@contextmanager
def broker_delay(tb: Testbed, delay_ms: float) -> Iterator[None]:
    """`delay_ms` more on every broker's link of the shaped testbed `tb` for the block (testbed.netns.degrade), taken
    off after it whatever happens; 0: nothing."""
    from testbed import netns

    if not delay_ms:
        yield
        return
    net = tb.network(tb.state())
    if net is None:
        raise RuntimeError("a delay on the brokers' links needs the shaped testbed")
    hosts = [f"b{n.id}" for n in tb.state().nodes]
    try:
        for h in hosts:
            netns.degrade(net, h, delay_ms=delay_ms)
        yield
    finally:
        for h in hosts:
            netns.undo_degrade(net, h)


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def paired_rows(
    runs: Mapping[str, list[dict[str, float]]], a: str, b: str, fields: Mapping[str, str], header: str, width: int
) -> dict[str, dict[str, Any]]:
    """Two settings' repeated measurements side by side: per field (key -> its name), each setting's median and range
    and the ratio b / a, printed as a table and returned as rows keyed by the field's name (`{a}_s_median`, …)."""
    rows: dict[str, dict[str, Any]] = {}
    print(f"\n{header:<{width}} {a:>16} {b:>16} {b + '/' + a:>12}")
    for k, name in fields.items():
        xa, xb = [x[k] for x in runs[a]], [x[k] for x in runs[b]]
        r = rows[name] = {
            f"{a}_s_median": round(median(xa), 2),
            f"{a}_s_range": [round(min(xa), 2), round(max(xa), 2)],
            f"{b}_s_median": round(median(xb), 2),
            f"{b}_s_range": [round(min(xb), 2), round(max(xb), 2)],
            f"ratio_{b}_{a}": round(median(xb) / median(xa), 2),
        }
        print(
            f"{name:<{width}} {median(xa):>6.1f} ({min(xa):.1f}-{max(xa):.1f}) "
            f"{median(xb):>6.1f} ({min(xb):.1f}-{max(xb):.1f}) {r[f'ratio_{b}_{a}']:>12.2f}"
        )
    return rows


def run_child(
    cmd: list[str], *, stderr: int | None = None, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`cmd` with its stdout (and `stderr`, when PIPE) captured; `preexec` runs in the child before it starts.
    Interrupted, the benchmark asks the child to stop with SIGTERM and waits STOP_S for it before killing it: a sweep
    then restores the broker configs it changed itself, as `kafkatune sweep` does on Ctrl-C (subprocess.run would
    kill it at once)."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate()
    except KeyboardInterrupt:
        log(f"asking {cmd[3]} (pid {proc.pid}) to stop")
        proc.terminate()
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def sweep(tb: Testbed, spec: Path, runs_dir: Path) -> tuple[dict[str, Any], Path, float]:
    """`kafkatune sweep SPEC --json` against `tb`: its summary, its study folder and its wall clock (s).
    Exits the benchmark when the sweep fails."""
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "kafkatune", "sweep", str(spec), "--state-dir", str(tb.state_dir)]
    cmd += ["--runs-dir", str(runs_dir), "--json"]
    proc = run_child(cmd)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"sweep failed with exit code {proc.returncode}")
    s: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    study = runs_dir / s["study"]
    log(f"study folder: {study}")
    return s, study, wall


def bench(
    tb: Testbed,
    workload: Path,
    out: Path,
    slo_ms: float,
    preexec: Callable[[], None] | None = None,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """`kafkatune bench WORKLOAD --json` against `tb` with the SLO `slo_ms` (`preexec`: run_child's; `extra`: more
    of its options): its JSON line, with its wall clock (`wall_s`). Exits the benchmark when the run fails."""
    cmd = [sys.executable, "-m", "kafkatune", "bench", str(workload), "--state-dir", str(tb.state_dir)]
    cmd += ["--out", str(out), "--json", "--slo-p99-e2e-ms", str(slo_ms), *extra]
    t0 = time.monotonic()
    proc = run_child(cmd, stderr=subprocess.PIPE, preexec=preexec)
    if proc.returncode != 0:
        sys.exit(f"bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
    d: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    d["wall_s"] = time.monotonic() - t0
    return d


def producer_stats(out: Path) -> dict[str, Any]:
    """The producers' own statistics from the run's result.json (records.result.ProducerStats), {} without them."""
    doc = json.loads((out / "result.json").read_text())
    stack: list[Any] = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if isinstance(x.get("producer_stats"), dict):
                return dict(x["producer_stats"])
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return {}


def by_cause(tail: Mapping[str, Any] | None) -> dict[str, int]:
    """A run's tail budget as its JSON line or result.json keeps it (loadgen.tail), in short: per cause that was the
    first explanation of a second over the SLO, how many such seconds, and the unexplained ones ({} without one)."""
    if not tail:
        return {}
    b = TailBudget.from_json(tail).brief()
    return {**b.primary, **({"unexplained": b.unexplained} if b.unexplained else {})}


def machine() -> dict[str, Any]:
    """What a result was measured on: cores, memory, kernel, Python (asv's machine.json, in small), and the CPU's
    speed as the result is written (cluster.probe.probe_cpu: the same machine runs several times slower on some
    days)."""
    import os
    import platform

    from cluster.probe import probe_cpu

    mem = next(
        (
            int(ln.split()[1]) * 1024
            for ln in Path("/proc/meminfo").read_text().splitlines()
            if ln.startswith("MemTotal")
        ),
        None,
    )
    return {
        "cores": os.cpu_count(),
        "memory_bytes": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "node": platform.node(),
        **probe_cpu(),
    }


def commit() -> str:
    """The repository's commit (with '+dirty' when the tree has uncommitted changes)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def new_result_name(stem: str) -> str:
    """The result file a new run writes (without .json): `stem` for its first, else `stem` dated today (UTC) with b,
    c, … for further runs that day, so that a run measured again on a fresh testbed keeps the earlier run's file."""
    results, day = REPO / "benchmarks" / "results", time.strftime("%Y%m%d", time.gmtime())
    for name in (stem, *(f"{stem}_{day}{n}" for n in ("", *"bcdefghijklmnopqrstuvwxyz"))):
        if not (results / f"{name}.json").exists():
            return name
    raise SystemExit(f"{results}: 27 result files of {stem} on {day}; move some away")


def result_file(name: str, figures: dict[str, Any]) -> Path:
    """benchmarks/results/NAME.json: the figures with when, on what machine and at which commit they were measured."""
    out = REPO / "benchmarks" / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "machine": machine(),
        **figures,
    }
    out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    log(f"results: {out}")
    return out


def demo_workload(
    path: Path,
    name: str,
    producer: dict[str, Any],
    rate: float | str,
    test_s: float,
    consumer: dict[str, Any] | None = None,
) -> Path:
    """The demo's workload (1-KB records, 6 partitions, one producer and one consumer) as a bench workload file at
    `rate` msg/s (0: discover the sustainable rate; "max": the maximum rate) for `test_s` seconds after a 3-s
    warm-up, the producer's config `producer` and the consumer's `consumer` (none: the client's defaults)."""
    doc = {
        "name": name,
        "partitionsPerTopic": 6,
        "messageSize": 1024,
        "producersPerTopic": 1,
        "consumerPerSubscription": 1,
        "producerRate": rate,
        "warmupDurationMinutes": 3 / 60,
        "testDurationMinutes": test_s / 60,
        "producerConfig": producer,
        **({"consumerConfig": consumer} if consumer else {}),
    }
    path.write_text(json.dumps(doc))
    return path
