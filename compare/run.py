"""`kafkatune compare`: the same workloads on every system, through the same harness, side by side.

Methods (docs/reference.md §2-4):
- throughput (NTU): back-to-back runs over payload sizes, each repeated; the per-second delivered rates
  of all repeats, trimmed beyond the spec's percentiles (p1/p99), give the median msg/s and bit/s;
- pingpong (NTU): one message at a time there and back through the system; latency = RTT/2;
- native floors: iperf3 (TCP stream) and sockperf (TCP ping-pong, RTT/2) on the same loopback path, and
  the raw-TCP baseline driver through the harness, so the harness's own overhead is a printed number;
- fixedRate (OMB): a fixed publish rate on 1/6/16 partitions where the system has partitions, with
  publish and end-to-end percentile tables;
- iot: periodic flows (fixed rate, p90 latency against rate) and a sporadic burst of large messages
  starting in the middle of a periodic flow.

Every run is a `runner.run` with its own record under runs/<name>/<system>/<method>/ (result.json and
Parquet, as `bench` writes). A size or mode a system cannot carry is a row with its error, never dropped.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing as mp
import queue
import shutil
import statistics
import struct
import subprocess
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cluster import target
from compare.spec import CompareSpec, System
from core import paths, procs
from core.errors import EnvironmentProblem, UserError
from drivers import api
from loadgen import result as res
from loadgen import runner
from loadgen.workload import Workload
from records import comparison as comparisons
from records.run import write_run

Say = Callable[[str], None]
SEQ = struct.Struct("<Q")


@dataclass
class Target:
    """A system with its server found (or started) and the client hosts its workers run on."""

    system: System
    common: dict[str, str]
    client_netns: list[target.Placement] = field(default_factory=lambda: [None])

    @property
    def name(self) -> str:
        return self.system.name


# ---- servers -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def targets(
    spec: CompareSpec, state_dir: Path | None, say: Say, only: list[str] | None = None
) -> Iterator[list[Target]]:
    """Resolve the address of every system (of those in `only`, when given); servers that were not running
    are started, and stopped after. A system left out needs neither its server nor the testbed."""
    from testbed.servers import Servers

    sv = Servers(paths.home() / "servers")
    started: list[str] = []
    out: list[Target] = []
    try:
        for s in spec.selected(only):
            common = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in s.common.items()}
            ns: list[target.Placement] = [None]
            kind = s.server_kind
            if s.driver == "tcp":
                common.setdefault("tcp.dir", str(paths.home() / "tcp"))
            elif "bootstrap.servers" in common or kind == "none":
                pass
            elif kind == "testbed":
                tb = target.testbed(state_dir or paths.state_dir(), all_nodes=False, instead="the system's common")
                common["bootstrap.servers"] = tb.bootstrap
                ns = list(tb.placements)
            else:
                st = sv.alive(kind)
                if st is None:
                    st = sv.up(kind, progress=say)
                    started.append(kind)
                for k, v in st.common().items():
                    common.setdefault(k, v)
            out.append(Target(s, common, ns))
        yield out
    finally:
        for kind in started:
            sv.down(kind, progress=say)


# ---- one harness run -----------------------------------------------------------------------------------
def _workload(t: Target, name: str, size: int, **kw: Any) -> Workload:
    s = t.system
    return Workload(
        name=name,
        driver=s.driver,
        messageSize=size,
        replicationFactor=s.replicationFactor,
        producerConfig=dict(s.producerConfig),
        consumerConfig=dict(s.consumerConfig),
        topicConfig=dict(s.topicConfig),
        **kw,
    )


def _harness_run(t: Target, w: Workload, out: Path) -> tuple[runner.RawRun, dict[str, Any]]:
    raw = runner.run(w, t.common, placements=t.client_netns, say=lambda m: None)
    rec = res.build(raw, None, {"client": t.system.driver, "system": t.name})
    write_run(out, rec)
    return raw, rec.result


def _per_second(raw: runner.RawRun, role: str) -> list[float]:
    """Messages per whole measured second, summed over the role's workers."""
    w = raw.workload
    by: dict[int, int] = defaultdict(int)
    for tk in raw.ticks:
        if tk.role == role and runner.phase_of(tk.second, w.warmup_seconds, w.test_seconds) == "measure":
            by[tk.second] += tk.msgs
    n = runner.measured_seconds(w.warmup_seconds, w.test_seconds)
    first = math.ceil(w.warmup_seconds)
    return [float(by.get(first + i, 0)) for i in range(n)]


