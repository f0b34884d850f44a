"""`kafkatune report`: a study and its analysis → report.html, report.md and recommended/*.properties.

Everything shown comes from the study's files and the advisor's reading of its analysis (advisor.study);
the report computes no figure of its own: it picks, formats and plots them, through the one page builder
(reports.page) and chart set (reports.charts).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from advisor import study as advice
from advisor import verdict
from advisor.plan import Plan
from advisor.recommendation import Recommendation
from core import secrets
from core.files import write_bytes
from core.fmt import num
from loadgen import tail
from records.analysis import AnalysisSummary, load_table, trial_rows
from records.confirmation import DEFAULTS, Confirmation
from records.profile import Machine
from records.run import has_result, read_result
from records.study import TRIALS, Study, latency_quantiles, secret_bearing_documents
from records.summary import Best, Summary
from records.trial import SEARCH_RUN
from records.trialrow import TrialRow
from reports import charts, properties
from reports.page import Page, charts_html, md_section


@dataclass(frozen=True)
class Report:
    dir: Path
    html: Path
    markdown: Path
    files: list[Path]
    charts: list[str]


@dataclass(frozen=True)
class _Content:
    """What the report says, gathered once from the advisor's reading: the markdown and the headline read only this."""

    study: Study
    trials: pd.DataFrame
    best: TrialRow | None  # the run the study is diagnosed by
    base: TrialRow | None  # Kafka's defaults
    ceiling: float | None
    recs: list[Recommendation]
    binding: Recommendation | None
    charts: list[charts.Chart]
    changes: list[properties.Change]
    plans: list[Plan]
    durability: list[str]
    analysis: AnalysisSummary | None
    verdict: list[str]
    tail: list[str]
    sweep: Summary | None


def build(
    run_dir: Path, out_dir: Path | None = None, master: str | None = None, progress: Callable[[str], None] = print
) -> Report:
    """The study's report in `out_dir` (default RUN_DIR/report); the analysis runs first when missing."""
    a = advice.advise(run_dir, master, progress)
    study, trials, best, base = a.study, a.trials, a.best, a.defaults
    shown = _charts(a)
    confirmed = bool(a.sweep and a.sweep.confirmation)
    changes = properties.from_ablations(a.sweep.recommended) if a.sweep and confirmed else _search_changes(a)
    back = _from_current(a)
    changes = properties.with_current([*changes, *back], _current_config(a))
    header = (
        f"kafkatune recommendation for study {study.name}: keys whose ablation lost throughput beyond noise"
        + (", and those the current configuration runs otherwise" if back else "")
        if confirmed
        else f"kafkatune recommendation for study {study.name}, from trial {best.trial_id if best else '-'}"
    )
    files = properties.render(changes, header)
    out = (out_dir or study.root / "report").resolve()
    (out / "recommended").mkdir(parents=True, exist_ok=True)
    hidden = secrets.secret_values(secret_bearing_documents(study))
    written = []
    for name, text in files.items():
        p = out / "recommended" / name
        write_bytes(p, secrets.redact_text(text, hidden).encode(), mode=0o644)
        written.append(p)
    # the binding resource is the headline's when the sweep confirmed a configuration (stated once)
    recs = [r for r in a.recommendations if r.rule != "binding-resource" or not (a.sweep and a.sweep.best)]
    c = _Content(
        study=study,
        trials=trials,
        best=best,
        base=base,
        ceiling=a.ceiling_mb_s,
        recs=recs,
        binding=next((r for r in a.recommendations if r.rule == "binding-resource"), None),
        charts=shown,
        changes=changes,
        plans=advice.plans(trials, study, best, a.sweep),
        durability=advice.durability(trials),
        analysis=a.summary,
        verdict=verdict.lines(a.sweep) if a.sweep else [],
        tail=_tail_lines(a),
        sweep=a.sweep,
    )
    md = markdown(c)
    blocks = [
        *([("Confirmation and effects", md_section(md, "Confirmation and effects"))] if c.verdict else []),
        ("Recommendations", _recommendations_html(recs)),
        ("Charts", charts_html(shown)),
        ("Recommended settings", _files_html(files)),
        *[(t, md_section(md, t)) for t in ("Capacity plan", "Durability trade-off", "Measured on", "Trials")],
    ]
    page = Page(f"kafkatune report: {study.name}", md, _headline(c), blocks)
    html_path, md_path = page.write(out, hidden)
    written += [md_path, html_path]
    return Report(out, html_path, md_path, written, [ch.key for ch in shown])


