"""advisor.verdict on a confirmation whose winner beat Kafka's defaults but whose only changed key made no
difference beyond noise when put back alone (the demo of 2026-11-28: +2.87 MB/s over the defaults, batch.size no
measurable effect): nothing is to be applied, so nothing is promised. And the objective's words for the SLO."""

from __future__ import annotations

from typing import Any

from advisor.verdict import (
    SCOPE,
    candidate_lines,
    choice_lines,
    current_changes,
    key_lines,
    objective_line,
    rule_confirmed,
)
from loadgen.sustainable import Slo
from records.summary import Summary


def _sweep(recommended: list[dict[str, Any]], none: list[dict[str, Any]], not_ablated: list[dict[str, Any]]) -> dict:
    iv = {"estimate": 16.0, "low": 14.8, "high": 17.2, "n": 3, "sd": 0.5, "level": 0.95}
    cands = [
        {
            "label": "producer#0",
            "config": {},
            "repeats": [],
            "interval": iv,
            "trial_ids": ["confirm-000", "confirm-002"],
        },
        {
            "label": "baseline:kafka-defaults",
            "config": {},
            "repeats": [],
            "interval": {**iv, "estimate": 13.1},
            "trial_ids": ["confirm-001"],
        },
    ]
    diff = {"estimate": 2.87, "low": 1.92, "high": 3.82, "n": 6, "sd": 0.6, "level": 0.9}
    conf = {
        "candidates": cands,
        "chosen": "producer#0",
        "not_ablated": not_ablated,
        "vs_defaults": {"label": "baseline:kafka-defaults", "difference": diff, "distinguishable": True},
    }
    return {"study": "s", "confirmation": conf, "recommended": recommended, "no_measurable_effect": none}


def _typed(sweep: dict[str, Any]) -> Summary:
    return Summary.from_json(sweep)


def _key(key: str) -> dict[str, Any]:
    return {"key": key, "old": None, "new": "x"}


def test_what_the_choice_changes_from_the_current_configuration_is_listed_and_judged_as_a_whole() -> None:
    """A broker key the chosen configuration leaves out ran as the cluster runs it (current's value); a client key
    left out runs Kafka's default: the inherited 8-KB fetch and the fsync per message are both changes."""
    current = {"batch.size": 4096, "max.partition.fetch.bytes": 8192, "log.flush.interval.messages": "1"}
    chosen = {"batch.size": 131072, "log.flush.interval.messages": "9223372036854775807"}
    assert current_changes(chosen, current) == [
        ("batch.size", "4096", "131072"),
        ("log.flush.interval.messages", "1", "9223372036854775807"),
        ("max.partition.fetch.bytes", "8192", "1048576"),
    ]
    assert current_changes({"batch.size": 4096}, current) == [("max.partition.fetch.bytes", "8192", "1048576")]
    sw = _sweep([], [], [])
    sw["confirmation"]["candidates"][0]["config"] = chosen
    cur = {"label": "baseline:current", "config": current, "repeats": [], "trial_ids": ["confirm-003"]}
    sw["confirmation"]["candidates"].append(cur)
    diff = {"estimate": 4.0, "low": 3.0, "high": 5.0, "n": 6, "sd": 0.6, "level": 0.9}
    sw["confirmation"]["vs_current"] = {"label": "baseline:current", "difference": diff, "distinguishable": True}
    said = "\n".join(choice_lines(_typed(sw)))
    assert "the recommended one changes (judged as a whole): batch.size 4096 -> 131072; log.flush" in said, said
    sw["confirmation"]["vs_current"]["distinguishable"] = False
    said = "\n".join(choice_lines(_typed(sw)))
    assert "no change from the current configuration is shown to help; the chosen one would change: batch" in said


def test_the_current_configuration_measured_under_a_search_label_is_still_compared_and_diffed() -> None:
    """The confirmation measures no configuration twice, so a current configuration equal to a search's best runs
    as that candidate (sweeps.confirm.current_as); when another is chosen, the comparison and the changes are still
    stated against it, naming the label it ran as."""
    sw = _sweep([], [], [])
    sw["confirmation"]["candidates"][0]["config"] = {"batch.size": 131072}
    same = {"label": "broker#2", "config": {"num.io.threads": 1}, "repeats": [], "trial_ids": ["confirm-003"]}
    sw["confirmation"]["candidates"].append(same)
    diff = {"estimate": 4.0, "low": 3.0, "high": 5.0, "n": 6, "sd": 0.6, "level": 0.9}
    ratio = {"estimate": 1.3, "low": 1.2, "high": 1.4, "n": 6, "sd": None, "level": 0.9}
    vs = {"label": "broker#2", "difference": diff, "distinguishable": True, "ratio": ratio}
    sw["confirmation"]["vs_current"] = vs
    said = "\n".join(choice_lines(_typed(sw)))
    assert "1.30 × (90 % CI 1.20–1.40, n=6) the current configuration (measured as broker#2)" in said, said
    assert "the recommended one changes (judged as a whole): batch.size 16384 -> 131072" in said, said


def test_a_winner_whose_keys_made_no_difference_promises_no_gain() -> None:
    (r,) = rule_confirmed(_typed(_sweep([], [_key("batch.size")], [])))
    assert r.title == "No key to apply: batch.size put back alone made no difference beyond noise", r.title
    assert r.action == {} and r.expected_gain_mb_s is None and r.severity == "info"
    assert "difference +2.87 MB/s" in " ".join(r.evidence)  # the confirmation's figure stays, as evidence
    (r,) = rule_confirmed(_typed(_sweep([], [], [_key("partitions"), _key("linger.ms")])))
    assert r.title == "No key to apply: partitions, linger.ms not put back alone (no ablation)", r.title