def _error_text(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    lines = text.splitlines()
    # a worker's traceback: its last line names the error
    return lines[-1] if len(lines) > 3 else " ".join(lines)


def trimmed_median(samples: list[float], lo: float, hi: float) -> tuple[float, int, float, float]:
    """(median, samples kept, p25, p75) after dropping samples below the lo-th or above the hi-th percentile."""
    if not samples:
        return float("nan"), 0, float("nan"), float("nan")
    a = np.asarray(samples, dtype=float)
    p_lo, p_hi = np.percentile(a, [lo, hi])
    kept = a[(a >= p_lo) & (a <= p_hi)]
    if kept.size == 0:
        kept = a
    return float(np.median(kept)), int(kept.size), float(np.percentile(kept, 25)), float(np.percentile(kept, 75))


# ---- NTU throughput ------------------------------------------------------------------------------------
def throughput(t: Target, spec: CompareSpec, out: Path, say: Say, tick: Callable[[], None]) -> list[dict[str, Any]]:
    cfg = spec.throughput
    assert cfg is not None
    rows = []
    for size in cfg.size_list():
        delivered: list[float] = []
        published: list[float] = []
        errors: list[str] = []
        lost = 0
        for rep in range(cfg.repeats):
            w = _workload(
                t,
                f"{t.name}-tp-{size}-r{rep}",
                size,
                producersPerTopic=cfg.producers,
                consumerPerSubscription=cfg.consumers,
                testDurationMinutes=cfg.seconds / 60,
                warmupDurationMinutes=cfg.warmupSeconds / 60,
                drainTimeoutSeconds=cfg.drainTimeoutSeconds,
            )
            try:
                raw, result = _harness_run(t, w, comparisons.run_dir(out, t.name, "throughput", f"{size}B-r{rep}"))
            except Exception as e:  # a size or mode the system cannot carry: its row says why
                errors.append(_error_text(e))
                say(f"  {t.name} {size} B repeat {rep + 1}: FAILED {errors[-1]}")
                tick()
                break  # the same size fails the same way again; report it once
            s = result["summary"]
            lost += s["lost"]
            if s["acknowledged"] == 0:
                errors.append(f"no message acknowledged: {'; '.join(s['publish_error_samples']) or 'no error given'}")
            delivered += _per_second(raw, "consumer")
            published += _per_second(raw, "producer")
            tick()
        med, kept, p25, p75 = trimmed_median(delivered, *cfg.trim)
        pub_med = trimmed_median(published, *cfg.trim)[0]
        row: dict[str, Any] = {
            "system": t.name,
            "driver": t.system.driver,
            "size": size,
            "repeats": cfg.repeats,
            "samples": len(delivered),
            "samples_kept": kept,
            "msg_s": med if delivered else None,
            "msg_s_p25": p25 if delivered else None,
            "msg_s_p75": p75 if delivered else None,
            "bit_s": med * size * 8 if delivered else None,
            "publish_msg_s": pub_med if published else None,
            "lost": lost,
            "error": "; ".join(dict.fromkeys(errors)) or None,
        }
        if row["msg_s"] is not None and not errors:
            say(f"  {t.name:<16} {size:>8} B {row['msg_s']:>12,.0f} msg/s {row['bit_s'] / 1e6:>10.1f} Mbit/s")
        rows.append(row)
    return rows


# ---- NTU ping-pong --------------------------------------------------------------------------------------
def _echo(
    driver: str, common: dict[str, str], ping: str, pong: str, pc: dict[str, str], cc: dict[str, str], q: Any, stop: Any
) -> None:
    """The far end of the ping-pong: every message received on `ping` goes straight back on `pong`."""
    try:
        drv = api.load_driver(driver)(common)
        inbox: list[bytes] = []
        c = drv.create_consumer(ping, f"echo-{ping}", inbox.append, cc)
        while not c.ready():
            c.poll(0.05)
        p = drv.create_producer(pong, pc)
        q.put(("ready", None))

        def ignore(err: str | None, payload: bytes) -> None:
            return None

        while not stop.is_set():
            c.poll(0.05)
            if inbox:
                for m in inbox:
                    api.send_waiting(p, None, m, ignore)
                inbox.clear()
                p.poll(0)
        p.close()
        c.close()
        drv.close()
    except BaseException:
        q.put(("error", traceback.format_exc(limit=6)))


def pingpong_once(t: Target, spec: CompareSpec) -> tuple[list[float], int]:
    """Round-trip times (µs) of `messages` pings after the warm-up; and how many replies never came."""
    cfg = spec.pingpong
    assert cfg is not None
    s = t.system
    pc = {k: str(v) for k, v in {**s.producerConfig, **s.pingpongProducerConfig}.items()}
    cc = {k: str(v) for k, v in s.consumerConfig.items()}
    drv = api.load_driver(s.driver)(t.common)
    drv.validate(pc, cc)
    import uuid

    tag = uuid.uuid4().hex[:8]
    ping, pong = f"kt-{t.name}-ping-{tag}", f"kt-{t.name}-pong-{tag}"
    drv.create_topics(
        [api.TopicSpec(n, 1, s.replicationFactor, {k: str(v) for k, v in s.topicConfig.items()}) for n in (ping, pong)]
    )
    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    stop = ctx.Event()
    replies: list[bytes] = []
    c = drv.create_consumer(pong, f"pinger-{pong}", replies.append, cc)
    proc = None
    p = None
    try:
        deadline = time.monotonic() + 60
        while not c.ready():
            c.poll(0.05)
            if time.monotonic() > deadline:
                raise EnvironmentProblem("ping-pong: the reply consumer never became ready")
        proc = ctx.Process(target=_echo, args=(s.driver, t.common, ping, pong, pc, cc, q, stop), daemon=True)
        proc.start()
        kind, detail = q.get(timeout=90)
        if kind == "error":
            raise EnvironmentProblem(f"ping-pong echo failed:\n{detail}")
        p = drv.create_producer(ping, pc)
        pad = bytes(max(0, cfg.size - SEQ.size))
        rtts: list[float] = []
        missing = 0
        errors: list[str] = []

        def done(err: str | None, payload: bytes) -> None:
            if err is not None:
                errors.append(err)

        for i in range(cfg.warmupMessages + cfg.messages):
            msg = SEQ.pack(i) + pad
            t0 = time.perf_counter_ns()
            api.send_waiting(p, None, msg, done, cfg.replyTimeoutSeconds)
            p.poll(0)
            end = time.monotonic() + cfg.replyTimeoutSeconds
            got = False
            while time.monotonic() < end:
                c.poll(0.05)
                p.poll(0)
                while replies:
                    r = replies.pop()
                    if SEQ.unpack_from(r)[0] == i:
                        got = True
                if got:
                    break
            t1 = time.perf_counter_ns()
            if errors:
                raise EnvironmentProblem(f"ping-pong: send failed: {errors[0]}")
            if not got:
                missing += 1
                if missing >= 3:
                    echo_error = ""
                    with contextlib.suppress(queue.Empty):
                        kind, detail = q.get_nowait()
                        echo_error = f"; the echo side failed:\n{detail}" if kind == "error" else ""
                    raise EnvironmentProblem(
                        f"ping-pong: {missing} replies not received within {cfg.replyTimeoutSeconds:g} s{echo_error}"
                    )
                continue
            if i >= cfg.warmupMessages:
                rtts.append((t1 - t0) / 1e3)
        return rtts, missing
    finally:
        stop.set()
        if proc is not None:
            proc.join(10)
            if proc.is_alive():
                proc.terminate()
        if p is not None:
            p.close()
        c.close()
        drv.delete_topics([ping, pong])
        drv.close()


def pingpong(t: Target, spec: CompareSpec, out: Path, say: Say, tick: Callable[[], None]) -> dict[str, Any]:
    cfg = spec.pingpong
    assert cfg is not None
    rtts: list[float] = []
    missing = 0
    error = None
    for _ in range(cfg.repeats):
        try:
            r, m = pingpong_once(t, spec)
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            error = _error_text(e)
            say(f"  {t.name} ping-pong: FAILED {error}")
            tick()
            break
        rtts += r
        missing += m
        tick()
    row = _latency_row(t.name, t.system.driver, [x / 2 for x in rtts], cfg.size)
    row.update(round_trips=len(rtts), missing_replies=missing, error=error)
    comparisons.write_round_trips(out, t.name, rtts)
    if rtts:
        say(f"  {t.name:<16} ping-pong {cfg.size} B: RTT/2 median {row['p50_us']:.1f} µs, p99 {row['p99_us']:.1f} µs")
    return row


PCTS = (50, 90, 99, 99.9)


def _latency_row(name: str, driver: str, one_way_us: list[float], size: int) -> dict[str, Any]:
    row: dict[str, Any] = {"system": name, "driver": driver, "size": size}
    if one_way_us:
        a = np.asarray(one_way_us)
        for p in PCTS:
            row[f"p{p:g}_us"] = float(np.percentile(a, p))
        row["mean_us"] = float(a.mean())
        row["max_us"] = float(a.max())
    else:
        for p in PCTS:
            row[f"p{p:g}_us"] = None
        row["mean_us"] = row["max_us"] = None
    return row


# ---- native floors -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def _server(cmd: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        procs.wait_until(lambda: procs.accepts("127.0.0.1", port) or proc.poll() is not None, 10)
        if proc.poll() is not None or not procs.accepts("127.0.0.1", port):
            raise EnvironmentProblem(f"{cmd[0]} server did not start on port {port}")
        yield proc
    finally:
        procs.stop(proc.pid, group=True, timeout_s=5)


def native(spec: CompareSpec, say: Say) -> dict[str, Any]:
    """iperf3 TCP stream bit/s and sockperf TCP ping-pong RTT/2 on 127.0.0.1: the floor under everything."""
    cfg = spec.native
    assert cfg is not None
    out: dict[str, Any] = {}
    if cfg.iperf3:
        exe = shutil.which("iperf3")
        if exe is None:
            out["iperf3"] = {"error": "iperf3 is not installed (`make deps` installs Debian's iperf3)"}
        else:
            port = procs.free_port()
            with _server([exe, "-s", "-B", "127.0.0.1", "-p", str(port)], port):
                time.sleep(0.2)
                r = subprocess.run(
                    [exe, "-c", "127.0.0.1", "-p", str(port), "-t", f"{cfg.seconds:g}", "-J"],
                    capture_output=True,
                    text=True,
                    timeout=cfg.seconds + 30,
                )
            try:
                bps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]
                out["iperf3"] = {"bit_s": float(bps), "seconds": cfg.seconds}
                say(f"  native iperf3 TCP stream: {bps / 1e9:.2f} Gbit/s")
            except (KeyError, ValueError):
                out["iperf3"] = {"error": (r.stderr or r.stdout).strip()[-300:] or f"exit {r.returncode}"}
    if cfg.sockperf:
        exe = shutil.which("sockperf")
        if exe is None:
            out["sockperf"] = {"error": "sockperf is not installed (`make deps` installs Debian's sockperf)"}
        else:
            port = procs.free_port()
            size = spec.pingpong.size if spec.pingpong else 64
            with _server([exe, "sr", "--tcp", "-i", "127.0.0.1", "-p", str(port)], port):
                r = subprocess.run(
                    [exe, "pp", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", f"{cfg.seconds:g}"],
                    capture_output=True,
                    text=True,
                    timeout=cfg.seconds + 30,
                )
            out["sockperf"] = _parse_sockperf(r.stdout + r.stderr, size)
            if "p50_us" in out["sockperf"]:
                say(f"  native sockperf TCP ping-pong {size} B: RTT/2 median {out['sockperf']['p50_us']:.1f} µs")
    return out


def _parse_sockperf(text: str, size: int) -> dict[str, Any]:
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    row: dict[str, Any] = {"size": size}
    for p in PCTS:
        m = re.search(rf"percentile {p:.3f} =\s*([0-9.]+)", text)
        if m:
            row[f"p{p:g}_us"] = float(m.group(1))
    m = re.search(r"avg-latency=([0-9.]+)", text)
    if m:
        row["mean_us"] = float(m.group(1))
    if "p50_us" not in row:
        return {"error": text.strip()[-300:] or "no output"}
    return row


# ---- OMB fixed rate -------------------------------------------------------------------------------------------
LAT_KEYS = ("p50", "p75", "p95", "p99", "p99.9", "max")


def fixed_rate(t: Target, spec: CompareSpec, out: Path, say: Say, tick: Callable[[], None]) -> list[dict[str, Any]]:
    cfg = spec.fixedRate
    assert cfg is not None
    rows = []
    for parts in cfg.partitions if t.system.partitioned else [None]:
        w = _workload(
            t,
            f"{t.name}-fixed-{parts or 'na'}",
            cfg.size,
            partitionsPerTopic=parts or 1,
            producersPerTopic=cfg.producers,
            consumerPerSubscription=cfg.consumers,
            producerRate=cfg.rate,
            testDurationMinutes=cfg.seconds / 60,
            warmupDurationMinutes=cfg.warmupSeconds / 60,
        )
        row: dict[str, Any] = {"system": t.name, "partitions": parts, "size": cfg.size, "target_msg_s": cfg.rate}
        try:
            _raw, result = _harness_run(t, w, comparisons.run_dir(out, t.name, "fixed-rate", f"p{parts or 'na'}"))
            s = result["summary"]
            row.update(
                publish_msg_s=s["publish_msg_s"],
                consume_msg_s=s["consume_msg_s"],
                sustained=s["publish_msg_s"] >= 0.95 * cfg.rate,
                lost=s["lost"],
                error=None,
                **{f"publish_{k}_ms": s["publish_latency_ms"][k] for k in LAT_KEYS},
                **{f"e2e_{k}_ms": s["end_to_end_latency_ms"][k] for k in LAT_KEYS},
            )
            say(
                f"  {t.name:<16} {cfg.rate:,.0f} msg/s × {cfg.size} B, partitions {parts or 'n/a'}: "
                f"got {s['publish_msg_s']:,.0f} msg/s, e2e p99 {s['end_to_end_latency_ms']['p99']:.2f} ms"
            )
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row["error"] = _error_text(e)
            say(f"  {t.name} fixed rate, partitions {parts or 'n/a'}: FAILED {row['error']}")
        rows.append(row)
        tick()
    return rows


# ---- IoT patterns ---------------------------------------------------------------------------------------------
def _second_pcts(raw: runner.RawRun, q: float) -> dict[int, float]:
    """End-to-end latency percentile q (ms) of each second of a run, from the consumers' tick histograms."""
    from loadgen import recorder

    by: dict[int, list[bytes | None]] = defaultdict(list)
    for tk in raw.ticks:
        if tk.role == "consumer" and tk.msgs:
            by[tk.second].append(tk.hist)
    out = {}
    for sec, hs in by.items():
        h = recorder.merge(hs)
        out[sec] = recorder.percentiles(h, [q])[0] / 1000
    return out


def periodic(t: Target, spec: CompareSpec, out: Path, say: Say, tick: Callable[[], None]) -> list[dict[str, Any]]:
    assert spec.iot is not None and spec.iot.periodic is not None
    cfg = spec.iot.periodic
    rows = []
    for rate in cfg.rates:
        w = _workload(
            t,
            f"{t.name}-periodic-{rate:g}",
            cfg.size,
            producerRate=rate,
            testDurationMinutes=cfg.seconds / 60,
            warmupDurationMinutes=cfg.warmupSeconds / 60,
        )
        row: dict[str, Any] = {"system": t.name, "rate": rate, "size": cfg.size}
        try:
            _raw, result = _harness_run(t, w, comparisons.run_dir(out, t.name, "iot-periodic", f"{rate:g}"))
            s = result["summary"]
            q = result.get("aggregatedEndToEndLatencyQuantiles", {})
            row.update(
                delivered_msg_s=s["consume_msg_s"],
                e2e_p50_ms=q.get("50"),
                e2e_p90_ms=q.get("90"),
                e2e_p99_ms=q.get("99"),
                lost=s["lost"],
                error=None,
            )
            say(f"  {t.name:<16} periodic {rate:g} msg/s: e2e p90 {row['e2e_p90_ms'] or float('nan'):.2f} ms")
        except Exception as e:  # a size or mode the system cannot carry: its row says why
            row["error"] = _error_text(e)
            say(f"  {t.name} periodic {rate:g} msg/s: FAILED {row['error']}")
        rows.append(row)
        tick()
    return rows


def sporadic(t: Target, spec: CompareSpec, out: Path, say: Say, tick: Callable[[], None]) -> dict[str, Any]:
    """A periodic flow; after burstStartSeconds a burst flow of large messages runs beside it."""
    assert spec.iot is not None and spec.iot.sporadic is not None
    cfg = spec.iot.sporadic
    base = _workload(
        t,
        f"{t.name}-sporadic-periodic",
        cfg.periodicSize,
        producerRate=cfg.periodicRate,
        testDurationMinutes=cfg.seconds / 60,
        warmupDurationMinutes=0,
    )
    burst = _workload(
        t,
        f"{t.name}-sporadic-burst",
        cfg.burstSize,
        producerRate=cfg.burstRate,
        testDurationMinutes=cfg.burstSeconds / 60,
        warmupDurationMinutes=0,
    )
    row: dict[str, Any] = {"system": t.name, "periodic_rate": cfg.periodicRate, "burst_size": cfg.burstSize}
    got: dict[str, Any] = {}

    def run_burst() -> None:
        try:
            time.sleep(cfg.burstStartSeconds)
            got["burst"] = _harness_run(t, burst, comparisons.run_dir(out, t.name, "iot-sporadic", "burst"))
        except BaseException as e:
            got["burst_error"] = e

    th = threading.Thread(target=run_burst, daemon=True)
    try:
        th.start()
        praw, presult = _harness_run(t, base, comparisons.run_dir(out, t.name, "iot-sporadic", "periodic"))
        th.join(cfg.seconds + 300)
        if "burst_error" in got:
            raise got["burst_error"]
        if "burst" not in got:
            raise EnvironmentProblem("the burst flow did not finish")
        braw, bresult = got["burst"]
        # the burst's measured window on the periodic flow's time line, in whole seconds
        t0 = praw.timing["t0_ns"]
        b_start = (braw.timing["measure_start_ns"] - t0) / 1e9
        b_end = (braw.timing["measure_end_ns"] - t0) / 1e9
        p90 = _second_pcts(praw, 90)
        before = [v for sec, v in p90.items() if sec + 1 <= b_start]
        during = [v for sec, v in p90.items() if sec >= b_start and sec + 1 <= b_end]
        after = [v for sec, v in p90.items() if sec >= b_end + 1]
        row.update(
            burst_msg_s=bresult["summary"]["consume_msg_s"],
            burst_mb_s=bresult["summary"]["consume_mb_s"],
            periodic_p90_before_ms=statistics.median(before) if before else None,
            periodic_p90_during_ms=statistics.median(during) if during else None,
            periodic_p90_after_ms=statistics.median(after) if after else None,
            periodic_lost=presult["summary"]["lost"],
            burst_lost=bresult["summary"]["lost"],
            burst_window_s=[round(b_start, 2), round(b_end, 2)],
            per_second_p90_ms={str(k): v for k, v in sorted(p90.items())},
            error=None,
        )
        say(
            f"  {t.name:<16} sporadic: periodic p90 {_ms(row['periodic_p90_before_ms'])} before, "
            f"{_ms(row['periodic_p90_during_ms'])} during a {cfg.burstSize} B burst "
            f"({row['burst_mb_s']:.1f} MB/s)"
        )
    except Exception as e:  # a size or mode the system cannot carry: its row says why
        th.join(cfg.seconds + 300)
        row["error"] = _error_text(e)
        say(f"  {t.name} sporadic: FAILED {row['error']}")
    tick()
    return row


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} ms"


