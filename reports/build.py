"""`kafkatune report`: a study and its analysis → report.html, report.md and recommended/*.properties.

Everything shown comes from the study's files and the analysis tables; the report computes no figure the
analysis or the advisor did not (it only picks, formats and plots them).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor import diagnose
from advisor import plan as planner
from advisor.recommend import Recommendation, best_trial, defaults_trial, recommend, rule_params
from core import secrets
from core.files import write_bytes
from records.analysis import analysis_dir, load_table, read_summary
from records.study import Study, latency_quantiles, open_study, read_spec, secret_bearing_documents
from reports import charts, properties


@dataclass(frozen=True)
class Report:
    dir: Path
    html: Path
    markdown: Path
    files: list[Path]
    charts: list[str]


def _swept_keys(study: Study, params: list[dict[str, Any]]) -> set[str]:
    spec = read_spec(study.root)
    keys = set(spec.get("params") or {})
    for s in spec.get("stages") or []:
        keys |= set((s or {}).get("params") or {})
    return keys | {p["param"] for p in params}


def _durability(trials: list[dict[str, Any]]) -> list[str]:
    """What relaxing acks or forcing flushes bought and cost, when the study varied them."""
    done = [t for t in trials if t["state"] == "complete" and t["mb_s"]]

    def acks(t: dict[str, Any]) -> str:
        return str(t["params"].get("acks", "all")).replace("-1", "all")

    def flushed(t: dict[str, Any]) -> bool:
        e = diagnose.flush_every(t["params"])
        ms = t["params"].get("log.flush.interval.ms")
        return (e is not None and e <= diagnose.FSYNC_EVERY) or (ms not in (None, "None", "") and float(ms) <= 1000)

    lines = []
    strict = [t for t in done if acks(t) == "all"]
    for a in ("1", "0"):
        loose = [t for t in done if acks(t) == a]
        if loose and strict:
            bl, bs = max(loose, key=lambda t: t["mb_s"]), max(strict, key=lambda t: t["mb_s"])
            lines.append(
                f"acks={a}: best {bl['mb_s']:.2f} MB/s ({bl['trial_id']}) vs acks=all {bs['mb_s']:.2f} MB/s "
                f"({bs['trial_id']}): {bl['mb_s'] - bs['mb_s']:+.2f} MB/s. Given up: "
                + (
                    "every acknowledgement (a record can be lost without the producer knowing)"
                    if a == "0"
                    else "the followers' copy before the ack (a leader failure can lose acknowledged records)"
                )
                + "; min.insync.replicas=2 no longer protects acknowledged writes."
            )
    f = [t for t in done if flushed(t)]
    nf = [t for t in done if not flushed(t)]
    if f and nf:
        bf, bn = max(f, key=lambda t: t["mb_s"]), max(nf, key=lambda t: t["mb_s"])
        lines.append(
            f"forced flushes: best {bf['mb_s']:.2f} MB/s ({bf['trial_id']}) vs {bn['mb_s']:.2f} MB/s without "
            f"({bn['trial_id']}). Without them durability rests on replication: an acknowledged record is on "
            "min.insync.replicas=2 brokers' page caches, and is lost only if all of them fail before writeback."
        )
    return lines


def _plans(trials: list[dict[str, Any]], study: Study, best: dict[str, Any] | None) -> list[planner.Plan]:
    if not best or not study.profile or not (study.profile.get("network") or {}).get("nic_mb_s_measured"):
        return []
    safe = best["mb_s"] * 0.7
    out = []
    for mult in (1, 2, 10):
        try:
            out.append(planner.plan(safe * mult, rf=study.rf, trials=trials, profile=study.profile))
        except Exception:
            continue
    return out


def build(run_dir: Path, out_dir: Path | None = None) -> Report:
    study = open_study(run_dir)
    an = analysis_dir(study.root)
    trials = load_table(an, "trials")
    params = load_table(an, "params")
    imp = load_table(an, "importance")
    front = load_table(an, "pareto")
    series = load_table(an, "series")
    asum = read_summary(an)
    ctx = {"brokers": len((study.profile or {}).get("brokers") or []) or 3, "rf": study.rf}
    recs = recommend(trials, params, ctx)
    best = best_trial(trials)
    base = defaults_trial(trials)
    ceiling = next((t["ceiling_mb_s"] for t in trials if t.get("ceiling_mb_s")), None)

    chart_list = [
        charts.history(trials, ceiling),
        *charts.param_effects(params, trials),
        charts.rates_vs_ceiling(base, best, ceiling, study.rf),
        charts.latency_curves(
            {
                label: q
                for label, t in (("Kafka defaults", base), ("best", best))
                if t and (q := latency_quantiles(study, t["trial_id"]))
            }
        ),
        charts.pareto(trials, front, study.objectives),
        charts.importance(imp),
        charts.stability(series, best),
    ]
    shown = [c for c in chart_list if c is not None]

    # recommended settings
    effects = {}
    for r in rule_params([t for t in trials if t["state"] == "complete" and t["mb_s"]], params, ctx):
        ((k, v),) = r.action.items()
        if best and str(best["params"].get(k)) == str(v) and r.expected_gain_mb_s is not None:
            effects[k] = (r.expected_gain_mb_s, r.evidence[0].split(":")[0] + " vs the worst value in its stage")
    whole = best["mb_s"] - base["mb_s"] if best and base else None
    changes = (
        properties.changes(best, base["params"] if base else {}, _swept_keys(study, params), effects, whole)
        if best
        else []
    )
    header = f"kafkatune recommendation for study {study.name}, from trial {best['trial_id'] if best else '-'}"
    files = properties.render(changes, header)
    plans = _plans(trials, study, best)
    durability = _durability(trials)

    out = (out_dir or study.root / "report").resolve()
    (out / "recommended").mkdir(parents=True, exist_ok=True)
    hidden = secrets.secret_values(secret_bearing_documents(study))
    written = []
    for name, text in files.items():
        p = out / "recommended" / name
        write_bytes(p, secrets.redact_text(text, hidden).encode(), mode=0o644)
        written.append(p)
    ctx_doc = {
        "study": study,
        "trials": trials,
        "best": best,
        "base": base,
        "ceiling": ceiling,
        "recs": recs,
        "charts": shown,
        "changes": changes,
        "plans": plans,
        "durability": durability,
        "analysis": asum,
        "files": files,
    }
    md = secrets.redact_text(markdown(ctx_doc), hidden)
    page = secrets.redact_text(html_page(ctx_doc), hidden)
    write_bytes(out / "report.md", md.encode(), mode=0o644)
    write_bytes(out / "report.html", page.encode(), mode=0o644)
    written += [out / "report.md", out / "report.html"]
    return Report(out, out / "report.html", out / "report.md", written, [c.key for c in shown])


# ---- text ----------------------------------------------------------------------------------------


def _f(v: Any, fmt: str = "{:.2f}") -> str:
    return "–" if v is None else fmt.format(v)


def _headline(c: dict[str, Any]) -> list[str]:
    best, base, ceiling = c["best"], c["base"], c["ceiling"]
    lines = []
    if best:
        s = f"Best: **{best['mb_s']:.2f} MB/s** ({best['trial_id']})"
        if ceiling:
            s += f", {best['mb_s'] / ceiling:.0%} of the {ceiling:.2f} MB/s ceiling"
        if base:
            s += f", {best['mb_s'] / base['mb_s']:.2f}× Kafka's defaults ({base['mb_s']:.2f} MB/s, {base['trial_id']})"
        lines.append(s + ".")
        lines.append(f"Bound by **{best.get('bound')}**: {best.get('bound_reason')}.")
    if c["study"].synthetic:
        lines.append("**This study is synthetic (generated), not a measurement.**")
    return lines


def _rec_md(r: Recommendation, i: int) -> list[str]:
    gain = f" (expected +{r.expected_gain_mb_s:.2f} MB/s)" if r.expected_gain_mb_s and r.expected_gain_mb_s > 0 else ""
    lines = [f"{i}. **[{r.severity}] {r.title}**{gain}"]
    if r.action:
        lines.append("   - set: " + ", ".join(f"`{k}={v}`" for k, v in r.action.items()))
    lines += [f"   - {e}" for e in r.evidence]
    return lines


def markdown(c: dict[str, Any]) -> str:
    st: Study = c["study"]
    L = [f"# kafkatune report: {st.name}", "", *_headline(c), ""]
    L += ["## Recommendations", ""]
    for i, r in enumerate(c["recs"], 1):
        L += _rec_md(r, i)
    L += ["", "## What the charts show", ""]
    L += [f"- **{ch.title}**: {ch.takeaway}" for ch in c["charts"]]
    L += ["", "## Recommended settings", ""]
    if c["changes"]:
        L += ["| file | key | old | new | measured gain | trial |", "|---|---|---|---|---|---|"]
        for ch in c["changes"]:
            gain = f"+{ch.gain_mb_s:.2f} MB/s" if ch.gain_mb_s is not None else ch.gain_note
            L.append(f"| {properties.FILES[ch.scope]} | `{ch.key}` | {ch.old} | {ch.new} | {gain} | {ch.trial} |")
    else:
        L.append("The study changed no swept key from Kafka's defaults.")
    L += [
        "",
        "Files: `recommended/producer.properties`, `consumer.properties`, `server.properties`, `topic-configs.txt`.",
        "",
    ]
    L += ["## Capacity plan", ""]
    if c["plans"]:
        L += [
            "| target MB/s | brokers | partitions | producers | consumers | NIC/broker MB/s | disk/broker MB/s |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in c["plans"]:
            L.append(
                f"| {p.target_mb_s:.1f} | {p.brokers} | {p.partitions} | {p.producers} | {p.consumers} | "
                f"{p.nic_mb_s_needed:.1f} | {p.disk_mb_s_needed:.1f} |"
            )
        L.append("")
        L.append(
            f"Targets: 70 % of the best measured rate, then 2× and 10× that; efficiency {c['plans'][0].efficiency:.0%} "
            f"(measured), headroom {c['plans'][0].headroom:.0%}."
        )
        L += [f"- assumption: {a}" for a in c["plans"][0].assumptions]
    else:
        L.append(
            "No network ceiling is known for this study's cluster (unshaped testbed): `kafkatune plan --nic-mbps …`."
        )
    L += ["", "## Durability trade-off", ""]
    L += [f"- {d}" for d in c["durability"]] or [
        "The study kept acks=all and Kafka's flush defaults: nothing was traded."
    ]
    L += [
        "",
        "## Trials",
        "",
        "| trial | stage | MB/s | % ceiling | produce | replicate | consume | p99 e2e ms | bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in c["trials"]:
        L.append(
            f"| {t['trial_id']} | {t['stage']} | {_f(t['mb_s'])} | {_f(t['fraction_of_ceiling'], '{:.0%}')} | "
            f"{_f(t['produce_mb_s'])} | {_f(t['replicate_mb_s'])} | {_f(t['consume_mb_s'])} | "
            f"{_f(t['e2e_p99_ms'], '{:,.1f}')} | "
            f"{t['bound']} |"
        )
    a = c["analysis"]
    L += [
        "",
        f"Analysis: {a.get('trials')} trials, {a.get('samples', 0):,} per-second samples, "
        f"Spark {a.get('spark_version')} "
        f"({a.get('master')}). Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by kafkatune.",
        "",
    ]
    return "\n".join(L)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
figure.chart{margin:1.2em 0;padding:.6em;border:1px solid #e4e4e4;border-radius:6px;display:inline-block;
vertical-align:top}
figure.chart svg.plot{max-width:100%;height:auto}
figcaption{font-size:.95em;max-width:60em}figcaption b{display:block}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .5em;text-align:right}
td:first-child,th:first-child{text-align:left}.sev-high{color:#b00020}.sev-medium{color:#a65e00}.sev-info{color:#555}
code,pre{background:#f6f6f6;border-radius:3px}pre{padding:.6em;overflow:auto}.note{background:#fff8e1;padding:.5em}
"""


