"""Does kafkatune tune? Scenarios whose better configuration is known by construction, and a negative control.

Each scenario (SCENARIOS below, its sweep spec beside this file) is a cluster condition, a workload and a starting
configuration. For each one asked for, this starts a private testbed (shaped, 25 MB/s links; loopback where the
scenario says so), warms it, sets the condition (a delay on every broker's link, broker configs the cluster
"inherited"; both undone after), runs `kafkatune sweep` on the scenario's spec merged onto common.yaml, and reads
the study's confirmation: the recommended configuration, the starting one, Kafka's defaults and Confluent's
throughput profile (where the spec names it), each measured by independent sustainable-rate searches interleaved in
rounds (sweeps.confirm).

Per scenario it prints and writes benchmarks/results/tuning_<scenario>.json, or for a later run of the scenario
tuning_<scenario>_<yyyymmdd>.json beside it (tuning_<scenario>_quick.json with --quick): every arm's runs and 95 %
interval; recommended / starting and recommended / Confluent as ratios with their intervals (Welch, delta method on
the log ratio: core.stats.ratio); the product's own verdict lines; the keys recommended and those without effect;
the search trials it took to reach 95 % of the best search trial; the recommendation's rate as a share of the
ceiling the testbed's profile gives; and the wall clock.

    .venv/bin/python benchmarks/tuning/run.py                       # every scenario, 36-60 min each here
    .venv/bin/python benchmarks/tuning/run.py lan control --quick   # 4 search trials each: the pipeline, not a claim
    .venv/bin/python benchmarks/tuning/run.py --study runs/tuning-lan --scenario lan   # a finished study's figures
    .venv/bin/python benchmarks/tuning/run.py --table   # the README's table: a row per result file (every run)
    .venv/bin/python benchmarks/tuning/run.py --across  # its second: each scenario's runs pooled (same design)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/_common, which puts the repository on the path

from _common import broker_delay, commit, log, new_result_name, result_file, sweep, testbed  # noqa: E402
from tables import CURRENT, DEFAULTS, across_table, result_files, table  # noqa: E402

from advisor import limit, verdict  # noqa: E402
from brokerconf.apply import BrokerConfigs  # noqa: E402
from core import stats  # noqa: E402
from core.typed import to_json  # noqa: E402
from records.confirmation import Arm, Confirmation  # noqa: E402
from records.profile import Limits  # noqa: E402
from records.study import open_study  # noqa: E402
from records.summary import Summary  # noqa: E402
from records.trial import read_trial  # noqa: E402
from sweeps.confirm import arm_as, values  # noqa: E402
from testbed.lifecycle import Testbed  # noqa: E402

NIC_MB_S = 25.0
QUICK_TRIALS = 4  # search trials per scenario under --quick (the confirmation keeps its 3 repeats per arm)
REACHED = 0.95  # "trials to reach": the first search trial at this share of the best search trial


@dataclass(frozen=True)
class Scenario:
    """A cluster condition, a workload and a starting configuration (`start`: the confirmation arm it is)."""

    spec: str  # the sweep spec beside this file
    start: str  # "baseline:kafka-defaults" or "baseline:current"
    known: str  # the better configuration, as known by construction
    delay_ms: float = 0.0  # added to every broker's link, each way (testbed.netns.degrade)
    broker: Mapping[str, str] = field(default_factory=dict)  # dynamic broker configs the cluster starts with
    planted: tuple[str, ...] = ()  # the keys set badly on purpose: each must be found, or its miss explained
    shaped: bool = True  # the shaped testbed's NIC_MB_S links; False: loopback (the CPUs and disks are the limits)


SCENARIOS = {
    "lan": Scenario("lan.yaml", DEFAULTS, "batches larger than Kafka's 16 KB"),
    "lan-text": Scenario("lan-text.yaml", DEFAULTS, "compression of a payload lz4 halves, larger batches"),
    "stretched": Scenario("stretched.yaml", DEFAULTS, "more bytes in flight: larger batches, more producers", 5.0),
    "small-records": Scenario("small-records.yaml", DEFAULTS, "larger batches and more producers for 100-B records"),
    "misconfig": Scenario(
        "misconfig.yaml",
        CURRENT,
        "no fsync per message, batches above 4 KB, fetches above 8 KB per partition",
        broker={"log.flush.interval.messages": "1"},
        planted=("log.flush.interval.messages", "batch.size", "max.partition.fetch.bytes"),
    ),
    "control": Scenario("control.yaml", CURRENT, "none: the start is the demo's best (no change is the answer)"),
    "io-threads": Scenario(
        "io-threads.yaml",
        CURRENT,
        "more than one request-handler thread, if one binds here (issue 36's plant, on loopback)",
        broker={"num.io.threads": "1"},
        planted=("num.io.threads",),
        shaped=False,
    ),
}


def spec_file(sc: Scenario, out: Path, quick: bool) -> Path:
    """The scenario's spec merged onto common.yaml (its `current` files made absolute); --quick caps the search."""
    doc = {**yaml.safe_load((HERE / "common.yaml").read_text()), **yaml.safe_load((HERE / sc.spec).read_text())}
    if "current" in doc:
        doc["current"] = {k: str(HERE / v) if k != "topic" else v for k, v in doc["current"].items()}
    if quick:
        doc["budget"] = {"trials": QUICK_TRIALS}
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


