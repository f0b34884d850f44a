"""Is the recommended configuration, applied alone, as good as the study said? The demo's study, then what it wrote.

On a private shaped testbed (`make demo`'s shape: 25 MB/s links, 1-KB records, acks=all, 6 partitions, SLO p99
end-to-end ≤ 100 ms), warmed until the brokers' JIT is quiet:

1. the demo's sweep (examples/demo-sweep.yaml) and its report, which writes recommended/producer.properties;
2. a second sweep on the same cluster that applies that file alone, as the cluster's `current` configuration (the
   file read as a user's client configuration, sweeps.current), and measures it against Kafka's defaults in fresh
   randomized blocks, `--repeats` independent searches each, with the demo's search settings. Its one search stage
   tries Kafka's batch.size only because a sweep searches something: that trial is Kafka's defaults, and the
   confirmation measures no configuration twice, so it adds no arm.

It prints and writes (benchmarks/results/written_alone.json): the study's headline (the written configuration's
rate, interval and ratio to the defaults) beside the file applied alone (its rate, interval, ratio to the defaults
measured in the same blocks), the difference between the headline's runs and the applied file's (Welch, 95 %) and
whether it is within noise (its interval includes 0). The two studies run tens of minutes
apart and the machine drifts between them (Kafka's defaults' ratio, second study / first, says by how much), so it
also compares what drift cancels: the headline's ratio to the defaults of its own blocks over the applied file's
ratio to the defaults of its blocks (core.stats.ratio_of_ratios; within noise when its interval includes 1).

    .venv/bin/python benchmarks/written_alone.py [--repeats 4] [--nic-mbps 25]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import REPO, log, result_file, sweep, testbed

from core import stats
from core.typed import to_json
from records.confirmation import Confirmation
from records.summary import Summary
from sweeps.confirm import arm_as, values

DEFAULTS = "baseline:kafka-defaults"
CURRENT = "baseline:current"


def second_spec(demo: Path, recommended: Path, repeats: int, out: Path) -> Path:
    """The demo's spec with its search replaced: `current` is the recommended producer file, measured against
    Kafka's defaults in `repeats` randomized blocks (its one stage tries Kafka's batch.size: the defaults); no
    ablation."""
    doc: dict[str, Any] = yaml.safe_load(demo.read_text())
    doc.update(
        name="written-alone",
        stages=[{"name": "control", "params": {"batch.size": {"choices": [16384]}}, "trials": 1}],
        baselines=["kafka-defaults", "current"],
        current={"producer": str(recommended)},
        confirm={"top": 1, "repeats": repeats},
        ablate={"repeats": 0},
    )
    out.write_text(yaml.safe_dump(doc))
    return out


def figures(first: Summary, second: Summary) -> dict[str, Any]:
    """The headline of the study beside the file applied alone, from both summaries."""
    assert first.confirmation is not None and second.confirmation is not None, "a sweep without a confirmation"
    headline = first.confirmation.headline()  # the written phase's, else the chosen arm: what the files hold
    assert headline is not None, "a study that chose no configuration"
    current = second.baselines[CURRENT.removeprefix("baseline:")].config
    # the confirmation measures no configuration twice: a file that changes nothing is Kafka's defaults' arm
    same, dflt_arm = arm_as(second.confirmation, CURRENT, current), second.confirmation.arm(DEFAULTS)
    assert same is not None and dflt_arm is not None, "the second study confirmed neither the files nor the defaults"
    alone, dflt = values(same), values(dflt_arm)
    diff = stats.difference(values(headline), alone)
    study_dflt = study_defaults(first.confirmation)
    out: dict[str, Any] = {
        "headline": {
            "label": headline.label,
            "config": dict(headline.config),
            "mb_s": values(headline),
            "interval": to_json(stats.mean_interval(values(headline))),
            "vs_defaults": to_json(first.best_vs_defaults) if first.best_vs_defaults else None,
            "defaults_mb_s": study_dflt,
        },
        "applied_alone": {
            "config": dict(current),
            "measured_as": same.label,  # CURRENT, or the arm of the same configuration
            "mb_s": alone,
            "interval": to_json(stats.mean_interval(alone)),
            "defaults_mb_s": dflt,
            "defaults_interval": to_json(stats.mean_interval(dflt)),
            "vs_defaults": _dict(stats.ratio(alone, dflt)) if same.label != DEFAULTS else None,
        },
        "headline_minus_alone": to_json(diff),
        "within_noise": diff.has_interval and not diff.excludes(0.0),
        # the machine's drift between the two studies: Kafka's defaults in the second / in the first
        "defaults_drift": _dict(stats.ratio(dflt, study_dflt)),
    }
    if same.label != DEFAULTS:  # each study's ratio to the defaults of its own blocks, the drift cancelled
        rr = stats.ratio_of_ratios(values(headline), study_dflt, alone, dflt)
        out["headline_ratio_over_alone_ratio"] = _dict(rr)
        out["ratio_within_noise"] = rr is not None and rr.has_interval and not rr.excludes(1.0)
    return out


def study_defaults(c: Confirmation) -> list[float]:
    """The runs of Kafka's defaults from the blocks the headline's arm ran in (the written phase's, when it ran)."""
    arms = c.written.arms if c.written and c.written.arm() else c.candidates
    return values(next(a for a in arms if a.label == DEFAULTS))


def _dict(iv: stats.Interval | None) -> dict[str, Any] | None:
    return to_json(iv) if iv else None


def say(f: dict[str, Any]) -> None:
    h, a = f["headline"], f["applied_alone"]
    iv = stats.Interval(**h["interval"])
    print(f"study headline ({h['label']}, {h['config']}): {iv.text('{:.2f}', 'MB/s')}")
    if h["vs_defaults"]:
        print(f"  / Kafka's defaults in the study: {stats.Interval(**h['vs_defaults']).text('{:.2f}', '×')}")
    print(f"applied alone ({a['config']}): {stats.Interval(**a['interval']).text('{:.2f}', 'MB/s')}")
    print(f"  Kafka's defaults in the same blocks: {stats.Interval(**a['defaults_interval']).text('{:.2f}', 'MB/s')}")
    if a["vs_defaults"]:
        print(f"  / Kafka's defaults: {stats.Interval(**a['vs_defaults']).text('{:.2f}', '×')}")
    d = stats.Interval(**f["headline_minus_alone"])
    verdict = "within noise" if f["within_noise"] else "NOT within noise"
    print(f"headline - applied alone: {d.text('{:+.2f}', 'MB/s')}: {verdict}")
    if f["defaults_drift"]:
        drift = stats.Interval(**f["defaults_drift"]).text("{:.2f}", "×")
        print(f"Kafka's defaults, second study / first (the machine's drift): {drift}")
    if f.get("headline_ratio_over_alone_ratio"):
        rr = stats.Interval(**f["headline_ratio_over_alone_ratio"]).text("{:.2f}", "×")
        verdict = "within noise" if f["ratio_within_noise"] else "NOT within noise"
        print(f"headline's ratio to the defaults / the applied file's: {rr}: {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=4, help="Searches per arm in the second sweep (≥ 4).")
    ap.add_argument("--nic-mbps", type=float, default=25)
    ap.add_argument("--spec", type=Path, default=REPO / "examples" / "demo-sweep.yaml")
    ap.add_argument("--warm-up", type=float, default=240)
    ap.add_argument("--from-work", type=Path, help="A finished run's work folder: its two sweeps judged again.")
    a = ap.parse_args()
    if a.from_work is not None:
        report(a, a.from_work / "runs" / "demo-sweep", a.from_work / "runs" / "written-alone", None)
        return
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="kt-written-alone-"))
    with testbed(work / "tb", network="shaped", nic_mb_s=a.nic_mbps, subnet="198.18.3", warm_up_s=a.warm_up) as tb:
        _, study, wall1 = sweep(tb, a.spec, work / "runs")
        log(f"the study took {wall1:.0f} s; its report writes recommended/")
        rep = subprocess.run([sys.executable, "-m", "kafkatune", "report", str(study)], cwd=REPO, check=False)
        if rep.returncode != 0:
            sys.exit(f"report failed with exit code {rep.returncode}")
        recommended = study / "report" / "recommended" / "producer.properties"  # kafkatune report's default folder
        if not recommended.is_file():
            sys.exit(f"the report wrote no {recommended}")
        log(f"recommended/producer.properties: {recommended.read_text().strip() or '(empty)'}")
        spec2 = second_spec(a.spec, recommended, a.repeats, work / "written-alone.yaml")
        _, second, wall2 = sweep(tb, spec2, work / "runs")
    report(
        a, study, second, {"study": round(wall1), "applied_alone": round(wall2), "total": round(time.monotonic() - t0)}
    )


def report(a: argparse.Namespace, study: Path, second: Path, wall_s: dict[str, int] | None) -> None:
    """Both sweeps' summaries judged (`figures`), printed and written to the result file."""
    f = figures(*(Summary.from_json(json.loads((d / "summary.json").read_text())) for d in (study, second)))
    f["recommended_file"] = (study / "report" / "recommended" / "producer.properties").read_text()
    f["wall_s"] = wall_s
    say(f)
    args = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}
    path = result_file("written_alone", {"args": args | {"spec": str(a.spec.relative_to(REPO))}, **f})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