# ---- the whole comparison --------------------------------------------------------------------------------------
def steps(spec: CompareSpec, systems: list[System]) -> int:
    n_systems = len(systems)
    n = 0
    if spec.throughput:
        n += len(spec.throughput.size_list()) * spec.throughput.repeats * n_systems
    if spec.pingpong:
        n += spec.pingpong.repeats * n_systems
    if spec.fixedRate:
        n += sum(len(spec.fixedRate.partitions) if s.partitioned else 1 for s in systems)
    if spec.iot and spec.iot.periodic:
        n += len(spec.iot.periodic.rates) * n_systems
    if spec.iot and spec.iot.sporadic:
        n += n_systems
    return n


def validate_systems(spec: CompareSpec, only: list[str] | None = None) -> None:
    """Each system's client configs checked by its own driver before anything runs (no server contacted)."""
    for s in spec.selected(only):
        common = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in s.common.items()}
        pc = {k: str(v) for k, v in s.producerConfig.items()}
        cc = {k: str(v) for k, v in s.consumerConfig.items()}
        try:
            drv = api.load_driver(s.driver)(common)
            try:
                drv.validate(pc, cc)
                if s.pingpongProducerConfig:
                    drv.validate({**pc, **{k: str(v) for k, v in s.pingpongProducerConfig.items()}}, cc)
            finally:
                drv.close()
        except UserError as e:
            raise UserError(f"systems.{s.name} ({s.driver}): {e}") from None


