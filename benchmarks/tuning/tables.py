"""The README's tables of benchmarks/tuning, read from the scenarios' result files (no run, no cluster): a row per
run of each scenario, and a row per scenario and design pooling its runs (core.stats.across_runs), since one run's
interval covers the noise within that run only and the verdict the issue asks for is one that holds on another day.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core import stats

RESULTS = Path(__file__).resolve().parent.parent / "results"
DEFAULTS, CURRENT = "baseline:kafka-defaults", "baseline:current"
BAR = 1.3  # the headroom a scenario is built to have: chosen / start at least this, its interval's low end above 1


def _interval(r: Mapping[str, Any] | None) -> str:
    """A ratio with its interval; where one side has a single run that held a rate it has none, and says so."""
    if not r:
        return "—"
    if r.get("low") is None:
        return f"{r['estimate']:.2f}× (no interval: one side has a single run that held a rate)"
    return f"{r['estimate']:.2f}× ({r['low']:.2f}–{r['high']:.2f})"


def _vs_start(d: Mapping[str, Any]) -> str:
    """The chosen / start cell: the ratio over the runs that held a rate, else the study's own comparison with the
    start's no-rate runs at their bounds (at least that much, at the level its Holm test used)."""
    r, b = d["recommended_vs_start"], d.get("recommended_vs_start_at_bounds")
    if r or not b or b.get("low") is None:
        return _interval(r)
    return (
        f"at least {b['estimate']:.2f}× ({b['level']:.0%} CI {b['low']:.2f}–{b['high']:.2f}; "
        f"{b['start_runs_at_bounds']} start runs with no rate held, at their bounds)"
    )


def table_row(name: str, file: str, d: Mapping[str, Any]) -> str:
    """One run's row of the README's table, from its result file (`file`, under benchmarks/results/)."""
    start = "Kafka's defaults" if d["start"] == DEFAULTS else "current"
    planted = d.get("planted_found") or {}
    bounds = collections.Counter(str(lim["bound"]) for lim in d.get("headline_limits") or [])
    sp = d["search"]
    cells = [
        f"`{name}` (benchmarks/results/{file})",
        str(d.get("measured_at", ""))[:10] or "—",
        str(max((len(a["runs_mb_s"]) for a in d["arms"]), default=0) or "—"),  # the confirmation's repeats
        start,
        "the start" if _kept(d) else d["chosen"] or "none (no arm held a rate in every run)",
        _vs_start(d),
        _interval(d["recommended_vs_confluent"]),
        _interval(d.get("best_found_vs_start")),
        ", ".join(k["key"] for k in d["recommended"]) or "none",
        f"{sum(planted.values())} of {len(planted)}" if planted else "—",
        f"{sp['trials_to_95pct']} of {len(sp['trials_mb_s'])}",
        f"{d['headline_of_ceiling'] * 100:.0f} %" if d.get("headline_of_ceiling") else "—",
        ", ".join(f"{b} {n}" for b, n in bounds.most_common()) or "—",
    ]
    return "| " + " | ".join(cells) + " |"


def result_files(name: str) -> list[Path]:
    """A scenario's full runs' result files: tuning_<name>.json, then the later runs kept beside it under a dated name
    (tuning_<name>_<yyyymmdd>[b].json), oldest first; --quick's files are not runs of the benchmark."""
    later = sorted(f for f in RESULTS.glob(f"tuning_{name}_*.json") if not f.stem.endswith("_quick"))  # by date
    first = RESULTS / f"tuning_{name}.json"
    return ([first] if first.exists() else []) + later


