"""The confirmation, the ablation and the operating point's fit are functions of a study's records: recomputed from
a real tuned sweep recorded once on the shaped testbed (tests/fixtures/recorded/shaped-tuned: its Optuna storage,
trial records and analysis; how it was made is in that folder's README.md), they give exactly the verdicts the
sweep wrote, and the report built from those records writes the files the verdict says and states one diagnosis
once. Deterministic: no server, no noise; the live sweep is tests/e2e/test_shaped.py."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import optuna
import pytest

from core.typed import from_json, to_json
from loadgen.knee import fit_knee
from records.confirmation import Confirmation, OperatingPoint
from reports import study as report
from reports.properties import parse
from sweeps import ablate, confirm, hold, storage
from sweeps.hold import chosen_steps
from sweeps.spec import load_spec
from tests.helpers import FIXTURES

RECORDED = FIXTURES / "recorded" / "shaped-tuned"


def plain(x: Any) -> Any:
    """As the summary file holds it (records as objects, tuples as lists)."""
    return json.loads(json.dumps(to_json(x)))


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    """A copy of the recorded study: a report writes into its folder."""
    return Path(shutil.copytree(RECORDED, tmp_path / RECORDED.name))


def _runs(run: Path, phase: str) -> dict[str, list[confirm.Repeat]]:
    storage = optuna.storages.RDBStorage(f"sqlite:///{run / 'optuna.db'}")
    name = load_spec(run / "spec.yaml").name
    return confirm.measured(optuna.load_study(study_name=f"{name}.{phase}", storage=storage))


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


def test_the_confirmation_and_the_ablation_are_recomputed_from_the_records(run: Path) -> None:
    s = _summary(run)
    judged = confirm.summary(_runs(run, "confirm"))
    wrote = Confirmation.from_json(s["confirmation"])
    for key in ("candidates", "noise", "chosen", "runner_up", "vs_defaults"):
        assert getattr(judged, key) == getattr(wrote, key), key
    chosen = judged.arm(None)
    assert chosen is not None
    effects = ablate.effects(load_spec(run / "spec.yaml"), chosen.config, _runs(run, "ablate"))
    assert plain([e for e in effects if e.beyond_noise]) == s["recommended"]
    assert plain([e for e in effects if not e.beyond_noise]) == s["no_measurable_effect"]


def test_each_key_put_back_is_judged_on_its_own_runs(run: Path) -> None:
    """Each key differing from the defaults is put back alone on runs of its own (never the confirmation's), judged
    by its interval, recommended exactly when beyond noise at the family's level."""
    s = _summary(run)
    judged = {e["key"]: e for e in s["recommended"] + s["no_measurable_effect"]}
    assert set(judged) == {"partitions", "buffer.memory"}
    assert (judged["partitions"]["old"], judged["partitions"]["new"]) == ("1", "6")
    assert (judged["buffer.memory"]["old"], judged["buffer.memory"]["new"]) == ("33554432", "67108864")
    confirmation = {t for c in s["confirmation"]["candidates"] for t in c["trial_ids"]}
    for e in judged.values():
        # its runs: 2 without it, 2 of the recommended configuration in the ablation (never the confirmation's)
        assert e["n"] == 4 and len(set(e["trial_ids"])) == 4 and not confirmation & set(e["trial_ids"]), e
        assert all(t.startswith("ablate-") for t in e["trial_ids"]), e
        assert e["interval"]["low"] <= e["effect_mb_s"] <= e["interval"]["high"] and e["interval"]["n"] == 4, e
        assert (e in s["recommended"]) == e["beyond_noise"], e
        assert e["beyond_noise"] or "no measurable effect" in e["why"], e
    # a "no measurable effect" says how large an effect it leaves open when that is beyond ablate.min_effect
    mine = [r.value for r in _runs(run, "ablate")[confirm.RECOMMENDED] if r.value is not None]
    floor = load_spec(run / "spec.yaml").ablate.min_effect * sum(mine) / len(mine)
    for e in s["no_measurable_effect"]:
        reach = max(abs(e["interval"]["low"]), abs(e["interval"]["high"]))
        assert ("more ablate.repeats narrow the interval" in e["why"]) == (reach > floor), (e, floor)
    cands = s["confirmation"]["candidates"]
    assert {c["label"] for c in cands} == {"baseline:kafka-defaults", "producer#0"}
    assert all(len(c["repeats"]) == 3 and c["interval"]["low"] is not None for c in cands)
    assert s["noise"]["between_run_sd_mb_s"] > 0


def test_the_operating_points_first_try_is_the_fit_of_the_chosen_searches(run: Path) -> None:
    s = _summary(run)
    op = s["operating_point"]
    chosen = next(c for c in s["confirmation"]["candidates"] if c["label"] == s["confirmation"]["chosen"])
    knee = fit_knee(chosen_steps(run, chosen["trial_ids"]), s["search"]["max_step_s"] // 2)
    assert knee is not None and op["fit"] == pytest.approx(asdict(knee))
    z = load_spec(run / "spec.yaml").hold.z
    first, why = hold.pick(knee, chosen["rates_msg_s"], s["slo"]["p99_e2e_ms"], z)
    assert first is not None and op["tries"][0]["rate_msg_s"] == pytest.approx(first), (first, why, op["tries"])
    assert op["rate_msg_s"] <= min(chosen["rates_msg_s"])


def test_the_report_writes_the_files_the_verdict_says_and_one_diagnosis(run: Path) -> None:
    s = _summary(run)
    report.build(run, progress=lambda m: None)
    rec = {e["key"] for e in s["recommended"]}
    files = run / "report" / "recommended"
    want = {"buffer.memory": "67108864"} if "buffer.memory" in rec else {}
    assert parse(files / "producer.properties") == want
    topics = (files / "topic-configs.txt").read_text() if (files / "topic-configs.txt").exists() else ""
    assert ("partitions=6" in topics) == ("partitions" in rec), topics
    md = (run / "report" / "report.md").read_text()
    assert all(k in md for k in ("partitions", "buffer.memory")) and "95 % CI" in md
    assert ("no measurable effect" in md) == bool(s["no_measurable_effect"])
    assert f"operating point: {s['operating_point']['rate_msg_s']:,.0f} msg/s" in md
    # one diagnosis, read from one of the recommended configuration's confirmation runs, stated once
    diag = [ln for ln in md.splitlines() if ln.startswith("Diagnosis (")]
    assert len(diag) == 1 and "Bound by" not in md, diag
    chosen = next(c for c in s["confirmation"]["candidates"] if c["label"] == s["confirmation"]["chosen"])
    assert diag[0][len("Diagnosis (") :].split(",")[0] in chosen["trial_ids"], (diag, chosen["trial_ids"])
    assert md.count(diag[0].split(": ", 1)[1].split(". ")[0]) == 1, diag


class Finished:
    """A finished study as the phases see it (sweeps.confirm.Phases) when a sweep is resumed on it: its studies
    from its own storage, never out of time, and nothing left to measure."""

    def __init__(self, run: Path) -> None:
        self.spec = load_spec(run / "spec.yaml")
        self.run_dir = run
        self.storage = optuna.storages.RDBStorage(f"sqlite:///{run / 'optuna.db'}")
        self.restart_now: dict[str, str] = {}

    def study(self, suffix: str, stage: Any = None) -> Any:
        return storage.study(self.storage, f"{self.spec.name}.{suffix}", self.spec.directions)

    def measure(self, st: Any, trial: Any, label: str, cfg: Any, extra: Any) -> Any:
        raise AssertionError(f"a finished study measured {label} again ({extra})")

    def out_of_time(self) -> bool:
        return False


def test_a_sweep_resumed_on_a_finished_study_measures_nothing_and_gives_its_answers(run: Path) -> None:
    """The phases after the search, run again on the recorded study (as `sweep` does when resumed after a kill):
    every repeat and the operating point's run are found done by their keys, none is measured twice, and the
    candidates, the confirmation, the ablations and the operating point are the ones the sweep wrote."""
    s, sw = _summary(run), Finished(run)
    todo = confirm.candidates(sw)
    assert plain(dict(todo)) == {c["label"]: c["config"] for c in s["confirmation"]["candidates"]}
    judged = confirm.summary(confirm.repeat(sw, "confirm", todo, sw.spec.confirm.repeats))
    assert plain(judged.candidates) == s["confirmation"]["candidates"]
    chosen = dict(todo)[judged.chosen or ""]
    without, blocked = ablate.ablations(sw.spec, chosen)
    assert not blocked and {label for label, _ in without} == {"without:partitions", "without:buffer.memory"}
    runs = confirm.repeat(sw, "ablate", [(confirm.RECOMMENDED, chosen), *without], sw.spec.ablate.repeats)
    assert plain([e for e in ablate.effects(sw.spec, chosen, runs) if e.beyond_noise]) == s["recommended"]
    announced: list[int] = []
    arm = judged.arm(None)
    assert arm is not None
    op = hold.operating_point(sw, arm, announced.append)
    assert announced == [] and op == from_json(OperatingPoint, s["operating_point"])
