"""The recommended configuration vs Kafka's defaults, as sustainable rates with intervals, on the shaped testbed;
and what the sustainable-rate search costs per trial next to one max-rate trial.

Starts a private shaped testbed (`--nic-mbps` per host link, both directions), warms it, and runs
`kafkatune sweep SPEC` against it (default examples/demo-sweep.yaml: objective sustainable_mb_s, p99
end-to-end ≤ 100 ms). The sweep's confirmation re-measures Kafka's defaults and the best of each stage on the
warm cluster, interleaved (A B C A B C …), `confirm.repeats` (≥ 3) times each. Prints, from summary.json and
the trial records:

    per candidate: its runs, mean and 95 % interval; the recommended / defaults ratio with its interval
    the keys recommended (effect beyond noise) and those without a measurable effect
    cost: the max-rate run of a trial (= one max-rate trial) vs its ramp, and vs a repeat's ramp alone

    .venv/bin/python benchmarks/sweep_vs_defaults.py [--nic-mbps 25] [--spec examples/demo-sweep.yaml]
    .venv/bin/python benchmarks/sweep_vs_defaults.py --study runs/demo-sweep   # the figures of a study run already
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from _common import REPO, sweep, testbed

from advisor import verdict  # importable: _common puts the repository on the path
from records.summary import Summary


def costs(study: Path) -> dict[str, list[float]]:
    """Wall seconds per trial of the max-rate run, the ramp after it, and a repeat's ramp alone (no probe)."""
    out: dict[str, list[float]] = {"max_rate_run": [], "ramp_after_probe": [], "ramp_alone": [], "trial": []}
    for p in sorted(study.glob("trials/*/trial.json")):
        t = json.loads(p.read_text())
        ph = t.get("phases_s") or {}
        if t.get("state") != "complete" or "ramp" not in ph:
            continue
        out["trial"].append(t["total_s"])
        if "run" in ph:
            out["max_rate_run"].append(ph["run"])
            out["ramp_after_probe"].append(ph["ramp"])
        else:
            out["ramp_alone"].append(ph["ramp"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nic-mbps", type=float, default=25)
    ap.add_argument("--spec", type=Path, default=REPO / "examples" / "demo-sweep.yaml")
    ap.add_argument("--keep", type=Path, default=None, help="Copy the study folder here afterwards.")
    ap.add_argument("--study", type=Path, default=None, help="Print the figures of this finished study; run nothing.")
    a = ap.parse_args()
    if a.study:
        report(a.study, json.loads((a.study / "summary.json").read_text()), None, None)
        return
    work = Path(tempfile.mkdtemp(prefix="kt-sweep-bench-"))
    # 120 s of warm-up: the first trials (the baselines) should not measure the JIT compiler.
    with testbed(work / "tb", network="shaped", nic_mb_s=a.nic_mbps, subnet="198.18.3", warm_up_s=120) as tb:
        s, study, wall = sweep(tb, a.spec, work / "runs")
    if a.keep:
        subprocess.run(["cp", "-r", str(study), str(a.keep)], check=True)
    report(study, s, a.nic_mbps, wall)


def report(study: Path, s: dict, nic_mbps: float | None, wall: float | None) -> None:
    configured = f"{nic_mbps:g} MB/s per link configured, " if nic_mbps else ""
    print(f"testbed: {configured}ceiling {s['ceiling_mb_s'] or 0:.2f} MB/s (measured)")
    typed = Summary.from_json(s)
    print("\n".join(verdict.lines(typed)))
    vs = typed.confirmation.vs_defaults if typed.confirmation else None
    if vs and vs.ratio:
        print(f"RECOMMENDED / KAFKA DEFAULTS (sustainable rate): {vs.ratio.text('{:.2f}', '×')}")
    c = costs(study)
    med = {k: round(statistics.median(v), 1) if v else None for k, v in c.items()}
    print(
        f"cost per trial, medians (s): max-rate run {med['max_rate_run']}, its ramp {med['ramp_after_probe']}, "
        f"a repeat's ramp alone {med['ramp_alone']}; whole trial {med['trial']}"
    )
    if med["max_rate_run"] and med["ramp_after_probe"]:
        search = med["max_rate_run"] + med["ramp_after_probe"]
        print(
            f"sustainable-rate search / one max-rate trial: {search / med['max_rate_run']:.2f}× "
            f"(n={len(c['max_rate_run'])}); a repeat with a known max rate: "
            + (
                f"{med['ramp_alone'] / med['max_rate_run']:.2f}× (n={len(c['ramp_alone'])})"
                if med["ramp_alone"]
                else "none"
            )
        )
    inv = s["this_invocation"]
    print(
        f"sweep: {inv['trials']} trials in {inv['wall_s'] / 60:.1f} min"
        + (f" (bench wall {wall / 60:.1f} min)" if wall else "")
    )


if __name__ == "__main__":
    main()
