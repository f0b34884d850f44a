"""The comparison report: report.md and one self-contained report.html (inline SVG, log scales).

Built from comparison.json alone, with the charts machinery of the study reports (reports.charts):
throughput (msg/s and bit/s against payload size, the raw-TCP harness ceiling and the iperf3 floor
drawn on the same axes), ping-pong RTT/2 percentiles with sockperf's floor, OMB fixed-rate latency,
and the IoT periodic and sporadic results. Every table puts the harness's ceiling beside each figure.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.ticker

from core import files
from records.comparison import read_comparison
from reports.build import CSS, _md_section_html
from reports.charts import COLORS, Chart, _si, _svg, plt

BASELINE = "tcp"


@dataclass(frozen=True)
class CompareReport:
    html: Path
    markdown: Path
    charts: list[str]


def _systems(doc: dict[str, Any]) -> list[str]:
    return [s["name"] for s in doc["systems"]]


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _err(r: dict[str, Any]) -> str:
    return f"error: {r['error']}" if r.get("error") else ""


def _size(b: int) -> str:
    return _si(float(b)) + "B"


def _color(i: int, name: str) -> str:
    return "#444444" if name == BASELINE else COLORS[i % len(COLORS)]


# ---- charts -----------------------------------------------------------------------------------------
def _throughput_chart(doc: dict[str, Any], key: str, field: str, ylabel: str) -> Chart | None:
    rows = [r for r in doc["throughput"] if r.get(field) is not None and not r.get("error")]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, name in enumerate(_systems(doc)):
        pts = sorted((r["size"], r[field]) for r in rows if r["system"] == name)
        if pts:
            ax.plot(
                *zip(*pts, strict=True),
                marker="o",
                ms=3,
                label=name,
                color=_color(i, name),
                ls="--" if name == BASELINE else "-",
            )
    iperf = doc.get("native", {}).get("iperf3", {}).get("bit_s")
    if field == "bit_s" and iperf:
        ax.axhline(iperf, color="#999999", ls=":", label=f"iperf3 floor {iperf / 1e9:.1f} Gbit/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_si))
    ax.set_xlabel("payload (bytes)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, ncol=2)
    best = max(rows, key=lambda r: r[field])
    unit = "msg/s" if field == "msg_s" else "bit/s"
    takeaway = f"highest: {best['system']} at {_size(best['size'])}, {best[field]:,.3g} {unit}"
    base = {r["size"]: r[field] for r in rows if r["system"] == BASELINE}
    if base and field == "msg_s":
        ratios = [(r[field] / base[r["size"]], r) for r in rows if r["system"] != BASELINE and base.get(r["size"])]
        if ratios:
            top = max(ratios, key=lambda x: x[0])
            takeaway += (
                f"; closest to the harness ceiling (raw TCP): {top[1]['system']} at {_size(top[1]['size'])}, "
                f"{top[0]:.0%} of it"
            )
    return Chart(key, f"Back-to-back throughput ({unit}) against payload size", _svg(fig, key), takeaway)


def _pingpong_chart(doc: dict[str, Any]) -> Chart | None:
    rows = [r for r in doc["pingpong"] if r.get("p50_us") is not None]
    sp = doc.get("native", {}).get("sockperf", {})
    if sp.get("p50_us") is not None:
        rows = [*rows, {"system": "sockperf (native)", **sp}]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    pcts = ("p50_us", "p90_us", "p99_us")
    w = 0.8 / len(pcts)
    for j, p in enumerate(pcts):
        ax.bar([i + j * w for i in range(len(rows))], [r.get(p) or 0 for r in rows], w, label=p[:-3], color=COLORS[j])
    ax.set_xticks([i + w for i in range(len(rows))], [r["system"] for r in rows], rotation=20, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("RTT/2 (µs)")
    ax.legend(fontsize=7)
    best = min((r for r in rows if not r["system"].startswith("sockperf")), key=lambda r: r["p50_us"], default=None)
    take = f"lowest median through the harness: {best['system']} {best['p50_us']:.0f} µs" if best else ""
    if sp.get("p50_us") is not None:
        take += f"; sockperf's native TCP floor: {sp['p50_us']:.0f} µs"
    return Chart("pingpong", f"Ping-pong latency, {rows[0].get('size', 64)} B (RTT/2)", _svg(fig, "pingpong"), take)


def _fixed_chart(doc: dict[str, Any]) -> Chart | None:
    rows = [r for r in doc["fixed_rate"] if not r.get("error")]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    labels = [f"{r['system']} p={r['partitions'] or 'n/a'}" for r in rows]
    for j, k in enumerate(("e2e_p50_ms", "e2e_p99_ms", "e2e_p99.9_ms")):
        ax.bar(
            [i + j * 0.27 for i in range(len(rows))],
            [max(r[k], 1e-3) for r in rows],
            0.27,
            label=k[4:-3],
            color=COLORS[j],
        )
    ax.set_xticks([i + 0.27 for i in range(len(rows))], labels, rotation=25, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.legend(fontsize=7)
    worst = max(rows, key=lambda r: r["e2e_p99_ms"])
    unsustained = [lab for lab, r in zip(labels, rows, strict=True) if not r["sustained"]]
    take = f"highest p99: {worst['system']} ({worst['e2e_p99_ms']:.2f} ms)"
    take += f"; rate not sustained: {', '.join(unsustained)}" if unsustained else "; every run sustained the rate"
    rate = rows[0]["target_msg_s"]
    return Chart("fixed-rate", f"Fixed rate {rate:,.0f} msg/s × {rows[0]['size']} B", _svg(fig, "fixed-rate"), take)


def _periodic_chart(doc: dict[str, Any]) -> Chart | None:
    rows = [r for r in doc["iot_periodic"] if r.get("e2e_p90_ms") is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for i, name in enumerate(_systems(doc)):
        pts = sorted((r["rate"], r["e2e_p90_ms"]) for r in rows if r["system"] == name)
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", ms=3, label=name, color=_color(i, name))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("periodic rate (msg/s)")
    ax.set_ylabel("end-to-end p90 (ms)")
    ax.legend(fontsize=7, ncol=2)
    top = max(r["rate"] for r in rows)
    at_top = sorted((r["e2e_p90_ms"], r["system"]) for r in rows if r["rate"] == top)
    take = f"at {top:g} msg/s the lowest p90 is {at_top[0][1]} ({at_top[0][0]:.2f} ms)"
    return Chart("iot-periodic", "IoT periodic flows: p90 latency against rate", _svg(fig, "iot-periodic"), take)


def _sporadic_chart(doc: dict[str, Any]) -> Chart | None:
    rows = [r for r in doc["iot_sporadic"] if r.get("periodic_p90_before_ms") is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for j, (k, lab) in enumerate((("periodic_p90_before_ms", "before"), ("periodic_p90_during_ms", "during burst"))):
        ax.bar(
            [i + j * 0.4 for i in range(len(rows))],
            [max(r.get(k) or 1e-3, 1e-3) for r in rows],
            0.4,
            label=lab,
            color=COLORS[j],
        )
    ax.set_xticks([i + 0.2 for i in range(len(rows))], [r["system"] for r in rows], rotation=20, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("periodic flow p90 (ms)")
    ax.legend(fontsize=7)
    hits = [
        (r["periodic_p90_during_ms"] / r["periodic_p90_before_ms"], r["system"])
        for r in rows
        if r.get("periodic_p90_during_ms") and r["periodic_p90_before_ms"]
    ]
    take = f"largest slowdown of the periodic flow: {max(hits)[1]} ×{max(hits)[0]:.1f}" if hits else ""
    return Chart("iot-sporadic", "IoT sporadic burst beside a periodic flow", _svg(fig, "iot-sporadic"), take)


# ---- markdown ------------------------------------------------------------------------------------------
def markdown(doc: dict[str, Any]) -> str:
    names = _systems(doc)
    md = [f"# kafkatune comparison: {doc['name']}", ""]
    md.append(f"Systems: {', '.join(names)}. Started {doc['started']}, finished {doc.get('finished', '(running)')}.")
    md.append("")
    md += _native_md(doc)
    if doc["throughput"]:
        md += _throughput_md(doc, names)
    if doc["pingpong"]:
        md += _pingpong_md(doc)
    if doc["fixed_rate"]:
        md += _fixed_md(doc)
    if doc["iot_periodic"] or doc["iot_sporadic"]:
        md += _iot_md(doc)
    return "\n".join(md) + "\n"


def _native_md(doc: dict[str, Any]) -> list[str]:
    n = doc.get("native") or {}
    md = ["## Floors and harness ceiling", ""]
    ip, sp = n.get("iperf3", {}), n.get("sockperf", {})
    if ip:
        md.append(
            "- iperf3 TCP stream on 127.0.0.1: "
            + (f"**{ip['bit_s'] / 1e9:.2f} Gbit/s**" if "bit_s" in ip else f"error: {ip.get('error')}")
        )
    if sp:
        md.append(
            f"- sockperf TCP ping-pong {sp.get('size', '')} B, RTT/2: "
            + (
                f"median **{sp['p50_us']:.1f} µs**, p99 {_num(sp.get('p99_us'), '{:.1f}')} µs"
                if "p50_us" in sp
                else f"error: {sp.get('error')}"
            )
        )
    base = [r for r in doc["throughput"] if r["system"] == BASELINE and r.get("msg_s")]
    if base:
        top = max(base, key=lambda r: r["bit_s"])
        md.append(
            f"- the harness over raw TCP (same workers, recorder and records as every system): up to "
            f"{top['msg_s']:,.0f} msg/s, {top['bit_s'] / 1e9:.2f} Gbit/s at {_size(top['size'])}"
            + (f" = {top['bit_s'] / ip['bit_s']:.0%} of iperf3" if ip.get("bit_s") else "")
        )
    md.append("")
    return md


def _throughput_md(doc: dict[str, Any], names: list[str]) -> list[str]:
    spec = doc["spec"].get("throughput") or {}
    lo, hi = spec.get("trim", [1, 99])
    md = [
        "## Throughput (back-to-back)",
        "",
        f"Median delivered msg/s over every measured second of {spec.get('repeats')} repeats "
        f"({spec.get('seconds')} s each), after trimming samples beyond p{lo:g}/p{hi:g}; bit/s = msg/s × payload × 8. "
        f"`tcp` is the raw-socket baseline through the same harness (its ceiling); '× tcp' is each figure "
        f"as a share of it.",
        "",
    ]
    by = {(r["system"], r["size"]): r for r in doc["throughput"]}
    sizes = sorted({r["size"] for r in doc["throughput"]})
    md.append("| payload | " + " | ".join(f"{n} msg/s | {n} Mbit/s" for n in names) + " |")
    md.append("|---|" + "---|---|" * len(names))
    for size in sizes:
        cells = []
        base = by.get((BASELINE, size), {}).get("msg_s")
        for n in names:
            r = by.get((n, size))
            if r is None:
                cells += ["—", "—"]
            elif r.get("error"):
                cells += [f"error: {r['error'][:80]}", "—"]
            else:
                share = f" ({r['msg_s'] / base:.0%} × tcp)" if base and n != BASELINE and r["msg_s"] else ""
                lost = f" lost {r['lost']}" if r.get("lost") else ""
                cells += [f"{_num(r['msg_s'])}{share}{lost}", _num(r["bit_s"] / 1e6 if r["bit_s"] else None, "{:,.1f}")]
        md.append(f"| {_size(size)} | " + " | ".join(cells) + " |")
    errs = [r for r in doc["throughput"] if r.get("error")]
    if errs:
        md += ["", "Sizes a system could not carry (the error as the run reported it):", ""]
        md += [f"- {r['system']} {_size(r['size'])}: {r['error']}" for r in errs]
    md.append("")
    return md


def _pingpong_md(doc: dict[str, Any]) -> list[str]:
    md = [
        "## Ping-pong latency (RTT/2)",
        "",
        "| system | round trips | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["pingpong"]:
        f = "{:,.1f}"
        note = (
            f"error: {r['error']}"
            if r.get("error")
            else (f"{r['missing_replies']} replies missing" if r.get("missing_replies") else "")
        )
        md.append(
            f"| {r['system']} | {r.get('round_trips', 0)} | {_num(r.get('p50_us'), f)} | {_num(r.get('p90_us'), f)} | "
            f"{_num(r.get('p99_us'), f)} | {_num(r.get('p99.9_us'), f)} | {_num(r.get('max_us'), f)} | {note} |"
        )
    sp = (doc.get("native") or {}).get("sockperf", {})
    if sp.get("p50_us") is not None:
        f = "{:,.1f}"
        md.append(
            f"| sockperf (native TCP) | — | {_num(sp.get('p50_us'), f)} | {_num(sp.get('p90_us'), f)} | "
            f"{_num(sp.get('p99_us'), f)} | {_num(sp.get('p99.9_us'), f)} | — | floor |"
        )
    md.append("")
    return md


def _fixed_md(doc: dict[str, Any]) -> list[str]:
    rows = doc["fixed_rate"]
    r0 = rows[0]
    md = [
        "## Fixed rate (OpenMessaging Benchmark method)",
        "",
        f"{r0['target_msg_s']:,.0f} msg/s of {r0['size']} B; partitions where the system has them.",
        "",
        "| system | partitions | published msg/s | sustained | publish p50 / p99 / p99.9 / max ms | "
        "end-to-end p50 / p99 / p99.9 / max ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("error"):
            md.append(f"| {r['system']} | {r['partitions'] or 'n/a'} | error: {r['error'][:100]} | | | |")
            continue
        pub = " / ".join(f"{r[f'publish_{k}_ms']:.2f}" for k in ("p50", "p99", "p99.9", "max"))
        e2e = " / ".join(f"{r[f'e2e_{k}_ms']:.2f}" for k in ("p50", "p99", "p99.9", "max"))
        md.append(
            f"| {r['system']} | {r['partitions'] or 'n/a'} | {r['publish_msg_s']:,.0f} | "
            f"{'yes' if r['sustained'] else 'no'} | {pub} | {e2e} |"
        )
    md.append("")
    return md


def _iot_md(doc: dict[str, Any]) -> list[str]:
    md = ["## IoT patterns", ""]
    if doc["iot_periodic"]:
        md += [
            "Periodic: a fixed rate, end-to-end latency percentiles.",
            "",
            "| system | rate msg/s | delivered msg/s | p50 ms | p90 ms | p99 ms | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in doc["iot_periodic"]:
            f = "{:.2f}"
            md.append(
                f"| {r['system']} | {r['rate']:g} | {_num(r.get('delivered_msg_s'))} | "
                f"{_num(r.get('e2e_p50_ms'), f)} | "
                f"{_num(r.get('e2e_p90_ms'), f)} | {_num(r.get('e2e_p99_ms'), f)} | {_err(r)} |"
            )
        md.append("")
    if doc["iot_sporadic"]:
        md += [
            "Sporadic: a burst of large messages starts while the periodic flow runs; the periodic flow's "
            "per-second p90, median over the seconds before, during and after the burst.",
            "",
            "| system | burst MB/s | p90 before ms | p90 during ms | p90 after ms | lost | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in doc["iot_sporadic"]:
            f = "{:.2f}"
            md.append(
                f"| {r['system']} | {_num(r.get('burst_mb_s'), f)} | {_num(r.get('periodic_p90_before_ms'), f)} | "
                f"{_num(r.get('periodic_p90_during_ms'), f)} | {_num(r.get('periodic_p90_after_ms'), f)} | "
                f"{(r.get('periodic_lost') or 0) + (r.get('burst_lost') or 0)} | {_err(r)} |"
            )
        md.append("")
    return md


# ---- the files ----------------------------------------------------------------------------------------------
def charts(doc: dict[str, Any]) -> list[Chart]:
    out = [
        _throughput_chart(doc, "throughput-msgs", "msg_s", "delivered msg/s"),
        _throughput_chart(doc, "throughput-bits", "bit_s", "delivered bit/s"),
        _pingpong_chart(doc),
        _fixed_chart(doc),
        _periodic_chart(doc),
        _sporadic_chart(doc),
    ]
    return [c for c in out if c is not None]


def build(run_dir: Path, out_dir: Path | None = None) -> CompareReport:
    doc = read_comparison(run_dir)
    out = out_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(doc)
    chs = charts(doc)
    e = html.escape
    H = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kafkatune comparison: {e(doc['name'])}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{CSS}</style></head><body>",
        f"<h1>kafkatune comparison: {e(doc['name'])}</h1>",
        f"<p>Systems: {e(', '.join(_systems(doc)))}.</p>",
        "<h2>Charts</h2>",
    ]
    for ch in chs:
        H.append(
            f'<figure class="chart" id="chart-{ch.key}" data-chart="{ch.key}">{ch.svg}'
            f"<figcaption><b>{e(ch.title)}</b>{e(ch.takeaway)}</figcaption></figure>"
        )
    for line in md.splitlines():
        if line.startswith("## "):
            title = line[3:]
            H.append(f"<h2>{e(title)}</h2>")
            H.append(_md_section_html(md, title))
    H.append("</body></html>")
    html_path, md_path = out / "report.html", out / "report.md"
    files.write_bytes(md_path, md.encode(), mode=0o644)
    files.write_bytes(html_path, "\n".join(H).encode(), mode=0o644)
    return CompareReport(html_path, md_path, [c.key for c in chs])