@contextlib.contextmanager
def condition(tb: Testbed, sc: Scenario) -> Iterator[None]:
    """The scenario's delay on every broker's link and its broker configs, for the block; both undone after."""
    bc = BrokerConfigs.connect(tb.state().bootstrap_servers, testbed=tb, progress=log)
    snap = bc.snapshot()
    try:
        with broker_delay(tb, sc.delay_ms):
            if sc.broker:
                log(f"the cluster starts with {dict(sc.broker)} on every broker")
                bc.apply(sc.broker, {}, snap)
            yield
    finally:
        bc.restore(snap)


def arm_figures(arm: Arm | None) -> dict[str, Any] | None:
    """An arm's runs (MB/s, None: failed) and the 95 % interval of its mean."""
    if arm is None:
        return None
    vals = values(arm)
    return {
        "label": arm.label,
        "runs_mb_s": list(arm.repeats),
        "interval": to_json(stats.mean_interval(vals)) if vals else None,
        "config": dict(arm.config),
    }


def ratio(a: Arm | None, b: Arm | None) -> dict[str, Any] | None:
    """mean(a) / mean(b) over their confirmation runs (interleaved in the same rounds), with its 95 % interval; None
    when either arm is missing or held no rate in any run (`held_no_rate` says which)."""
    if a is None or b is None or not values(a) or not values(b):
        return None
    r = stats.ratio(values(a), values(b))
    return to_json(r) if r else None


def search_progress(study: Path, stages: set[str]) -> dict[str, Any]:
    """The search trials' figures (those of the plan's `stages`) in the order they ran; the first (1-based) to
    reach REACHED of the best."""
    recs = [r for p in sorted(study.glob("trials/*/")) if (r := read_trial(p)) is not None]
    search = sorted((r for r in recs if r.stage in stages and r.confirms is None), key=lambda r: r.started_ns)
    figs = [float((r.measured or {}).get(r.objective) or 0.0) if r.complete else 0.0 for r in search]
    best = max(figs, default=0.0)
    reached = next((i + 1 for i, v in enumerate(figs) if best > 0 and v >= REACHED * best), None)
    return {"trials_mb_s": figs, "best_mb_s": best, "trials_to_95pct": reached}


def limits(study: Path, arm: Arm) -> list[dict[str, Any]]:
    """What bound each of the arm's runs (its trial_ids), in the order run: advisor.limit, the step that held against
    the lowest above it that missed (None: nothing above it missed)."""
    st = open_study(study)
    nic = Limits.of(st.profile).nic_mb_s
    out = []
    for tid in arm.trial_ids:
        d = st.trial(tid)
        rec = read_trial(d) if d else None
        if d is None or rec is None:
            continue
        found = limit.of_trial(d, nic)
        mb_s = (rec.measured or {}).get(rec.objective)
        out.append({"trial": tid, "mb_s": mb_s, "bound": found and found.bound, "why": found and found.reason})
    return out