def test_a_key_beyond_noise_is_applied_with_the_confirmations_gain() -> None:
    key = {
        "key": "batch.size",
        "old": "16384",
        "new": "83559",
        "interval": {"estimate": 2.5, "low": 1.0, "high": 4.0, "n": 4, "sd": 0.5, "level": 0.95},
        "beyond_noise": True,
    }
    (r,) = rule_confirmed(_typed(_sweep([key], [], [])))
    assert r.title == "Apply the confirmed configuration's 1 key(s) with an effect beyond noise"
    assert r.action == {"batch.size": "83559"} and r.expected_gain_mb_s == 2.87 and r.severity == "high"


def test_keys_kept_as_a_group_are_not_said_to_be_beyond_noise_alone() -> None:
    """The written phase keeps keys that stand in for each other (sweeps.written): they are applied, under their
    own heading with why, not listed among the keys whose effect alone is beyond noise."""
    iv = {"estimate": 0.4, "low": -3.0, "high": 3.8, "n": 4, "sd": 1.0, "level": 0.95}
    alone = {**_key("compression.type"), "interval": {**iv, "estimate": 3.0, "low": 1.0}, "beyond_noise": True}
    group = [{**_key(k), "interval": iv, "why": "they stand in for each other"} for k in ("batch.size", "linger.ms")]
    s = _typed(_sweep([alone, *group], [], []))
    text = "\n".join(key_lines(s))
    beyond, kept = text.split("kept as a group (in the recommended files): they stand in for each other")
    assert "compression.type" in beyond and "batch.size" not in beyond and "linger.ms" not in beyond, text
    assert "batch.size: (unset) -> x: put back alone +0.40 MB/s" in kept, text
    (r,) = rule_confirmed(s)
    assert r.title == "Apply the confirmed configuration's 3 key(s), 1 beyond noise alone, as a group", r.title
    assert r.action == {"compression.type": "x", "batch.size": "x", "linger.ms": "x"}


def test_the_objective_states_the_studys_slo_in_the_words_the_search_judges_it_by() -> None:
    both = objective_line("sustainable_mb_s", {"p99_e2e_ms": 100.0, "p99_publish_ms": 50.0})
    assert Slo(100.0, 50.0).describe() in both
    assert "p99 end-to-end ≤ 100 ms and p99 publish ≤ 50 ms" in both
    assert "within p99 publish ≤ 20 ms (" in objective_line(
        "sustainable_mb_s", {"p99_e2e_ms": None, "p99_publish_ms": 20.0}
    )
    assert "latency not bounded" in objective_line("throughput_mb_s", None)


def test_the_choice_is_stated_against_the_current_configuration_or_says_why_not() -> None:
    sw = _sweep([], [], [])
    ratio = {"estimate": 1.22, "low": 1.1, "high": 1.35, "n": 6, "sd": None, "level": 0.9}
    diff = {"estimate": 2.1, "low": 1.2, "high": 3.0, "n": 6, "sd": 0.6, "level": 0.9}
    sw["confirmation"]["vs_current"] = {
        "label": "baseline:current",
        "difference": diff,
        "distinguishable": False,
        "ratio": ratio,
    }
    said = "\n".join(choice_lines(_typed(sw)))
    assert "NOT distinguishable from the current configuration: 1.22 × (90 % CI 1.10–1.35, n=6) the current" in said, (
        said
    )
    del sw["confirmation"]["vs_current"]
    sw["baselines"] = {"current": {"mb_s": 9.0, "config": {"acks": "1", "batch.size": 16384}}}
    assert "not confirmed on its own: it runs acks=1 (the confirmation holds acks=all only)" in "\n".join(
        choice_lines(_typed(sw))
    )
    sw["confirmation"]["candidates"][0]["config"] = {"batch.size": 140000}
    sw["baselines"] = {"current": {"mb_s": 9.0, "config": {"acks": "all"}}}  # Kafka's defaults' arm, not chosen
    said = "\n".join(choice_lines(_typed(sw)))
    assert "not confirmed on its own: it is baseline:kafka-defaults's configuration above" in said, said
    sw["baselines"] = {"current": {"mb_s": 9.0, "config": {"acks": "all", "batch.size": "140000"}}}
    said = "\n".join(choice_lines(_typed(sw)))  # the search's best is the current configuration
    assert "the current configuration (producer#0's configuration) measured best: no change is recommended" in said


def test_an_older_study_whose_repeats_shared_a_rate_grid_says_its_resolution() -> None:
    sw = _sweep([], [], [])
    assert not any("resolution" in x for x in choice_lines(_typed(sw)))
    sw["confirmation"]["resolution"] = {"step": 0.06}  # records.confirmation.Resolution
    said = "\n".join(choice_lines(_typed(sw)))
    assert "intervals include the search's resolution: a sustainable rate is known to within 6%" in said, said


def test_a_confirmations_intervals_say_they_are_its_own_runs_not_another_days() -> None:
    """Runs of one study share a cluster and a stretch of time; what moves between days is not in their intervals."""
    said = candidate_lines(_typed(_sweep([], [], [])))
    assert said[-1] == SCOPE and "another day" in SCOPE
    assert SCOPE not in candidate_lines(_typed({"study": "s"}))  # no confirmation: no intervals to qualify
