"""The judgement against known truth (sweeps.simulate): simulated studies with planted effects, judged by the code
that judges real ones. Prints, per number of changed keys K, the family-wise false-positive rate with no effect,
and the power and bias with one effect of 2 between-run sds; writes benchmarks/results/judgement_sim.json.

    .venv/bin/python benchmarks/judgement_sim.py [--studies 500] [--keys 1,2,4,8] [--label after]
"""

from __future__ import annotations

import argparse
import json

from _common import REPO, result_file

from sweeps.simulate import Design, table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", type=int, default=500)
    ap.add_argument("--keys", default="1,2,4,8")
    ap.add_argument("--repeats", type=int, default=4, help="runs per arm (confirmation and ablation)")
    ap.add_argument("--label", default="after", help="the result file's key: before (the old code) or after")
    ap.add_argument("--quick", action="store_true", help="100 studies")
    a = ap.parse_args()
    n = 100 if a.quick else a.studies
    ks = [int(k) for k in a.keys.split(",")]
    got = table(ks, Design(repeats=a.repeats, ablate=a.repeats), n)
    for k in ks:
        null, planted = got["null"][str(k)], got["planted_2sd"][str(k)]
        fp = planted["false_positive_rate"]
        print(
            f"K={k}: no effect: {null['false_positive_rate']:.3f} of {null['studies']} studies recommended a key; "
            f"one effect of 2 sd: power {planted['power']:.3f}, bias {planted['bias']:+.3f}"
            + (f", false positives {fp:.3f}" if fp is not None else "")
        )
    path = REPO / "benchmarks" / "results" / "judgement_sim.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    runs = {k: v for k, v in (old.get("runs") or {}).items() if k != a.label}
    result_file("judgement_sim", {"runs": {**runs, a.label: got}})


if __name__ == "__main__":
    main()