def table(names: Sequence[str]) -> str:
    """The README's table: one row per run of each scenario (every result file, so a later run's verdict stands beside
    the first one's), in the order of `names`."""
    head = [
        "scenario (result file)",
        "measured",
        "runs an arm",
        "start",
        "chosen",
        "chosen / start (95 % CI)",
        "chosen / Confluent (95 % CI)",
        "search's best / start (95 % CI)",
        "keys beyond noise",
        "planted keys changed",
        "search trials to 95 % of best",
        "of ceiling",
        "what bound the chosen runs (advisor.limit)",
    ]
    rows = [table_row(name, f.name, json.loads(f.read_text())) for name in names for f in result_files(name)]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows])


def design(d: Mapping[str, Any]) -> tuple[int, int]:
    """A run's design: its confirmation's searches an arm and its search trials. Runs are pooled only with runs of
    the same design, since more trials may find more and more searches weigh a run's own noise differently."""
    return max((len(a["runs_mb_s"]) for a in d["arms"]), default=0), len(d["search"]["trials_mb_s"])


def pooled(docs: Sequence[Mapping[str, Any]], key: str) -> stats.AcrossRuns | None:
    """The ratio `key` (e.g. recommended_vs_start) pooled over the runs that measured it with an interval."""
    runs = [(d[key]["estimate"], d[key]["sd"]) for d in docs if d.get(key) and d[key].get("sd")]
    return stats.across_runs(runs)


def _pooled_cell(p: stats.AcrossRuns | None) -> str:
    if p is None:
        return "—"
    iv = p.interval
    return f"{iv.estimate:.2f}× ({iv.low:.2f}–{iv.high:.2f}, {iv.n} runs)"


def _kept(d: Mapping[str, Any]) -> bool:
    """Whether the run chose its start: by label, or the start's configuration confirmed under a search's label."""
    return d["chosen"] is not None and d["chosen"] in (d["start"], d.get("start_arm"))


def run_verdict(d: Mapping[str, Any]) -> str:
    """One run's verdict on chosen / start, in the words the across-runs table compares between runs."""
    r = d.get("recommended_vs_start")
    if d["chosen"] is None:
        return "no arm held"
    if _kept(d):
        return "start kept"
    if d["start"] in (d.get("held_no_rate") or []):  # in none of its runs: no ratio to it
        return "start held no rate"
    if "start_arm" in d and d["start_arm"] is None:  # left out of the confirmation (before sweeps.confirm ed24a8e)
        return "start not confirmed"
    if not r or r.get("low") is None:
        return "no interval"
    if r["high"] < 1:
        return "a loss"
    if r["low"] <= 1:
        return "no distinguishable gain"
    return f"≥ {BAR}×" if r["estimate"] >= BAR else f"a gain < {BAR}×"


def across_table(names: Sequence[str]) -> str:
    """The README's second table: per scenario and design with at least two runs, each run's verdict and whether
    they are the same, chosen / start and search's best / start pooled over the runs (core.stats.across_runs), and
    the spread between the runs beside the noise within them (sd of the log ratio) with Cochran's test of it."""
    head = [
        "scenario",
        "runs an arm, search trials",
        "each run's verdict (chosen / start)",
        "the same in every run",
        "chosen / start across runs (95 % CI)",
        "between runs / within a run (sd of log); p that the runs agree",
        "search's best / start across runs (95 % CI)",
    ]
    rows = []
    for name in names:
        groups: dict[tuple[int, int], list[Mapping[str, Any]]] = collections.defaultdict(list)
        for f in result_files(name):
            d = json.loads(f.read_text())
            groups[design(d)].append(d)
        for (n, trials), docs in groups.items():
            if len(docs) < 2:
                continue
            verdicts = [run_verdict(d) for d in docs]
            p = pooled(docs, "recommended_vs_start")
            spread = f"{p.between_sd:.3f} / {p.within_se:.3f}; {p.agree_p:.2g}" if p else "—"
            best = _pooled_cell(pooled(docs, "best_found_vs_start"))
            same = "yes" if len(set(verdicts)) == 1 else "no"
            cells = [f"`{name}`", f"{n}, {trials}", "; ".join(verdicts), same, _pooled_cell(p), spread, best]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows])
