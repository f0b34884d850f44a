"""The judgement checked against known truth: simulated studies with planted effects, judged by the code that judges
real ones (sweeps.confirm), fast and deterministically.

One simulated study: Kafka's defaults and a tuned configuration that changes K keys, each key with a planted effect
(MB/s lost when it is put back alone; most 0). Every run is an independent search's answer: the sustainable rate
times lognormal noise (`noise`) and the search's own scatter (the highest rate it held lies up to `resolution` below
the limit); the two together are the between-run spread (`spread`) effects are planted in units of. The
confirmation measures both configurations `repeats` times and chooses the higher mean, as sweeps.confirm.summary
does; only when the tuned one is chosen does the ablation run (`ablate` runs of it and of each key put back), and
sweeps.ablate.effects judges every key.

Over many studies: the family-wise false-positive rate (a study that recommends any key with no effect), the power
(the planted key recommended) and the bias of its reported effect (the runs that chose the winner, if reused, make it
look better than it is).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from records.confirmation import KeyEffect
from sweeps import ablate, confirm
from sweeps.spec import Spec, parse_spec

# Keys a tuned configuration may change, with a non-default value each that passes the cross-key rules together.
KEYS: tuple[tuple[str, int | str], ...] = (
    ("batch.size", 131072),
    ("linger.ms", 20),
    ("compression.type", "lz4"),
    ("buffer.memory", 67108864),
    ("max.in.flight.requests.per.connection", 2),
    ("fetch.min.bytes", 1024),
    ("max.partition.fetch.bytes", 2097152),
    ("num.io.threads", 16),
)


@dataclass(frozen=True)
class Truth:
    """One simulated study's truth: the defaults' and the tuned configuration's rates (MB/s), and each key's effect."""

    defaults_mb_s: float
    tuned_mb_s: float
    effects: tuple[float, ...]  # one per key of KEYS[:K], MB/s lost when that key alone is put back


@dataclass(frozen=True)
class Design:
    repeats: int = 4  # confirmation runs per configuration
    ablate: int = 4  # ablation runs per arm
    noise: float = 0.06  # lognormal sd of a run's answer (between-run spread)
    resolution: float = 0.06  # the search's


def spec_for(k: int, design: Design) -> tuple[Spec, dict[str, int | str]]:
    """A sustainable-rate spec with the design's resolution, and a tuned configuration changing the first k keys."""
    spec = parse_spec(
        {
            "name": "sim",
            "cluster": {"testbed": True},
            "workload": {"partitionsPerTopic": 6},
            "plan": "joint",
            "params": {"batch.size": {"choices": [131072]}},
            "trials": 1,
            "search": {"resolution": design.resolution},
        }
    )
    return spec, dict(KEYS[:k])


def _quantized(rng: random.Random, resolution: float) -> float:
    """A search's answer as a share of its expected answer: the highest rate held lies up to `resolution` below the
    limit (uniformly, on a log scale); the sustainable rate is what a search answers on average."""
    r = math.log1p(resolution)
    return math.exp(-rng.random() * r) / ((1 - math.exp(-r)) / r) if r else 1.0


def spread(design: Design) -> float:
    """The between-run sd of a run's answer, relative: the runs' noise and the search's resolution together."""
    return math.sqrt(design.noise**2 + math.log1p(design.resolution) ** 2 / 12)


def _run(
    rng: random.Random, mb_s: float, design: Design, label: str, i: int, config: Mapping[str, Any] | None = None
) -> confirm.Repeat:
    value = mb_s * math.exp(rng.gauss(0.0, design.noise)) * _quantized(rng, design.resolution)
    return confirm.Repeat(value, True, (), f"{label}-{i}", config or {}, value * 1e6 / 1024)


def study(truth: Truth, design: Design, rng: random.Random) -> list[KeyEffect] | None:
    """One study judged: every key's row from sweeps.ablate.effects, or None when the defaults were chosen (no
    ablation ran)."""
    k = len(truth.effects)
    spec, tuned = spec_for(k, design)
    confirmed = {
        confirm.DEFAULTS: [_run(rng, truth.defaults_mb_s, design, "d", i) for i in range(design.repeats)],
        "tuned": [_run(rng, truth.tuned_mb_s, design, "t", i, tuned) for i in range(design.repeats)],
    }
    judged = confirm.summary(confirmed)
    if judged.chosen != "tuned":
        return None
    runs = {confirm.RECOMMENDED: [_run(rng, truth.tuned_mb_s, design, "r", i) for i in range(design.ablate)]}
    for (key, _), e in zip(KEYS[:k], truth.effects, strict=True):
        runs[f"without:{key}"] = [_run(rng, truth.tuned_mb_s - e, design, key, i) for i in range(design.ablate)]
    return ablate.effects(spec, tuned, runs)


@dataclass(frozen=True)
class Figures:
    studies: int  # studies that reached the ablation
    false_positive_rate: float | None  # studies recommending a key with no effect, of those
    power: float | None  # studies recommending the planted key, of those
    bias: float | None  # mean (reported - planted) / planted effect of the planted key


def run_many(k: int, planted: float, design: Design, n: int, seed: int, *, base_mb_s: float = 10.0) -> Figures:
    """`n` studies with k keys, the first with effect `planted` (in between-run sds of the tuned rate, `spread`; 0:
    none), the rest none. The tuned and default configurations differ by the planted effect only."""
    rng = random.Random(seed)
    sd = spread(design) * base_mb_s
    effect = planted * sd
    truth = Truth(base_mb_s - effect, base_mb_s, (effect, *([0.0] * (k - 1))))
    fp = hit = reached = 0
    errs: list[float] = []
    for _ in range(n):
        rows = study(truth, design, rng)
        if rows is None:
            continue
        reached += 1
        by = {r.key: r for r in rows}
        zero = [by[key] for (key, _), e in zip(KEYS[:k], truth.effects, strict=True) if e == 0]
        fp += any(r.beyond_noise for r in zero)
        if effect:
            first = by[KEYS[0][0]]
            hit += first.beyond_noise
            if first.effect_mb_s is not None:
                errs.append((first.effect_mb_s - effect) / effect)
    return Figures(
        reached,
        fp / reached if reached and (k > 1 or not effect) else None,
        hit / reached if reached and effect else None,
        statistics.fmean(errs) if errs else None,
    )


def table(ks: Sequence[int], design: Design, n: int, seed: int = 1) -> dict[str, Any]:
    """The false-positive rate for each k with no effect, and power and bias with one effect of 2 sds."""
    out: dict[str, Any] = {"design": design.__dict__, "studies_per_row": n, "null": {}, "planted_2sd": {}}
    for k in ks:
        out["null"][str(k)] = run_many(k, 0.0, design, n, seed + k).__dict__
        out["planted_2sd"][str(k)] = run_many(k, 2.0, design, n, seed + 100 + k).__dict__
    return out