def _md_inline(s: str) -> str:
    s = html.escape(s)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def html_page(c: dict[str, Any]) -> str:
    st: Study = c["study"]
    e = html.escape
    H = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kafkatune report: {e(st.name)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{CSS}</style></head><body>",
        f"<h1>kafkatune report: {e(st.name)}</h1>",
    ]
    H += [f"<p>{_md_inline(line)}</p>" for line in _headline(c)]
    H.append("<h2>Recommendations</h2><ol>")
    for r in c["recs"]:
        gain = (
            f" (expected +{r.expected_gain_mb_s:.2f} MB/s)" if r.expected_gain_mb_s and r.expected_gain_mb_s > 0 else ""
        )
        items = "".join(f"<li>{e(x)}</li>" for x in r.evidence)
        act = (
            ("<p>set: " + ", ".join(f"<code>{e(k)}={e(v)}</code>" for k, v in r.action.items()) + "</p>")
            if r.action
            else ""
        )
        H.append(
            f'<li class="rec sev-{r.severity}"><b>[{r.severity}] {e(r.title)}</b>{e(gain)}{act}<ul>{items}</ul></li>'
        )
    H.append("</ol><h2>Charts</h2>")
    for ch in c["charts"]:
        H.append(
            f'<figure class="chart" id="chart-{ch.key}" data-chart="{ch.key}">{ch.svg}'
            f"<figcaption><b>{e(ch.title)}</b>{e(ch.takeaway)}</figcaption></figure>"
        )
    H.append("<h2>Recommended settings</h2>")
    for name, text in c["files"].items():
        H.append(f"<h3>recommended/{e(name)}</h3><pre>{e(text)}</pre>")
    md = markdown(c)
    for title in ("Capacity plan", "Durability trade-off", "Trials"):
        H.append(f"<h2>{title}</h2>")
        H.append(_md_section_html(md, title))
    H.append("</body></html>")
    return "\n".join(H)


def _md_section_html(md: str, title: str) -> str:
    """The markdown section `title` as HTML (tables, bullets and paragraphs only)."""
    part = md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    out: list[str] = []
    rows: list[str] = []

    def flush() -> None:
        if rows:
            head, *body = [[c.strip() for c in r.strip("|").split("|")] for r in rows if not set(r) <= set("|-")]
            out.append(
                "<table><tr>"
                + "".join(f"<th>{_md_inline(x)}</th>" for x in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{_md_inline(x)}</td>" for x in r) + "</tr>" for r in body)
                + "</table>"
            )
            rows.clear()

    for line in part:
        if line.startswith("|"):
            rows.append(line)
            continue
        flush()
        if line.startswith("- "):
            out.append(f"<p>• {_md_inline(line[2:])}</p>")
        elif line.strip():
            out.append(f"<p>{_md_inline(line)}</p>")
    flush()
    return "\n".join(out)