def _tail_lines(a: advice.StudyAdvice) -> list[str]:
    """The recommended configuration's confirmation searches: their seconds over the SLO and what each met
    (loadgen.tail over the steps that held: a step that missed breaks the SLO by design)."""
    chosen = advice.candidate(a.sweep, None)
    ids = chosen.trial_ids if chosen else ()
    runs = [a.study.root / TRIALS / tid / SEARCH_RUN for tid in ids]
    found = [t for d in runs if has_result(d) and (t := read_result(d).summary.tail) is not None]
    if not found:
        return []
    c = tail.combine([b.brief() for b in found])
    lines = [
        f"{c.runs} searches of the recommended configuration: {c.above_slo_s} of their {c.seconds} "
        "seconds at rates that held were over the SLO"
    ]
    for cause, n in sorted(c.primary_s.items(), key=lambda kv: -kv[1]):
        if n:
            lines.append(f"{tail.CAUSES[cause]}: {n} s ({n / c.above_slo_s:.0%})")
    if c.above_slo_s:
        lines.append(f"unexplained: {c.unexplained_s} s ({c.unexplained_s / c.above_slo_s:.0%})")
    return lines


def _from_current(a: advice.StudyAdvice) -> list[properties.Change]:
    """For a study whose chosen configuration beat the `current` one beyond noise: the keys the current configuration
    runs otherwise than the configuration the files describe (properties.from_current)."""
    s = a.sweep
    conf = s.confirmation if s else None
    if s is None or conf is None or conf.vs_current is None or not conf.vs_current.distinguishable:
        return []
    chosen, cur = conf.arm(None), conf.arm(conf.vs_current.label)  # its own label, or the one it ran as
    if chosen is None or cur is None:
        return []
    dropped = {e.key for e in (*s.no_measurable_effect, *conf.not_ablated)}
    return properties.from_current(s.recommended, dropped, chosen.config, cur.config, ", ".join(chosen.trial_ids))


def _current_config(a: advice.StudyAdvice) -> Mapping[str, Any]:
    """What the study's `current` baseline ran ({} when it has none), whatever label it was confirmed under."""
    cur = a.sweep.baselines.get("current") if a.sweep else None
    return cur.config if cur else {}


def _search_changes(a: advice.StudyAdvice) -> list[properties.Change]:
    """A study without ablations: the swept keys of the best trial that differ from the baseline."""
    best, base = a.best, a.defaults
    if not best:
        return []
    whole = best.rate - base.rate if base else None
    return properties.changes(
        best,
        base.params if base else {},
        advice.swept_keys(a.study, a.params),
        advice.key_gains(best, a.effects),
        whole,
    )


RUN_KIND = {"max-rate": "at the maximum rate", "fixed-rate": "at fixed rates"}


def _charts(a: advice.StudyAdvice) -> list[charts.Chart]:
    # each curve says which run it is: a max-rate run's latency and a search's are different measurements
    shown = [("Kafka defaults", a.defaults), ("best", a.best)]
    op = a.sweep.operating_point if a.sweep else None
    held = next((t for t in op.tries if t.held), None) if op else None
    if held:
        shown.append(("operating point", TrialRow(trial_id=held.trial_id or "", rate_mode="fixed-rate")))
    quantiles = {
        f"{label} ({trial.trial_id}, {RUN_KIND.get(str(trial.rate_mode), 'one run')})": q
        for label, trial in shown
        if trial and (q := latency_quantiles(a.study, trial.trial_id))
    }
    found = [
        charts.history(a.trials, a.ceiling_mb_s),
        *charts.param_effects(a.effects, a.trials),
        charts.rates_vs_ceiling(a.defaults, a.best, a.ceiling_mb_s, a.study.rf),
        charts.latency_curves(quantiles),
        charts.pareto(a.trials, load_table(a.analysis, "pareto"), a.study.objectives),
        charts.importance(load_table(a.analysis, "importance")),
        charts.stability(load_table(a.analysis, "series"), a.best),
    ]
    return [ch for ch in found if ch is not None]


def _recommendations_html(recs: list[Recommendation]) -> str:
    e = html.escape
    items = []
    for r in recs:
        gain = (
            f" (expected +{r.expected_gain_mb_s:.2f} MB/s)" if r.expected_gain_mb_s and r.expected_gain_mb_s > 0 else ""
        )
        evidence = "".join(f"<li>{e(x)}</li>" for x in r.evidence)
        act = (
            ("<p>set: " + ", ".join(f"<code>{e(k)}={e(v)}</code>" for k, v in r.action.items()) + "</p>")
            if r.action
            else ""
        )
        items.append(
            f'<li class="rec sev-{r.severity}"><b>[{r.severity}] {e(r.title)}</b>{e(gain)}{act}<ul>{evidence}</ul></li>'
        )
    return "<ol>" + "\n".join(items) + "</ol>"


