"""What a study's confirmation and ablations established, in sentences: read from `summary.json` (written once
by the sweep, sweeps.confirm) and shown by `sweep`, `advise` and the report alike.

Every figure carries n and its 95 % interval; a winner that cannot be told apart from the runner-up or from
Kafka's defaults is said to be so; a key whose effect is within noise is listed as having none.
"""

from __future__ import annotations

import math
from typing import Any

from advisor.recommendation import Recommendation
from core.stats import Interval
from loadgen.sustainable import Slo

CURRENT_WORDS = "the current configuration"  # the `current` baseline (sweeps.current): what the cluster runs now


def interval(d: dict[str, Any] | None) -> Interval | None:
    return Interval(**d) if d else None


def objective_line(s: dict[str, Any]) -> str:
    if s.get("objective") == "sustainable_mb_s":
        within = Slo.from_json(s.get("slo")).describe()
        return (
            f"objective: the sustainable rate, the highest rate delivered within {within} (a max-rate probe, then a "
            "search of fixed rates: bracket, bisect, confirm)"
        )
    return "objective: max-rate throughput (consumer-confirmed MB/s at the producers' maximum; latency not bounded)"


def candidate_lines(s: dict[str, Any]) -> list[str]:
    conf = s.get("confirmation")
    if not conf:
        return ["no confirmation phase: every figure is one run, without an interval"]
    lines = [_arm_line(c) for c in conf["candidates"]]
    noise = conf.get("noise") or {}
    if noise.get("between_run_sd_mb_s") is not None:
        lines.append(
            f"between-run noise: sd {noise['between_run_sd_mb_s']:.2f} MB/s ({noise['how']}, df {noise['df']})"
        )
    return lines


def _arm_line(c: dict[str, Any]) -> str:
    """One configuration's repeats and interval (sweeps.confirm.candidate)."""
    iv = interval(c["interval"])
    runs = ", ".join("none" if v is None else f"{v:.2f}" for v in c["repeats"])
    fig = iv.text(unit="MB/s") if iv else "no complete run"
    tail = "" if c["eligible"] else f"; not eligible: {'; '.join(c['why_not']) or 'a run failed'}"
    return f"  {c['label']:<30} {fig}  [runs {runs}]{tail}"


def _vs_defaults_line(vs: dict[str, Any], what: str = "Kafka's defaults") -> str:
    """The chosen configuration against a baseline (`what`): its ratio and difference, or that it is not
    distinguishable from it."""
    r, d = interval(vs.get("ratio")), interval(vs["difference"])
    assert d is not None
    ratio = f"{r.text('{:.2f}', '×')} {what}" if r else f"no ratio ({what} measured nothing)"
    if vs["distinguishable"]:
        return f"  {ratio}; difference {d.text(unit='MB/s')}"
    return f"  NOT distinguishable from {what}: {ratio}; difference {d.text(unit='MB/s')}"


def written_lines(s: dict[str, Any]) -> list[str]:
    """The configuration the recommended files hold, measured as written (sweeps.written): its own blocks with the
    full configuration and the defaults, whether the dropped keys stood in for each other, and its lead."""
    w = (s.get("confirmation") or {}).get("written")
    if not w:
        return []
    lines = ["as written (what the recommended files hold), in new randomized blocks:"]
    lines += [_arm_line(a) for a in w["arms"]]
    fw = w.get("full_vs_written")
    if fw:
        d = interval(fw["difference"])
        assert d is not None
        said = "ahead beyond noise" if fw["distinguishable"] else "not ahead beyond noise (one-sided, Holm)"
        lines.append(f"  full configuration − written: {d.text(unit='MB/s')}: {said}")
    if w["kept_as_group"]:
        lines.append(f"  kept as a group: {', '.join(w['kept_as_group'])}: {w['why_kept']}")
    elif w["dropped"]:
        lines.append(f"  the headline is the written configuration's: without {', '.join(w['dropped'])}")
    if w.get("vs_defaults"):
        lines.append(_vs_defaults_line(w["vs_defaults"]))
    return lines


