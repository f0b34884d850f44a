"""`kafkatune diff`: a change is called only when Welch's interval over repeats excludes 0, in the direction that
is better for the metric; one run a side is shown and not judged; a study's side is its confirmation repeats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core import files
from tests.helpers import FIXTURES, cli, kafkatune


def _run(d: Path, mb_s: float, e2e_p99: float, workload: str = "w") -> Path:
    """A run folder as `bench` writes it, with only what diff reads."""
    lat = {"p50": e2e_p99 / 4, "p99": e2e_p99, "p99.9": e2e_p99 * 2}
    files.write_json(
        d / "result.json",
        {
            "schema_version": 1,
            "workload": workload,
            "messageSize": 1000,
            "summary": {
                "mode": "max-rate",
                "consume_mb_s": mb_s,
                "consume_msg_s": mb_s * 1000,
                "publish_latency_ms": lat,
                "end_to_end_latency_ms": lat,
            },
        },
    )
    return d


def _diff(*sides: str) -> dict[str, Any]:
    proc = kafkatune("diff", *sides, "--json")
    assert proc.returncode == 0, proc.stderr
    return {m["metric"]: m for m in json.loads(proc.stdout)["metrics"]}


def test_a_change_beyond_the_noise_of_repeats_is_called_and_one_within_it_is_not(tmp_path: Path) -> None:
    for i, (a, b, c) in enumerate(((10.0, 12.0, 10.1), (10.2, 12.1, 9.8), (9.9, 11.8, 10.3))):
        _run(tmp_path / f"base-{i}", a, 50.0 + i)
        _run(tmp_path / f"faster-{i}", b, 30.0 + i)  # more throughput and a lower p99: better twice
        _run(tmp_path / f"same-{i}", c, 50.5 - i)
    better = _diff(str(tmp_path / "base-*"), str(tmp_path / "faster-*"))
    assert better["mb_s"]["verdict"] == "better" and better["mb_s"]["change"]["low"] > 0
    assert better["e2e_p99_ms"]["verdict"] == "better" and better["e2e_p99_ms"]["change"]["high"] < 0
    assert better["mb_s"]["baseline"]["n"] == 3 and abs(better["mb_s"]["change_pct"] - 19.4) < 0.2
    same = _diff(str(tmp_path / "base-*"), str(tmp_path / "same-*"))
    assert same["mb_s"]["verdict"] == "no change beyond noise"
    assert same["mb_s"]["change"]["low"] < 0 < same["mb_s"]["change"]["high"]
    worse = _diff(str(tmp_path / "faster-*"), str(tmp_path / "base-*"))
    assert worse["mb_s"]["verdict"] == "worse" and worse["e2e_p99_ms"]["verdict"] == "worse"
    one = _diff(str(tmp_path / "base-0"), str(tmp_path / "faster-0"))  # one run each: shown, not judged
    assert one["mb_s"]["verdict"].startswith("not judged") and one["mb_s"]["change"]["estimate"] == 2.0


def test_bad_sides_are_refused_with_what_to_give(tmp_path: Path) -> None:
    r = cli("diff", str(tmp_path / "none-*"), str(tmp_path))
    assert r.returncode == 2 and "matches nothing" in r.stderr, r.stderr
    r = cli("diff", str(tmp_path))
    assert r.returncode == 2 and "quote a glob" in r.stderr, r.stderr
    (tmp_path / "bad.json").write_text('{"workload": "x"}')
    r = cli("diff", str(tmp_path / "bad.json"), str(_run(tmp_path / "r", 1.0, 1.0)))
    assert r.returncode == 2 and "not an OpenMessaging Benchmark result: driver: missing" in r.stderr, r.stderr


def test_a_study_side_is_its_confirmation_repeats_and_label_picks_a_candidate(tmp_path: Path) -> None:
    study = tmp_path / "s"
    files.write_json(
        study / "summary.json",
        {
            "schema_version": 1,
            "study": "s",
            "objective": "throughput_mb_s",
            "confirmation": {
                "chosen": "stage#1",
                "candidates": [
                    {
                        "label": "stage#1",
                        "config": {},
                        "repeats": [20.0, 21.0, 20.5],
                        "trial_ids": ["c-1", "c-3", "c-5"],
                    },
                    {
                        "label": "baseline:kafka-defaults",
                        "config": {},
                        "repeats": [10.0, 10.4, 9.8],
                        "trial_ids": ["c-0", "c-2", "c-4"],
                    },
                ],
            },
        },
    )
    d = _diff(f"{study}#baseline:kafka-defaults", str(study))
    assert d["mb_s"]["verdict"] == "better" and d["mb_s"]["candidate"]["estimate"] == 20.5
    r = cli("diff", f"{study}#nope", str(study))
    assert r.returncode == 2 and "there are: stage#1, baseline:kafka-defaults" in r.stderr, r.stderr


def test_a_recorded_studys_candidates_compare_on_their_sustainable_rates_and_a_probe_is_refused() -> None:
    """The real tuned sweep recorded on the shaped testbed: its chosen configuration against Kafka's defaults, each
    side its 3 confirmation searches, and the max-rate probe of one of them, which measured something else."""
    study = str(FIXTURES / "recorded" / "shaped-tuned")
    out = cli("diff", f"{study}#baseline:kafka-defaults", study, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["baseline"]["measures"] == doc["candidate"]["measures"] == "sustainable rate"
    assert [Path(r).name for r in doc["candidate"]["runs"]] == ["confirm-001", "confirm-003", "confirm-005"]
    mb_s = next(m for m in doc["metrics"] if m["metric"] == "mb_s")
    assert mb_s["verdict"] == "better" and mb_s["change"]["low"] > 0 and mb_s["change"]["n"] == 6
    # latency on the chosen side is its operating point's one run: shown, not judged against a side without it
    assert any("the operating point" in n for n in doc["candidate"]["notes"])
    assert not any(m["metric"].startswith("e2e") for m in doc["metrics"])
    probe = cli("diff", study, f"{study}/trials/confirm-001")
    assert probe.returncode == 2 and "not comparable" in probe.stderr and "max-rate" in probe.stderr, probe.stderr
