"""The comparison report (`kafkatune compare`): report.md and one self-contained report.html.

Built from comparison.json alone (records.comparison) with the one page builder (reports.page) and the
comparison's charts (reports.comparison_charts). Every table puts the harness's ceiling beside each figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from records.comparison import Comparison, LatencyRow, read_comparison
from reports.comparison_charts import BASELINE, charts, size_label
from reports.page import Page, charts_html, md_section, md_titles


@dataclass(frozen=True)
class CompareReport:
    html: Path
    markdown: Path
    charts: list[str]


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _err(error: str | None) -> str:
    return f"error: {error}" if error else ""


def markdown(doc: Comparison) -> str:
    names = doc.names
    md = [f"# kafkatune comparison: {doc.name}", ""]
    md.append(f"Systems: {', '.join(names)}. Started {doc.started}, finished {doc.finished or '(running)'}.")
    md.append("")
    md += _native_md(doc)
    if doc.throughput:
        md += _throughput_md(doc, names)
    if doc.pingpong:
        md += _pingpong_md(doc)
    if doc.fixed_rate:
        md += _fixed_md(doc)
    if doc.iot_periodic or doc.iot_sporadic:
        md += _iot_md(doc)
    return "\n".join(md) + "\n"


def _native_md(doc: Comparison) -> list[str]:
    md = ["## Floors and harness ceiling", ""]
    ip, sp = doc.native.iperf3, doc.native.sockperf
    if ip:
        md.append(
            "- iperf3 TCP stream on 127.0.0.1: "
            + (f"**{ip.bit_s / 1e9:.2f} Gbit/s**" if ip.bit_s is not None else f"error: {ip.error}")
        )
    if sp:
        md.append(
            f"- sockperf TCP ping-pong {sp.size or ''} B, RTT/2: "
            + (
                f"median **{sp.p50_us:.1f} µs**, p99 {_num(sp.p99_us, '{:.1f}')} µs"
                if sp.p50_us is not None
                else f"error: {sp.error}"
            )
        )
    base = [r for r in doc.throughput if r.system == BASELINE and r.msg_s and r.bit_s]
    if base:
        top = max(base, key=lambda r: r.bit_s or 0.0)
        bit_s = top.bit_s or 0.0
        md.append(
            f"- the harness over raw TCP (same workers, recorder and records as every system): up to "
            f"{top.msg_s:,.0f} msg/s, {bit_s / 1e9:.2f} Gbit/s at {size_label(top.size)}"
            + (f" = {bit_s / ip.bit_s:.0%} of iperf3" if ip and ip.bit_s else "")
        )
    md.append("")
    return md


def _throughput_md(doc: Comparison, names: list[str]) -> list[str]:
    how = doc.throughput_method
    lo, hi = how.trim
    md = [
        "## Throughput (back-to-back)",
        "",
        f"Median delivered msg/s over every measured second of {how.repeats} repeats "
        f"({how.seconds} s each), after trimming samples beyond p{lo:g}/p{hi:g}; bit/s = msg/s × payload × 8. "
        f"`tcp` is the raw-socket baseline through the same harness (its ceiling); '× tcp' is each figure "
        f"as a share of it.",
        "",
    ]
    by = {(r.system, r.size): r for r in doc.throughput}
    sizes = sorted({r.size for r in doc.throughput})
    md.append("| payload | " + " | ".join(f"{n} msg/s | {n} Mbit/s" for n in names) + " |")
    md.append("|---|" + "---|---|" * len(names))
    for size in sizes:
        cells = []
        tcp = by.get((BASELINE, size))
        base = tcp.msg_s if tcp else None
        for n in names:
            r = by.get((n, size))
            if r is None:
                cells += ["—", "—"]
            elif r.error:
                cells += [f"error: {r.error[:80]}", "—"]
            else:
                share = f" ({r.msg_s / base:.0%} × tcp)" if base and n != BASELINE and r.msg_s else ""
                lost = f" lost {r.lost}" if r.lost else ""
                cells += [f"{_num(r.msg_s)}{share}{lost}", _num(r.bit_s / 1e6 if r.bit_s else None, "{:,.1f}")]
        md.append(f"| {size_label(size)} | " + " | ".join(cells) + " |")
    errs = [r for r in doc.throughput if r.error]
    if errs:
        md += ["", "Sizes a system could not carry (the error as the run reported it):", ""]
        md += [f"- {r.system} {size_label(r.size)}: {r.error}" for r in errs]
    md.append("")
    return md


def _latency_cells(r: LatencyRow) -> str:
    f = "{:,.1f}"
    return " | ".join(_num(v, f) for v in (r.p50_us, r.p90_us, r.p99_us, r.p999_us))


def _pingpong_md(doc: Comparison) -> list[str]:
    md = [
        "## Ping-pong latency (RTT/2)",
        "",
        "| system | round trips | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc.pingpong:
        note = _err(r.error) or (f"{r.missing_replies} replies missing" if r.missing_replies else "")
        md.append(f"| {r.system} | {r.round_trips or 0} | {_latency_cells(r)} | {_num(r.max_us, '{:,.1f}')} | {note} |")
    sp = doc.native.sockperf
    if sp and sp.p50_us is not None:
        md.append(f"| sockperf (native TCP) | — | {_latency_cells(sp)} | — | floor |")
    md.append("")
    return md


def _fixed_md(doc: Comparison) -> list[str]:
    rows = doc.fixed_rate
    r0 = rows[0]
    md = [
        "## Fixed rate (OpenMessaging Benchmark method)",
        "",
        f"{r0.target_msg_s:,.0f} msg/s of {r0.size} B; partitions where the system has them.",
        "",
        "| system | partitions | published msg/s | sustained | publish p50 / p99 / p99.9 / max ms | "
        "end-to-end p50 / p99 / p99.9 / max ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error:
            md.append(f"| {r.system} | {r.partitions or 'n/a'} | error: {r.error[:100]} | | | |")
            continue
        pub = " / ".join(
            _num(v, "{:.2f}") for v in (r.publish_p50_ms, r.publish_p99_ms, r.publish_p999_ms, r.publish_max_ms)
        )
        e2e = " / ".join(_num(v, "{:.2f}") for v in (r.e2e_p50_ms, r.e2e_p99_ms, r.e2e_p999_ms, r.e2e_max_ms))
        md.append(
            f"| {r.system} | {r.partitions or 'n/a'} | {_num(r.publish_msg_s)} | "
            f"{'yes' if r.sustained else 'no'} | {pub} | {e2e} |"
        )
    md.append("")
    return md


def _iot_md(doc: Comparison) -> list[str]:
    md = ["## IoT patterns", ""]
    if doc.iot_periodic:
        md += [
            "Periodic: a fixed rate, end-to-end latency percentiles.",
            "",
            "| system | rate msg/s | delivered msg/s | p50 ms | p90 ms | p99 ms | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in doc.iot_periodic:
            f = "{:.2f}"
            md.append(
                f"| {r.system} | {r.rate:g} | {_num(r.delivered_msg_s)} | {_num(r.e2e_p50_ms, f)} | "
                f"{_num(r.e2e_p90_ms, f)} | {_num(r.e2e_p99_ms, f)} | {_err(r.error)} |"
            )
        md.append("")
    if doc.iot_sporadic:
        md += [
            "Sporadic: a burst of large messages starts while the periodic flow runs; the periodic flow's "
            "per-second p90, median over the seconds before, during and after the burst.",
            "",
            "| system | burst MB/s | p90 before ms | p90 during ms | p90 after ms | lost | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in doc.iot_sporadic:
            f = "{:.2f}"
            md.append(
                f"| {s.system} | {_num(s.burst_mb_s, f)} | {_num(s.periodic_p90_before_ms, f)} | "
                f"{_num(s.periodic_p90_during_ms, f)} | {_num(s.periodic_p90_after_ms, f)} | "
                f"{(s.periodic_lost or 0) + (s.burst_lost or 0)} | {_err(s.error)} |"
            )
        md.append("")
    return md


def build(run_dir: Path, out_dir: Path | None = None) -> CompareReport:
    doc = read_comparison(run_dir)
    out = out_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(doc)
    chs = charts(doc)
    blocks = [("Charts", charts_html(chs)), *[(t, md_section(md, t)) for t in md_titles(md)]]
    page = Page(f"kafkatune comparison: {doc.name}", md, [f"Systems: {', '.join(doc.names)}."], blocks)
    html_path, md_path = page.write(out)
    return CompareReport(html_path, md_path, [c.key for c in chs])