def judge(sc: Scenario, s: Summary, study: Path) -> dict[str, Any]:
    """The scenario's figures from the study: arms, ratios, keys, the product's verdict and the ceiling share."""
    conf: Confirmation | None = s.confirmation
    if conf is None:
        return {"error": "the study has no confirmation"}
    base = s.baselines.get(sc.start.removeprefix("baseline:"))  # the start's arm, under a search label if it was one
    chosen, start = conf.arm(None), arm_as(conf, sc.start, base.config) if base else conf.arm(sc.start)
    confluent = conf.arm("baseline:confluent-throughput")
    head = conf.headline()
    head_mean = statistics.fmean(values(head)) if head and values(head) else None
    # a planted key is found when the chosen configuration runs it otherwise than the start (advisor.verdict)
    changes = verdict.current_changes(chosen.config, start.config) if chosen and start else []
    moved = {k for k, _, _ in changes}
    found = max(  # the search's best configuration in the confirmation: what a chosen start was held against
        (a for a in conf.candidates if not a.label.startswith("baseline:") and values(a)),
        key=lambda a: statistics.fmean(values(a)),
        default=None,
    )
    # the study's own comparison with the start (sweeps.confirm.summary): a start's run that held no rate counts at
    # its bound there, so with such runs the ratio is a lead of at least that much
    vs_start = conf.vs_defaults if sc.start == DEFAULTS else conf.vs_current
    bounded = chosen is not None and chosen != start and vs_start is not None and vs_start.at_bound
    return {
        "chosen": conf.chosen,
        "start_arm": start.label if start else None,  # the label the start's configuration was confirmed under
        "arms": [arm_figures(a) for a in conf.candidates],
        # None when the start itself was chosen: a ratio of one arm's runs with themselves says nothing
        "recommended_vs_start": None if chosen is None or chosen == start else ratio(chosen, start),
        "recommended_vs_start_at_bounds": (
            {**to_json(vs_start.ratio), "start_runs_at_bounds": vs_start.at_bound}
            if bounded and vs_start is not None and vs_start.ratio is not None
            else None
        ),
        "best_found": found.label if found else None,
        "best_found_vs_start": None if found is start else ratio(found, start),  # no ratio of an arm with itself
        "recommended_vs_confluent": ratio(chosen, confluent),
        "recommended": [{"key": k.key, "old": k.old, "new": k.new} for k in conf.recommended],
        "no_measurable_effect": [k.key for k in conf.no_measurable_effect],
        "changes_from_start": changes,
        "planted_found": {k: k in moved for k in sc.planted},
        # arms none of whose runs held a rate within the SLO: a ratio against one has no value
        "held_no_rate": [a.label for a in conf.candidates if not values(a)],
        "headline_mb_s": head_mean,
        "ceiling_mb_s": s.ceiling_mb_s,
        "headline_of_ceiling": head_mean / s.ceiling_mb_s if head_mean and s.ceiling_mb_s else None,
        "headline_limits": limits(study, head) if head else [],
        "search": search_progress(study, {st.name for st in s.stages}),
    }


def run(name: str, quick: bool, keep: Path | None) -> dict[str, Any]:
    sc = SCENARIOS[name]
    work = Path(tempfile.mkdtemp(prefix=f"kt-tuning-{name}-"))
    spec = spec_file(sc, work / f"{name}.yaml", quick)
    log(f"scenario {name}: {sc.known}")
    up = {"network": "shaped", "nic_mb_s": NIC_MB_S, "subnet": "198.18.5"} if sc.shaped else {}
    with testbed(work / "tb", warm_up_s=120, **up) as tb, condition(tb, sc):
        raw, study, wall = sweep(tb, spec, work / "runs")
    if keep:
        subprocess.run(["cp", "-r", str(study), str(keep / name)], check=True)
    return report(name, sc, Summary.from_json(raw), study, wall, quick)