def _files_html(files: dict[str, str]) -> str:
    e = html.escape
    return "\n".join(f"<h3>recommended/{e(name)}</h3><pre>{e(text)}</pre>" for name, text in files.items())


def _headline(c: _Content) -> list[str]:
    best, base, ceiling = c.best, c.base, c.ceiling
    lines = []
    sw = c.sweep
    if sw and sw.confirmation and sw.best:
        lines += _confirmed_headline(sw, sw.confirmation, sw.best, ceiling)
        binding = c.binding
        if binding is not None:  # stated once: the rule reads this same run (advisor.trials.chosen_trial)
            lines.append(
                f"Diagnosis ({', '.join(binding.trials)}, its median run): {binding.title}. "
                + "; ".join(binding.evidence)
            )
    elif best:
        s = f"Best: **{best.rate:.2f} MB/s** ({best.trial_id})"
        if ceiling:
            s += f", {best.rate / ceiling:.0%} of the {ceiling:.2f} MB/s ceiling"
        if base:
            s += f", {best.rate / base.rate:.2f}× Kafka's defaults ({base.rate:.2f} MB/s, {base.trial_id})"
        lines.append(s + ".")
        lines.append(f"Bound by **{best.bound}**: {best.bound_reason}.")
    if c.study.synthetic:
        lines.append("**This study is synthetic (generated), not a measurement.**")
    return lines


def _confirmed_headline(sw: Summary, conf: Confirmation, b: Best, ceiling: float | None) -> list[str]:
    """The recommended configuration's mean with its interval, its share of the ceiling and its ratio to
    Kafka's defaults with theirs (sweeps.confirm computed them; this only says them)."""
    what = "sustainable rate" if sw.objective == "sustainable_mb_s" else "max-rate throughput"
    s = f"Recommended ({b.label}): {what} **{b.interval.text(unit='MB/s') if b.interval else num(b.mb_s)}**"
    if ceiling and b.mb_s is not None:
        s += f", {b.mb_s / ceiling:.0%} of the {ceiling:.2f} MB/s ceiling"
    vs = conf.written.vs_defaults if conf.written else conf.vs_defaults  # as written, when it was measured
    if conf.written and conf.written.headline == DEFAULTS:  # the files are empty (sweeps.written)
        s += f"; no key to change: {conf.chosen} did not beat Kafka's defaults beyond noise in their own blocks"
    if vs and vs.ratio:
        s += f"; {vs.ratio.text('{:.2f}', '×')} Kafka's defaults{verdict.bound_words(vs)}"
        if not vs.distinguishable:
            s += " (**not distinguishable from the defaults**)"
    cur = conf.vs_current  # the confirmation's chosen configuration against what the cluster runs now
    if cur and cur.ratio:
        s += f"; the confirmed {conf.chosen}: {cur.ratio.text('{:.2f}', '×')} {verdict.CURRENT_WORDS}"
        s += verdict.bound_words(cur)
        s += "" if cur.distinguishable else " (**not distinguishable from it**)"
    said = [x + "." for x in verdict.operating_lines(sw)[:1]]
    return [s + ".", *said, verdict.objective_line(sw.objective, sw.slo) + "."]


def _rec_md(r: Recommendation, i: int) -> list[str]:
    gain = f" (expected +{r.expected_gain_mb_s:.2f} MB/s)" if r.expected_gain_mb_s and r.expected_gain_mb_s > 0 else ""
    lines = [f"{i}. **[{r.severity}] {r.title}**{gain}"]
    if r.action:
        lines.append("   - set: " + ", ".join(f"`{k}={v}`" for k, v in r.action.items()))
    lines += [f"   - {e}" for e in r.evidence]
    return lines