def choice_lines(s: dict[str, Any]) -> list[str]:
    conf = s.get("confirmation")
    if not conf:
        return []
    if conf.get("chosen") is None:
        return ["no configuration held its constraints in every confirmation run: nothing is recommended"]
    lines = [f"recommended configuration: {conf['chosen']} (best mean of the confirmation runs)"]
    ru = conf.get("runner_up")
    if ru:
        d = interval(ru["difference"])
        assert d is not None
        if ru["distinguishable"]:
            lines.append(f"  ahead of the runner-up {ru['label']} by {d.text(unit='MB/s')}")
        else:
            lines.append(
                f"  NOT distinguishable from the runner-up {ru['label']}: difference {d.text(unit='MB/s')} includes 0"
            )
    vs = conf.get("vs_defaults")
    if vs:
        lines.append(_vs_defaults_line(vs))
    elif conf["chosen"] == "baseline:kafka-defaults":
        lines.append("  Kafka's defaults measured best: no change is recommended")
    labels = {c["label"] for c in conf.get("candidates") or []}
    if conf.get("vs_current"):
        lines.append(_vs_defaults_line(conf["vs_current"], CURRENT_WORDS))
    elif conf["chosen"] == "baseline:current":
        lines.append(f"  {CURRENT_WORDS} measured best: no change is recommended")
    elif (cur := (s.get("baselines") or {}).get("current")) and "baseline:current" not in labels:
        acks = str((cur.get("config") or {}).get("acks"))
        why = (
            "it is the same configuration as another candidate above"
            if acks == "all"
            else f"it runs acks={acks} (the confirmation holds acks=all only)"
        )
        lines.append(f"  {CURRENT_WORDS} was not confirmed on its own: {why}")
    step = (conf.get("resolution") or {}).get("step")
    if step:
        lines.append(
            f"  differences' intervals include the search's resolution: a sustainable rate is known to within "
            f"{step:.0%} (the highest rate held twice, the lowest missed just above it)"
        )
    return lines


def operating_lines(s: dict[str, Any]) -> list[str]:
    """The operating point (sweeps.hold): a rate picked from the fit of p99 against rate, held in a run of its own;
    or why no rate holds reliably."""
    op = s.get("operating_point")
    if not op:
        return []
    if op.get("not_load_driven"):
        return [f"operating point: none: no rate holds the SLO reliably: {op['not_load_driven']}"]
    tried = "; ".join(f"{t['rate_msg_s']:,.0f} msg/s: {t.get('why') or 'held'}" for t in op["tries"] if t["rate_msg_s"])
    if not op["held"]:
        return [f"operating point: no fixed rate held in {len(op['tries'])} run(s) of {op['run_s']} s ({tried})"]
    lat = [f"p99 end-to-end {op['p99_e2e_ms']:.1f} ms" if op.get("p99_e2e_ms") is not None else ""]
    lat += [f"p99 publish {op['p99_publish_ms']:.1f} ms" if op.get("p99_publish_ms") is not None else ""]
    out = [
        f"operating point: {op['rate_msg_s']:,.0f} msg/s ({op['mb_s']:.2f} MB/s received) held "
        + ", ".join(x for x in lat if x)
        + f" in one {op['run_s']}-s run at that fixed rate (n=1: a check, not an estimate)"
    ]
    fit = op.get("fit")
    if fit and op.get("predicted_p99_e2e_ms") is not None:
        out.append(
            f"  picked from p99 against rate over {fit['n']} search steps ({fit['low']:,.0f}-{fit['high']:,.0f} msg/s; "
            f"p99 ∝ rate^{fit['b']:.2f}, between-run spread ×{math.exp(fit['sigma']):.2f}): predicted p99 "
            f"{op['predicted_p99_e2e_ms']:.1f} ms there"
        )
    if op.get("headroom", 1) < 1:
        out.append(f"  judged against {op['headroom']:.0%} of the SLO (hold.headroom)")
    if len(op["tries"]) > 1:
        out.append(f"  higher rates tried first: {tried}")
    return out