def compare(
    spec: CompareSpec,
    out: Path,
    *,
    state_dir: Path | None = None,
    say: Say = print,
    tick: Callable[[], None] = lambda: None,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Run every method on every system; write out/comparison.json and return it."""
    out.mkdir(parents=True, exist_ok=True)
    comparisons.write_spec(out, spec.model_dump_json(indent=2))
    doc: dict[str, Any] = {
        "name": spec.name,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spec": json.loads(spec.model_dump_json()),
        "systems": [],
        "throughput": [],
        "pingpong": [],
        "native": {},
        "fixed_rate": [],
        "iot_periodic": [],
        "iot_sporadic": [],
    }
    validate_systems(spec, only)  # and an unknown --system name is refused here

    def save() -> None:
        comparisons.write_comparison(out, doc)

    if spec.native:
        say("native floors (iperf3, sockperf) on 127.0.0.1")
        doc["native"] = native(spec, say)
        save()
    with targets(spec, state_dir, say, only) as ts:
        for t in ts:
            doc["systems"].append(
                {
                    "name": t.name,
                    "driver": t.system.driver,
                    "server": t.system.server_kind,
                    "partitioned": t.system.partitioned,
                }
            )
            say(f"{t.name} ({t.system.driver})")
            if spec.throughput:
                doc["throughput"] += throughput(t, spec, out, say, tick)
                save()
            if spec.pingpong:
                doc["pingpong"].append(pingpong(t, spec, out, say, tick))
                save()
            if spec.fixedRate:
                doc["fixed_rate"] += fixed_rate(t, spec, out, say, tick)
                save()
            if spec.iot and spec.iot.periodic:
                doc["iot_periodic"] += periodic(t, spec, out, say, tick)
                save()
            if spec.iot and spec.iot.sporadic:
                doc["iot_sporadic"].append(sporadic(t, spec, out, say, tick))
                save()
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return doc