def markdown(c: _Content) -> str:
    st = c.study
    L = [f"# kafkatune report: {st.name}", "", *_headline(c), ""]
    if c.verdict:
        L += ["## Confirmation and effects", "", *[f"- {x.strip()}" for x in c.verdict], ""]
    if c.tail:
        L += ["## Tail budget", "", *[f"- {x.strip()}" for x in c.tail], ""]
    L += ["## Recommendations", ""]
    for i, r in enumerate(c.recs, 1):
        L += _rec_md(r, i)
    L += ["", "## What the charts show", ""]
    L += [f"- **{ch.title}**: {ch.takeaway}" for ch in c.charts]
    L += ["", "## Recommended settings", ""]
    if c.changes:
        L += ["| file | key | old | new | measured gain | trial |", "|---|---|---|---|---|---|"]
        for ch in c.changes:
            gain = ch.gain_note if "CI" in ch.gain_note or ch.gain_mb_s is None else f"+{ch.gain_mb_s:.2f} MB/s"
            L.append(f"| {properties.FILES[ch.scope]} | `{ch.key}` | {ch.was} | {ch.new} | {gain} | {ch.trial} |")
    elif c.verdict:
        L.append("No key's ablation lost throughput beyond noise: no key is recommended (see above).")
    else:
        L.append("The study changed no swept key from Kafka's defaults.")
    L += [
        "",
        "Files: `recommended/producer.properties`, `consumer.properties`, `server.properties`, `topic-configs.txt`.",
        "",
    ]
    L += ["## Capacity plan", "", *_plans_md(c.plans)]
    L += ["", "## Durability trade-off", ""]
    L += [f"- {d}" for d in c.durability] or ["The study kept acks=all and Kafka's flush defaults: nothing was traded."]
    L += ["", "## Measured on", "", *[f"- {x}" for x in measured_on(Machine.of(st.profile))]]
    L += ["", "## Trials", "", *_trials_md(c.trials)]
    a = c.analysis
    done = (
        f"Analysis: {num(a.trials, '{:,}')} trials, {num(a.samples, '{:,}')} per-second samples, Spark "
        f"{a.spark_version} ({a.master})."
        if a
        else "Not analysed."
    )
    L += ["", f"{done} Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by kafkatune.", ""]
    return "\n".join(L)


def measured_on(m: Machine) -> list[str]:
    """The machine the study's figures were measured on, as its profile says: its CPU speed that day first, since
    the same machine runs several times slower on some days and figures of such days do not compare."""
    out = []
    if m.cpu_probe_ms is not None:
        spread = f", {m.cpu_probe_ms_range[0]:g}-{m.cpu_probe_ms_range[1]:g}" if m.cpu_probe_ms_range else ""
        out.append(
            f"CPU probe {m.cpu_probe_ms:g} ms (median of 5{spread}; lower is faster; `cluster/probe.py cpu`): "
            "compare this study's figures only with studies whose probe reads alike"
        )
    if m.cpus:
        out.append(
            f"{m.cpus} CPUs, shared by the brokers and the load generator" if m.broker_jvm_options else f"{m.cpus} CPUs"
        )
    if isinstance(m.writeback, str):
        out.append(f"host page-cache writeback: {m.writeback}")
    elif m.writeback:
        out.append("host page-cache writeback: continuous while the testbed ran (`testbed/writeback.py`)")
    if m.broker_jvm_options:
        out.append(f"brokers' JVM: `{' '.join(m.broker_jvm_options)}`")
    return out or ["the study's profile says nothing of its machine (written before kafkatune recorded it)"]


def _plans_md(plans: list[Plan]) -> list[str]:
    """The capacity plans as a table, with the targets' basis and the plan's assumptions."""
    if not plans:
        return [
            "No network ceiling is known for this study's cluster (unshaped testbed): `kafkatune plan --nic-mbps …`."
        ]
    L = [
        "| target MB/s | brokers | partitions | producers | consumers | NIC/broker MB/s | disk/broker MB/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in plans:
        L.append(
            f"| {p.target_mb_s:.1f} | {p.brokers} | {p.partitions} | {p.producers} | {p.consumers} | "
            f"{p.nic_mb_s_needed:.1f} | {p.disk_mb_s_needed:.1f} |"
        )
    L.append("")
    L.append(
        f"Targets: 70 % of the best measured rate, then 2× and 10× that; efficiency {plans[0].efficiency:.0%} "
        f"(measured), headroom {plans[0].headroom:.0%}."
    )
    return L + [f"- assumption: {a}" for a in plans[0].assumptions]


def _trials_md(trials: pd.DataFrame) -> list[str]:
    """Every trial as a table row: its rate, share of the ceiling, broker rates, p99 and binding resource."""
    L = [
        "| trial | stage | MB/s | % ceiling | produce | replicate | consume | p99 e2e ms | bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in trial_rows(trials):
        L.append(
            f"| {t.trial_id} | {t.stage} | {num(t.mb_s)} | {num(t.fraction_of_ceiling, '{:.0%}')} | "
            f"{num(t.produce_mb_s)} | {num(t.replicate_mb_s)} | {num(t.consume_mb_s)} | "
            f"{num(t.e2e_p99_ms, '{:,.1f}')} | "
            f"{t.bound} |"
        )
    return L
