"""Does the search's step length decide the LAN case's gain over Kafka's defaults? A 2 × 2 in randomized blocks.

benchmarks/tuning's `lan` scenario measured the recommendation against Kafka's defaults at 1.07–1.56× by run, while
benchmarks/reproducibility.py, on the same shaped condition and day, found the demo's best within a few per cent of
the client's own defaults (librdkafka's 1-MB batches, not Kafka's 16-KB ones). Besides the defaults, the two
measure differently: the tuning sweeps search with short steps (benchmarks/tuning/common.yaml: 3-8 judged seconds,
resolution 0.1), a bench's search with long ones (5-30 s, 0.06; loadgen.sustainable.Search).

This starts one shaped testbed (25 MB/s links, warmed until the brokers' JIT is quiet) and runs `--blocks` blocks,
each one `kafkatune bench` search (producerRate 0, p99 end-to-end SLO 100 ms, the demo's workload: 1-KB records,
6 partitions, acks=all, one producer and one consumer) of each of the four cells in a new random order: Kafka's
defaults as a sweep's baseline sets them (16-KB batches) and the demo's best (the same with batch.size 140000),
each searched with the tuning sweeps' steps (`--search`, as in common.yaml) and with the bench's own. It prints and
writes (benchmarks/results/search_steps.json; a later run search_steps_<yyyymmdd>.json, _common.new_result_name)
each cell's runs and 95 % interval, the best / defaults ratio under each search, and their ratio of ratios
(core.stats): 1 inside its interval means the gain does not depend on the step length.

    .venv/bin/python benchmarks/search_steps.py [--blocks 5] [--quick]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import REPO, bench, demo_workload, log, new_result_name, result_file, testbed

from brokerconf import catalogue
from core import stats
from core.typed import to_json
from sweeps.space import client_defaults
from testbed import netns

# Kafka's defaults as a sweep's baseline sets them (sweeps.space.client_defaults, the Java clients' values: 16-KB
# batches): a bench given only acks=all runs librdkafka's own (1-MB batches), which are not Kafka's defaults.
_DEFAULTS = client_defaults()
_SCOPES = {s: {k: v for k, v in _DEFAULTS.items() if catalogue.param(k).scope == s} for s in ("producer", "consumer")}
CONFIGS: dict[str, dict[str, Any]] = {
    "kafka-defaults": _SCOPES["producer"],
    "demo-best": {**_SCOPES["producer"], "batch.size": 140000},  # the demo study's recommendation (issue 35)
}
SEARCHES = ("tuning", "bench")  # benchmarks/tuning/common.yaml's search; the bench's own (no --search)
NIC_MB_S = 25.0
SLO_MS = 100.0


def tuning_search() -> list[str]:
    """The tuning sweeps' search settings (common.yaml's `search:`) as `kafkatune bench --search` options."""
    spec = yaml.safe_load((REPO / "benchmarks" / "tuning" / "common.yaml").read_text())
    return [x for k, v in spec["search"].items() for x in ("--search", f"{k}={v}")]


def block(tb: Any, tmp: Path, b: int, rng: random.Random) -> list[dict[str, Any]]:
    """One search of each cell, in a random order: a row per search (its rate, None when none held; its steps)."""
    cells = [(c, s) for c in CONFIGS for s in SEARCHES]
    rng.shuffle(cells)
    rows = []
    for order, (config, search) in enumerate(cells):
        wl = demo_workload(tmp / f"{config}.json", f"steps-{config}", CONFIGS[config], 0, 0.1, _SCOPES["consumer"])
        extra = tuning_search() if search == "tuning" else []
        d = bench(tb, wl, tmp / f"b{b}-{config}-{search}", SLO_MS, extra=extra)
        sus = d["sustainable"]
        rows.append(
            {
                "block": b,
                "order": order,
                "config": config,
                "search": search,
                "mb_s": sus["mb_s"],
                "steps": [(round(st["rate_msg_s"]), st["held"], len(st["judged_s"])) for st in sus["steps"]],
                "wall_s": round(d["wall_s"], 1),
            }
        )
        held = "no rate held" if sus["mb_s"] is None else f"{sus['mb_s']:.2f} MB/s"
        log(f"block {b} {config} / {search} steps: {held}, {len(sus['steps'])} steps, {d['wall_s']:.0f} s")
    return rows


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each cell's interval, best / defaults under each search, and the ratio of those ratios (tuning / bench)."""

    def runs(config: str, search: str) -> list[float]:
        return [r["mb_s"] for r in rows if r["config"] == config and r["search"] == search and r["mb_s"] is not None]

    cells = {f"{c}/{s}": runs(c, s) for c in CONFIGS for s in SEARCHES}
    out: dict[str, Any] = {
        "cells": {k: {"mb_s": v, "interval": to_json(stats.mean_interval(v)) if v else None} for k, v in cells.items()}
    }
    for s in SEARCHES:
        r = stats.ratio(runs("demo-best", s), runs("kafka-defaults", s))
        out[f"best_vs_defaults_{s}_steps"] = to_json(r) if r else None
    for c in CONFIGS:
        r = stats.ratio(runs(c, "tuning"), runs(c, "bench"))
        out[f"{c}_tuning_vs_bench_steps"] = to_json(r) if r else None
    rr = stats.ratio_of_ratios(*(runs(c, s) for s in SEARCHES for c in ("demo-best", "kafka-defaults")))
    out["gain_tuning_vs_bench_steps"] = to_json(rr) if rr else None
    out["wall_s_median"] = {s: statistics.median(r["wall_s"] for r in rows if r["search"] == s) for s in SEARCHES}
    return out


def show(f: dict[str, Any]) -> None:
    for k, c in f["cells"].items():
        iv = c["interval"]
        print(
            f"{k:<28} n={len(c['mb_s'])} {', '.join(f'{x:.2f}' for x in c['mb_s'])}"
            + (f"  mean {iv['estimate']:.2f} ({iv['low'] or 0:.2f}-{iv['high'] or 0:.2f})" if iv else "")
        )
    for k in (
        *(f"best_vs_defaults_{s}_steps" for s in SEARCHES),
        *(f"{c}_tuning_vs_bench_steps" for c in CONFIGS),
        "gain_tuning_vs_bench_steps",
    ):
        r = f[k]
        print(
            f"{k:<36} "
            + (
                f"{r['estimate']:.3f} (95 % CI {r['low']:.3f}-{r['high']:.3f}, n={r['n']})"
                if r and r["low"] is not None
                else "no interval"
            )
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=5, help="blocks of the four searches")
    ap.add_argument("--warm-up", type=float, default=240, help="seconds of warm-up at the most (until JIT quiet)")
    ap.add_argument("--quick", action="store_true", help="1 block, written to search_steps_quick.json")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.quick:
        a.blocks = 1
    if not netns.can_shape()[0]:
        sys.exit(f"needs the shaped testbed: {netns.can_shape()[1]}")
    rng, rows, t0 = random.Random(a.seed), [], time.monotonic()
    with (
        tempfile.TemporaryDirectory() as td,
        testbed(Path(td) / "tb", warm_up_s=a.warm_up, network="shaped", nic_mb_s=NIC_MB_S, subnet="198.18.2") as tb,
    ):
        for b in range(a.blocks):
            rows += block(tb, Path(td), b, rng)
    f = figures(rows)
    show(f)
    name = "search_steps_quick" if a.quick else new_result_name("search_steps")
    result_file(
        name,
        {
            "args": vars(a),
            "wall_s": round(time.monotonic() - t0),
            **f,
            "searches": rows,
            "tuning_search": tuning_search(),
        },
    )


if __name__ == "__main__":
    main()