def report(name: str, sc: Scenario, s: Summary, study: Path, wall: float | None, quick: bool) -> dict[str, Any]:
    reread = wall is None
    if reread and s.this_invocation is not None:  # a finished study read again: the sweep's own clock
        wall = s.this_invocation.wall_s
    figures = {"scenario": name, "known": sc.known, "start": sc.start, "quick": quick, "wall_s": wall}
    figures |= {"delay_ms": sc.delay_ms, "broker_start": dict(sc.broker), "nic_mb_s": NIC_MB_S if sc.shaped else None}
    figures |= judge(sc, s, study)
    figures["verdict"] = verdict.lines(s)
    print(f"== {name}: {sc.known}")
    print("\n".join(figures["verdict"]))
    for key in (
        "recommended_vs_start",
        "recommended_vs_start_at_bounds",
        "recommended_vs_confluent",
        "best_found_vs_start",
    ):
        r = figures.get(key)
        print(f"{key}: {stats.Interval(**r).text('{:.2f}', '×') if isinstance(r, dict) else r}")
    sp = figures.get("search") or {}
    print(f"search trials to 95 % of the best: {sp.get('trials_to_95pct')} of {len(sp.get('trials_mb_s') or [])}")
    for lim in figures.get("headline_limits") or []:
        print(f"  {lim['trial']} ({lim['mb_s'] or 0:.2f} MB/s) bound by {lim['bound']}: {lim['why']}")
    if quick:
        result_file(f"tuning_{name}_quick", figures)
    elif reread:
        keep_envelope(name, figures)
    else:
        result_file(new_result_name(f"tuning_{name}"), figures)
    return figures


def keep_envelope(name: str, figures: dict[str, Any]) -> None:
    """A kept study's figures read again (--study) into the result file that study wrote (the scenario's file whose
    confirmation's runs are this study's), under its envelope (when, on what machine, at which commit it was
    measured): the measurement is that run's, only the reading is new. The wall clock stays the file's: a live
    run's includes the testbed and the warm-up, the study's own does not. Without such a file (a run that ended
    before writing it) one is written now under a new name, marked `read_from_study`, with the study's own clock."""
    arms = json.loads(json.dumps(figures["arms"], default=str))
    docs = ((f, json.loads(f.read_text())) for f in result_files(name))
    out, old = next(((f, d) for f, d in docs if d.get("arms") == arms), (None, {}))
    if out is None:  # a study whose run ended before its figures were written: the envelope is this reading's
        result_file(new_result_name(f"tuning_{name}"), {**figures, "read_from_study": True})
        return
    envelope = {k: old[k] for k in ("benchmark", "measured_at", "commit", "machine") if k in old}
    doc = {**envelope, **figures, "wall_s": old.get("wall_s", figures["wall_s"]), "read_again_by": commit()}
    out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    log(f"results: {out} (read again from the study)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", help=f"which to run (default: all): {', '.join(SCENARIOS)}")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} search trials per scenario")
    ap.add_argument("--keep", type=Path, default=None, help="copy each study folder into this (empty) folder")
    ap.add_argument("--study", type=Path, default=None, help="print a finished study's figures; run nothing")
    ap.add_argument("--scenario", default=None, help="with --study: the scenario it ran")
    ap.add_argument("--table", action="store_true", help="print the README's table from the result files; run nothing")
    ap.add_argument("--across", action="store_true", help="print the README's table pooling each scenario's runs")
    a = ap.parse_args()
    if a.table or a.across:
        print(table(list(SCENARIOS)) if a.table else across_table(list(SCENARIOS)))
        return
    unknown = sorted(set(a.scenarios) - set(SCENARIOS))
    if unknown:
        sys.exit(f"unknown scenario(s) {unknown}: known are {', '.join(SCENARIOS)}")
    if a.keep and a.keep.exists() and any(a.keep.iterdir()):
        sys.exit(f"--keep {a.keep}: not empty")
    if a.study:
        if a.scenario not in SCENARIOS:
            sys.exit(f"--study needs --scenario, one of {', '.join(SCENARIOS)}")
        raw = json.loads((a.study / "summary.json").read_text())
        report(a.scenario, SCENARIOS[a.scenario], Summary.from_json(raw), a.study, None, a.quick)
        return
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
    for name in a.scenarios or list(SCENARIOS):
        run(name, a.quick, a.keep)


if __name__ == "__main__":
    main()