def key_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    for e in s.get("recommended") or []:
        lines.append(f"  {e['key']}: {e['old'] or '(unset)'} -> {e['new']}: {_effect(e)}")
    none = s.get("no_measurable_effect") or []
    if none:
        lines.append("no measurable effect (left out of the recommended files):")
        lines += [f"  {e['key']}: {e['old'] or '(unset)'} -> {e['new']}: {_effect(e)}; {e['why']}" for e in none]
    blocked = (s.get("confirmation") or {}).get("not_ablated") or []
    if blocked:
        lines.append("not ablated (left out of the recommended files):")
        lines += [f"  {e['key']}: {e['old'] or '(unset)'} -> {e['new']}: {e['why']}" for e in blocked]
    if lines and (s.get("recommended") or []):
        lines.insert(0, "keys with an effect beyond noise (each put back alone, interleaved with the recommended):")
    return lines


def _effect(e: dict[str, Any]) -> str:
    iv = interval(e.get("interval"))
    if iv is None:
        return "not measured (" + (e.get("why") or "no repeats") + ")"
    extra = f"; {e['why']}" if e.get("why") and e.get("beyond_noise") else ""
    return f"{iv.text('{:+.2f}', 'MB/s')}{extra}"


def lines(s: dict[str, Any]) -> list[str]:
    """Everything above, in the order a reader needs it."""
    return [
        objective_line(s),
        *candidate_lines(s),
        *choice_lines(s),
        *written_lines(s),
        *operating_lines(s),
        *key_lines(s),
    ]


def _nothing_to_apply(none: list[str], not_ablated: list[str]) -> str:
    """Why a confirmed configuration leaves no key to apply: those put back without a difference beyond noise,
    those not put back at all."""
    why = [f"{', '.join(none)} put back alone made no difference beyond noise"] if none else []
    why += [f"{', '.join(not_ablated)} not put back alone (no ablation)"] if not_ablated else []
    return "No key to apply: " + ("; ".join(why) or "the confirmed configuration changes none of Kafka's defaults")


def rule_confirmed(sweep: dict[str, Any]) -> list[Recommendation]:
    """The sweep's confirmation and ablations (summary.json): the keys whose effect is beyond noise, with the
    recommended configuration's and the defaults' intervals; nothing else is an action."""
    conf = sweep["confirmation"]
    w = conf.get("written")  # the configuration as written, when it was measured: its blocks are the evidence
    by = {c["label"]: c for c in (w["arms"] if w else conf["candidates"])}
    chosen = by.get(w["headline"] if w else conf.get("chosen") or "")
    if chosen is None:
        return []
    keys = sweep.get("recommended") or []
    action = {e["key"]: e["new"] for e in keys}
    ev = [f"{chosen['label']}: {Interval(**chosen['interval']).text(unit='MB/s')}" if chosen["interval"] else ""]
    dflt = by.get("baseline:kafka-defaults")
    if dflt and dflt["interval"]:
        ev.append(f"Kafka defaults: {Interval(**dflt['interval']).text(unit='MB/s')}")
    vs = (w or conf).get("vs_defaults")
    gain = None
    if vs:
        d = Interval(**vs["difference"])
        ev.append(
            f"difference {d.text('{:+.2f}', 'MB/s')}"
            + ("" if vs["distinguishable"] else ": NOT distinguishable from the defaults")
        )
        gain = d.estimate if vs["distinguishable"] else None
    ev += [
        f"{e['key']} {e['old'] or '(unset)'} -> {e['new']}: {Interval(**e['interval']).text('{:+.2f}', 'MB/s')}"
        for e in keys
        if e.get("interval")
    ]
    none = [e["key"] for e in sweep.get("no_measurable_effect") or []]
    if none:
        ev.append(f"no measurable effect, not recommended: {', '.join(none)}")
    title = f"Apply the confirmed configuration's {len(action)} key(s) with an effect beyond noise"
    if not action:  # applying nothing gains nothing: the lead over the defaults is no key's to promise
        title, gain = _nothing_to_apply(none, [e["key"] for e in conf.get("not_ablated") or []]), None
    return [
        Recommendation(
            "best-config",
            title,
            action=action,
            evidence=[e for e in ev if e],
            trials=list(chosen["trial_ids"]) + (list(dflt["trial_ids"]) if dflt else []),
            expected_gain_mb_s=gain,
            severity="high" if action and gain else "medium" if action else "info",
        )
    ]
