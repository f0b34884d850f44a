"""The comparison's charts (reports.charts' machinery): throughput against payload size with the raw-TCP
harness ceiling and the iperf3 floor on the same log axes, ping-pong RTT/2 with sockperf's floor, OMB
fixed-rate latency, and the IoT periodic and sporadic results. Each chart is drawn from comparison.json's
tables alone.
"""

from __future__ import annotations

import dataclasses

import matplotlib.ticker

from core.fmt import si
from records.comparison import Comparison, LatencyRow, ThroughputRow
from reports.charts import COLORS, Chart, _svg, plt

BASELINE = "tcp"  # the raw-TCP run through the same harness: every system's ceiling here


def size_label(b: int) -> str:
    return si(float(b)) + "B"


def _color(i: int, name: str) -> str:
    return "#444444" if name == BASELINE else COLORS[i % len(COLORS)]


def _throughput_chart(doc: Comparison, key: str, field: str, ylabel: str) -> Chart | None:
    def value(r: ThroughputRow) -> float:
        return float(getattr(r, field) or 0.0)

    rows = [r for r in doc.throughput if getattr(r, field) is not None and not r.error]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, name in enumerate(doc.names):
        pts = sorted((r.size, value(r)) for r in rows if r.system == name)
        if pts:
            ax.plot(
                *zip(*pts, strict=True),
                marker="o",
                ms=3,
                label=name,
                color=_color(i, name),
                ls="--" if name == BASELINE else "-",
            )
    iperf = doc.native.iperf3.bit_s if doc.native.iperf3 else None
    if field == "bit_s" and iperf:
        ax.axhline(iperf, color="#999999", ls=":", label=f"iperf3 floor {iperf / 1e9:.1f} Gbit/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(si))
    ax.set_xlabel("payload (bytes)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, ncol=2)
    best = max(rows, key=value)
    unit = "msg/s" if field == "msg_s" else "bit/s"
    takeaway = f"highest: {best.system} at {size_label(best.size)}, {value(best):,.3g} {unit}"
    base = {r.size: value(r) for r in rows if r.system == BASELINE}
    if base and field == "msg_s":
        ratios = [(value(r) / base[r.size], r) for r in rows if r.system != BASELINE and base.get(r.size)]
        if ratios:
            top = max(ratios, key=lambda x: x[0])
            takeaway += (
                f"; closest to the harness ceiling (raw TCP): {top[1].system} at {size_label(top[1].size)}, "
                f"{top[0]:.0%} of it"
            )
    return Chart(key, f"Back-to-back throughput ({unit}) against payload size", _svg(fig, key), takeaway)


def _pingpong_chart(doc: Comparison) -> Chart | None:
    rows: list[LatencyRow] = [r for r in doc.pingpong if r.p50_us is not None]
    sp = doc.native.sockperf
    floor = sp.p50_us if sp else None
    if sp and floor is not None:
        rows = [*rows, dataclasses.replace(sp, system="sockperf (native)")]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    pcts = ("p50_us", "p90_us", "p99_us")
    w = 0.8 / len(pcts)
    for j, p in enumerate(pcts):
        ax.bar(
            [i + j * w for i in range(len(rows))], [getattr(r, p) or 0 for r in rows], w, label=p[:-3], color=COLORS[j]
        )
    ax.set_xticks([i + w for i in range(len(rows))], [r.system for r in rows], rotation=20, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("RTT/2 (µs)")
    ax.legend(fontsize=7)
    best = min((r for r in rows if not r.system.startswith("sockperf")), key=lambda r: r.p50_us or 0.0, default=None)
    take = f"lowest median through the harness: {best.system} {best.p50_us or 0.0:.0f} µs" if best else ""
    if floor is not None:
        take += f"; sockperf's native TCP floor: {floor:.0f} µs"
    return Chart("pingpong", f"Ping-pong latency, {rows[0].size or 64} B (RTT/2)", _svg(fig, "pingpong"), take)


def _fixed_chart(doc: Comparison) -> Chart | None:
    # a run with no end-to-end sample has no bar to draw (its table row says "—")
    rows = [r for r in doc.fixed_rate if not r.error and r.e2e_p99_ms is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    labels = [f"{r.system} p={r.partitions or 'n/a'}" for r in rows]
    for j, (k, label) in enumerate((("e2e_p50_ms", "p50"), ("e2e_p99_ms", "p99"), ("e2e_p999_ms", "p99.9"))):
        ax.bar(
            [i + j * 0.27 for i in range(len(rows))],
            [max(getattr(r, k) or 0.0, 1e-3) for r in rows],
            0.27,
            label=label,
            color=COLORS[j],
        )
    ax.set_xticks([i + 0.27 for i in range(len(rows))], labels, rotation=25, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.legend(fontsize=7)
    worst = max(rows, key=lambda r: r.e2e_p99_ms or 0.0)
    unsustained = [lab for lab, r in zip(labels, rows, strict=True) if not r.sustained]
    take = f"highest p99: {worst.system} ({worst.e2e_p99_ms or 0.0:.2f} ms)"
    take += f"; rate not sustained: {', '.join(unsustained)}" if unsustained else "; every run sustained the rate"
    rate = rows[0].target_msg_s
    return Chart("fixed-rate", f"Fixed rate {rate:,.0f} msg/s × {rows[0].size} B", _svg(fig, "fixed-rate"), take)


def _periodic_chart(doc: Comparison) -> Chart | None:
    rows = [(r.rate, r.e2e_p90_ms, r.system) for r in doc.iot_periodic if r.e2e_p90_ms is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for i, name in enumerate(doc.names):
        pts = sorted((rate, p90) for rate, p90, system in rows if system == name)
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", ms=3, label=name, color=_color(i, name))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("periodic rate (msg/s)")
    ax.set_ylabel("end-to-end p90 (ms)")
    ax.legend(fontsize=7, ncol=2)
    top = max(rate for rate, _, _ in rows)
    at_top = sorted((p90, system) for rate, p90, system in rows if rate == top)
    take = f"at {top:g} msg/s the lowest p90 is {at_top[0][1]} ({at_top[0][0]:.2f} ms)"
    return Chart("iot-periodic", "IoT periodic flows: p90 latency against rate", _svg(fig, "iot-periodic"), take)


def _sporadic_chart(doc: Comparison) -> Chart | None:
    rows = [r for r in doc.iot_sporadic if r.periodic_p90_before_ms is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for j, (k, lab) in enumerate((("periodic_p90_before_ms", "before"), ("periodic_p90_during_ms", "during burst"))):
        ax.bar(
            [i + j * 0.4 for i in range(len(rows))],
            [max(getattr(r, k) or 1e-3, 1e-3) for r in rows],
            0.4,
            label=lab,
            color=COLORS[j],
        )
    ax.set_xticks([i + 0.2 for i in range(len(rows))], [r.system for r in rows], rotation=20, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("periodic flow p90 (ms)")
    ax.legend(fontsize=7)
    hits = [
        (r.periodic_p90_during_ms / r.periodic_p90_before_ms, r.system)
        for r in rows
        if r.periodic_p90_during_ms and r.periodic_p90_before_ms
    ]
    take = f"largest slowdown of the periodic flow: {max(hits)[1]} ×{max(hits)[0]:.1f}" if hits else ""
    return Chart("iot-sporadic", "IoT sporadic burst beside a periodic flow", _svg(fig, "iot-sporadic"), take)


def charts(doc: Comparison) -> list[Chart]:
    out = [
        _throughput_chart(doc, "throughput-msgs", "msg_s", "delivered msg/s"),
        _throughput_chart(doc, "throughput-bits", "bit_s", "delivered bit/s"),
        _pingpong_chart(doc),
        _fixed_chart(doc),
        _periodic_chart(doc),
        _sporadic_chart(doc),
    ]
    return [c for c in out if c is not None]
