"""Charts as inline SVG (matplotlib, no JavaScript, no network), each with a one-line takeaway.

Every function takes rows from the analysis tables and returns a `Chart`, or None when the study has
nothing to show for it (e.g. no Pareto front for a single objective). The takeaway is written from the
same numbers the chart plots.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.ticker
import pandas as pd

from advisor.noise import Effect
from advisor.trials import complete, strict_mask
from core.fmt import si
from records.analysis import rows
from records.study import LatencyCurve
from records.trialrow import TrialRow

matplotlib.use("Agg")
import matplotlib.pyplot as plt

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: smaller, searchable
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


@dataclass(frozen=True)
class Chart:
    key: str  # unique within a report, used as the element id
    title: str
    svg: str
    takeaway: str


def _svg(fig: Any, key: str) -> str:
    plt.rcParams["svg.hashsalt"] = key  # distinct clip-path ids for every inline SVG in one page
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)  # RDF block: date, creator
    return text.replace("<svg ", '<svg class="plot" ', 1)


def _mb(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} MB/s"


def history(trials: pd.DataFrame, ceiling: float | None) -> Chart | None:
    done = complete(trials).sort_values("started_ns", kind="stable")
    if done.empty:
        return None
    done = done.assign(n=range(1, len(done) + 1))
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for i, (s, g) in enumerate(done.groupby("stage", sort=False)):
        ax.scatter(g["n"], g["mb_s"], s=22, color=COLORS[i % len(COLORS)], label=str(s), zorder=3)
    best = done["mb_s"].where(strict_mask(done), 0.0).cummax().tolist()
    ax.step(range(1, len(done) + 1), best, where="post", color="black", lw=1.2, label="best so far (acks=all)")
    if ceiling:
        ax.axhline(ceiling, color="#d62728", ls="--", lw=1, label=f"ceiling {ceiling:.1f} MB/s")
    ax.set_xlabel("trial (in the order run)")
    ax.set_ylabel("MB/s (consumer-confirmed)")
    ax.legend(fontsize=7, ncol=3, loc="lower right")
    top = max(best)
    first = next(n for n, b in enumerate(best, 1) if b >= 0.95 * top) if top else None
    frac = f" = {top / ceiling:.0%} of the {ceiling:.1f} MB/s ceiling" if ceiling and top else ""
    top_id = str(done.loc[done["mb_s"].where(strict_mask(done), 0.0).idxmax(), "trial_id"]) if top else None
    take = (
        f"Best single acks=all run {top:.2f} MB/s ({top_id}, n=1: the confirmation's intervals are the estimate)"
        f"{frac}; 95 % of it was reached by trial {first} of {len(done)}."
    )
    return Chart("history", "Optimisation history and best so far", _svg(fig, "history"), take)


def param_effects(found: list[Effect], trials: pd.DataFrame) -> list[Chart]:
    """One chart per swept parameter and stage; the takeaway's noise verdict is the advisor's (advisor.noise)."""
    ids = dict(zip(trials["trial_id"], trials["mb_s"], strict=True)) if not trials.empty else {}
    out = []
    for e in found:
        stage, param = e.stage, e.param
        rows = sorted(e.rows, key=lambda r: (r.value_num if r.value_num is not None else math.inf, r.value))
        fig, ax = plt.subplots(figsize=(4.2, 2.8))
        nums = [r.value_num for r in rows]
        numeric = all(x is not None for x in nums)
        xs = [x or 0.0 for x in nums] if numeric else [float(i) for i in range(len(rows))]
        ax.plot(xs, [r.mean_mb_s for r in rows], marker="o", color=COLORS[0], label="mean")
        for x, r in zip(xs, rows, strict=True):
            pts = [ids[i] for i in r.trial_ids if i in ids]
            ax.scatter([x] * len(pts), pts, s=10, color=COLORS[1], alpha=0.6, zorder=3)
        if numeric and min(xs) > 0 and max(xs) / min(xs) >= 4:
            ax.set_xscale("log", base=2)
        if numeric and max(xs) >= 10_000:
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(si))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        if not numeric:
            ax.set_xticks(xs, [r.value for r in rows], rotation=30, fontsize=7)
        ax.set_xlabel(param)
        ax.set_ylabel("MB/s")
        ax.set_title(f"stage {stage}", fontsize=8)
        take = (
            f"{param}: best {e.best.value} ({_mb(e.best.mean_mb_s)} mean), "
            f"worst {e.worst.value} ({_mb(e.worst.mean_mb_s)})"
        )
        if e.noise is not None:
            take += (
                f"; the {e.delta:.2f} MB/s difference is "
                + ("within" if e.within_noise else "beyond")
                + f" the spread between one run's windows ({e.noise:.2f} MB/s; run-to-run noise is larger)."
            )
        else:
            take += "."
        key = re.sub(r"[^a-z0-9]+", "-", f"param-{stage}-{param}".lower())
        out.append(Chart(key, f"Throughput against {param} (stage {stage})", _svg(fig, key), take))
    return out


def rates_vs_ceiling(base: TrialRow | None, best: TrialRow | None, ceiling: float | None, rf: int) -> Chart | None:
    shown = [(n, t) for n, t in (("Kafka defaults", base), ("best", best)) if t and t.produce_mb_s is not None]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(6, 3))
    kinds = [("produce_mb_s", "produce"), ("replicate_mb_s", "replicate"), ("consume_mb_s", "consume")]
    w = 0.8 / len(shown)
    for i, (name, t) in enumerate(shown):
        xs = [k + i * w for k in range(len(kinds))]
        ax.bar(xs, [getattr(t, c) or 0 for c, _ in kinds], width=w, color=COLORS[i], label=f"{name} ({t.trial_id})")
    ax.set_xticks([k + w * (len(shown) - 1) / 2 for k in range(len(kinds))], [lab for _, lab in kinds])
    if ceiling:
        ax.hlines(ceiling, -0.4, 0.4 + w, colors="#d62728", linestyles="--", label=f"ceiling {ceiling:.1f} MB/s")
        ax.hlines((rf - 1) * ceiling, 0.6, 1.4 + w, colors="#d62728", linestyles=":", label=f"{rf - 1} × ceiling")
        ax.hlines(ceiling, 1.6, 2.4 + w, colors="#d62728", linestyles="--")
    ax.set_ylabel("MB/s (broker JMX, all brokers)")
    ax.legend(fontsize=7)
    b = shown[-1][1]
    produce = b.produce_mb_s or 0.0  # shown only with a produce rate
    ratio = (b.replicate_mb_s or 0.0) / produce if produce else None
    take = f"{shown[-1][0]}: produce {_mb(produce)}"
    if ceiling:
        take += f" ({produce / ceiling:.0%} of the ceiling)"
    if ratio is not None:
        take += f", replication {ratio:.2f}× produce (RF {rf} means {rf - 1}×)"
    # no ratio of two single runs here: the tuned/defaults ratio, with its interval, is the verdict's (headline)
    return Chart("rates", "Produce / replicate / consume against the ceiling", _svg(fig, "rates"), take + ".")


PCTS = ["50", "75", "90", "95", "99", "99.9", "99.99", "100"]


def latency_curves(curves: Mapping[str, LatencyCurve]) -> Chart | None:
    """One curve per labelled run: its publish and end-to-end latency by percentile (records.study)."""
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = [-math.log10(1 - float(p) / 100) if p != "100" else 5.5 for p in PCTS]
    for i, (label, c) in enumerate(curves.items()):
        for kind, q, ls in (("publish", c.publish, "--"), ("e2e", c.e2e, "-")):
            pts = [(x, q[p]) for x, p in zip(xs, PCTS, strict=True) if q.get(p)]
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    ls=ls,
                    marker=".",
                    color=COLORS[i],
                    label=f"{label} {kind}",
                )
    ax.set_yscale("log")
    ax.set_xticks(xs, ["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max"])
    ax.set_ylabel("latency, ms (log)")
    ax.legend(fontsize=7)
    parts = []
    for label, c in curves.items():
        e = c.e2e.get("99")
        if e:
            parts.append(f"{label} p99 end-to-end {e:,.1f} ms")
    return Chart(
        "latency", "Latency percentiles (log scale)", _svg(fig, "latency"), "; ".join(parts) + "." if parts else ""
    )


def pareto(trials: pd.DataFrame, front: pd.DataFrame, objectives: list[str]) -> Chart | None:
    lat = next((o for o in objectives[1:] if o in ("p99_e2e_ms", "p99_publish_ms")), None)
    if lat is None:
        return None
    col = "e2e_p99_ms" if lat == "p99_e2e_ms" else "publish_p99_ms"
    done = complete(trials)
    done = done[(done["mb_s"] > 0) & (done[col] > 0)] if not done.empty else done
    if done.empty:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.scatter(done["mb_s"], done[col], s=14, color="#999999", label="trials")
    fr = rows(front[front[col] > 0].sort_values("mb_s")) if col in front else []
    ax.plot([f["mb_s"] for f in fr], [f[col] for f in fr], marker="o", color=COLORS[3], label="Pareto front")
    ax.set_yscale("log")
    ax.set_xlabel("MB/s")
    ax.set_ylabel(f"{lat} (log)")
    ax.legend(fontsize=7)
    take = (
        (
            f"{len(fr)} trial(s) on the front, from {_mb(fr[0]['mb_s'])} at {fr[0][col]:,.1f} ms "
            f"to {_mb(fr[-1]['mb_s'])} at {fr[-1][col]:,.1f} ms."
        )
        if fr
        else ""
    )
    return Chart("pareto", f"Pareto front: throughput against {lat}", _svg(fig, "pareto"), take)


def importance(table: pd.DataFrame) -> Chart | None:
    if table.empty:
        return None
    t = table.sort_values(["stage", "importance"])
    fig, ax = plt.subplots(figsize=(6, 0.35 * len(t) + 1))
    stages = list(dict.fromkeys(t["stage"]))
    ax.barh(
        (t["stage"] + ": " + t["param"]).tolist(),
        t["importance"],
        color=[COLORS[stages.index(s) % len(COLORS)] for s in t["stage"]],
    )
    ax.set_xlabel("importance (Optuna PED-ANOVA, per stage, sums to 1)")
    tops = []
    for top in rows(t.sort_values("importance", kind="stable").groupby("stage", sort=False).tail(1)):
        tops.append(f"{top['stage']}: {top['param']} ({top['importance']:.0%}, {top['n_trials']} trials)")
    return Chart(
        "importance",
        "Parameter importance",
        _svg(fig, "importance"),
        "Most important per stage: " + "; ".join(tops) + ".",
    )


def stability(series: pd.DataFrame, trial: TrialRow | None) -> Chart | None:
    if not trial or series.empty:
        return None
    s = series[series["trial_id"] == trial.trial_id].sort_values("second")
    if s.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 2.8))
    for col, color, lw, label in (
        ("client_consume_mb_s", COLORS[0], 1.5, "consumed (clients)"),
        ("produce_mb_s", COLORS[1], 0.8, "produce (brokers)"),
    ):
        if col in s:  # a missing second is a gap, not a zero
            ax.plot(s["second"], s[col], color=color, lw=lw, label=label)
    meas = s.loc[s["phase"] == "measure", "second"] if "phase" in s else s["second"].iloc[:0]
    if len(meas):
        ax.axvspan(meas.min(), meas.max() + 1, color="#2ca02c", alpha=0.08, label="measured")
    ax.set_xlabel("second")
    ax.set_ylabel("MB/s")
    ax.legend(fontsize=7)
    cv = trial.second_cv
    take = (
        f"{trial.trial_id}: {_mb(trial.second_mean_mb_s)} per second in the measured phase, "
        f"min {_mb(trial.second_min_mb_s)}, max {_mb(trial.second_max_mb_s)}"
        + (f", coefficient of variation {cv:.1%}." if cv is not None else ".")
    )
    return Chart(
        "stability", f"Per-second stability of the best trial ({trial.trial_id})", _svg(fig, "stability"), take
    )
