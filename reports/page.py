"""The one page builder of every kafkatune report: report.md and one self-contained report.html.

A report is written once as Markdown; the HTML page shows its title, a few intro lines, its charts (inline
SVG with their takeaways) and HTML blocks in the order given, and renders Markdown sections (tables,
bullets, paragraphs) into those blocks. Nothing is fetched and no script runs: the page opens offline.
Secret values found in the study are masked in both files (core.secrets).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core import secrets
from core.files import write_bytes
from reports.charts import Chart

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


def inline(s: str) -> str:
    """One line of Markdown (bold, code) as HTML."""
    s = html.escape(s)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def md_titles(md: str) -> list[str]:
    """The `## ` section titles of a Markdown text, in order."""
    return [line[3:] for line in md.splitlines() if line.startswith("## ")]


def md_section(md: str, title: str) -> str:
    """The Markdown section `title` as HTML (tables, bullets and paragraphs only)."""
    part = md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    out: list[str] = []
    rows: list[str] = []

    def flush() -> None:
        if rows:
            head, *body = [[c.strip() for c in r.strip("|").split("|")] for r in rows if not set(r) <= set("|-")]
            out.append(
                "<table><tr>"
                + "".join(f"<th>{inline(x)}</th>" for x in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{inline(x)}</td>" for x in r) + "</tr>" for r in body)
                + "</table>"
            )
            rows.clear()

    for line in part:
        if line.startswith("|"):
            rows.append(line)
            continue
        flush()
        if line.startswith("- "):
            out.append(f"<p>• {inline(line[2:])}</p>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)


def charts_html(charts: Iterable[Chart]) -> str:
    e = html.escape
    return "\n".join(
        f'<figure class="chart" id="chart-{ch.key}" data-chart="{ch.key}">{ch.svg}'
        f"<figcaption><b>{e(ch.title)}</b>{e(ch.takeaway)}</figcaption></figure>"
        for ch in charts
    )


@dataclass(frozen=True)
class Page:
    title: str
    markdown: str  # the whole report, as report.md holds it
    intro: Sequence[str]  # lines under the title (inline Markdown)
    blocks: Sequence[tuple[str, str]]  # (heading, HTML) in page order

    def html(self) -> str:
        e = html.escape
        out = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{e(self.title)}</title>",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<style>{CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
            *[f"<p>{inline(line)}</p>" for line in self.intro],
        ]
        for heading, body in self.blocks:
            out += [f"<h2>{e(heading)}</h2>", body]
        out.append("</body></html>")
        return "\n".join(out)

    def write(self, out_dir: Path, hidden: Sequence[str] = ()) -> tuple[Path, Path]:
        """report.html and report.md in `out_dir` (readable by all), with `hidden` values masked."""
        html_path, md_path = out_dir / "report.html", out_dir / "report.md"
        write_bytes(md_path, secrets.redact_text(self.markdown, hidden).encode(), mode=0o644)
        write_bytes(html_path, secrets.redact_text(self.html(), hidden).encode(), mode=0o644)
        return html_path, md_path
