"""What a study's confirmation and ablations established, in sentences: read from `summary.json` (written once
by the sweep, sweeps.confirm) and shown by `sweep`, `advise` and the report alike.

Every figure carries n and its 95 % interval; a winner that cannot be told apart from the runner-up or from
Kafka's defaults is said to be so; a key whose effect is within noise is listed as having none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advisor.recommendation import Recommendation
from brokerconf import catalogue
from core.acks import acks as producer_acks
from loadgen.sustainable import Slo
from records.confirmation import DEFAULTS, Arm, Comparison, Config, Confirmation, KeyEffect
from records.summary import Summary
from sweeps import confirm

CURRENT_WORDS = "the current configuration"  # the `current` baseline (sweeps.current): what the cluster runs now
# What every interval below covers: a study's runs share one cluster and one stretch of time, so what moves between
# days (a shared machine's speed, another tenant) is not in them; said once beside them so no one reads them as more.
SCOPE = (
    "the intervals are this study's own: its runs, on one cluster over one stretch of time; a study on another day "
    'may differ by more (kafkatune diff compares two; docs/measurement.md, "Between studies")'
)


def objective_line(objective: str, slo: Mapping[str, float | None] | None) -> str:
    if objective == "sustainable_mb_s":
        return (
            f"objective: the sustainable rate, the highest rate delivered within {Slo.from_json(slo).describe()} (a "
            "max-rate probe, then a search of fixed rates: bracket, bisect, confirm)"
        )
    return "objective: max-rate throughput (consumer-confirmed MB/s at the producers' maximum; latency not bounded)"


def candidate_lines(s: Summary) -> list[str]:
    conf = s.confirmation
    if not conf:
        return ["no confirmation phase: every figure is one run, without an interval"]
    lines = [_arm_line(c) for c in conf.candidates]
    noise = conf.noise
    if noise and noise.between_run_sd_mb_s is not None:
        lines.append(f"between-run noise: sd {noise.between_run_sd_mb_s:.2f} MB/s ({noise.how}, df {noise.df})")
    return [*lines, SCOPE]


def _arm_line(c: Arm) -> str:
    """One configuration's repeats and interval (sweeps.confirm.candidate)."""
    runs = ", ".join("none" if v is None else f"{v:.2f}" for v in c.repeats)
    fig = c.interval.text(unit="MB/s") if c.interval else "no complete run"
    tail = "" if c.eligible else f"; not eligible: {'; '.join(c.why_not) or 'a run failed'}"
    return f"  {c.label:<30} {fig}  [runs {runs}]{tail}"


def _vs_defaults_line(vs: Comparison, what: str = "Kafka's defaults") -> str:
    """The chosen configuration against a baseline (`what`): its ratio and difference, or that it is not
    distinguishable from it."""
    r, d = vs.ratio, vs.difference
    ratio = f"{r.text('{:.2f}', '×')} {what}" if r else f"no ratio ({what} measured nothing)"
    said = f"{ratio}; difference {d.text(unit='MB/s')}{bound_words(vs)}"
    return f"  {said}" if vs.distinguishable else f"  NOT distinguishable from {what}: {said}"


def bound_words(vs: Comparison) -> str:
    """What a comparison whose other arm held no rate in some runs says of them (empty when none did)."""
    if not vs.at_bound:
        return ""
    return f" ({vs.at_bound} of its runs held no rate: counted at their bounds, so the lead is at least this)"


def written_lines(s: Summary) -> list[str]:
    """The configuration the recommended files hold, measured as written (sweeps.written): its own blocks with the
    full configuration and the defaults, whether the dropped keys stood in for each other, and its lead."""
    w = s.confirmation.written if s.confirmation else None
    if not w:
        return []
    ablation = "the ablation's runs: the full configuration and, put back, Kafka's defaults, in blocks of their own"
    where = {"ablate": ablation, "ablate+written": f"{ablation}, and more of each in new randomized blocks"}.get(
        w.runs_from, "new randomized blocks"
    )
    lines = [f"as written (what the recommended files hold), in {where}:"]
    lines += [_arm_line(a) for a in w.arms]
    if fw := w.full_vs_written:
        said = "ahead beyond noise" if fw.distinguishable else "not ahead beyond noise (one-sided, Holm)"
        lines.append(f"  full configuration − written: {fw.difference.text(unit='MB/s')}{bound_words(fw)}: {said}")
    if w.kept_as_group:
        lines.append(f"  kept as a group: {', '.join(w.kept_as_group)}: {w.why_kept}")
    elif w.headline == DEFAULTS:
        lines.append(f"  the files are empty: the headline is Kafka's defaults' (without {', '.join(w.dropped)})")
    elif w.dropped:
        lines.append(f"  the headline is the written configuration's: without {', '.join(w.dropped)}")
    if w.vs_defaults:
        lines.append(_vs_defaults_line(w.vs_defaults))
    return lines


def choice_lines(s: Summary) -> list[str]:
    conf = s.confirmation
    if not conf:
        return []
    if conf.chosen is None:
        return ["no configuration held its constraints in every confirmation run: nothing is recommended"]
    lines = [f"recommended configuration: {conf.chosen} (best mean of the confirmation runs)"]
    if ru := conf.runner_up:
        d = ru.difference.text(unit="MB/s")
        if ru.distinguishable:
            lines.append(f"  ahead of the runner-up {ru.label} by {d}")
        else:
            lines.append(f"  NOT distinguishable from the runner-up {ru.label}: difference {d} includes 0")
    if conf.vs_defaults:
        lines.append(_vs_defaults_line(conf.vs_defaults))
    elif conf.chosen == DEFAULTS:
        lines.append("  Kafka's defaults measured best: no change is recommended")
    return lines + _current_lines(s, conf) + _resolution_lines(conf)


def current_changes(chosen: Config, current: Config) -> list[tuple[str, str, str]]:
    """(key, the current configuration's value, the chosen one's) for every catalogue key the two run differently,
    sorted. A broker key a configuration leaves out ran as the cluster runs it, which is the current value; a client
    key left out runs Kafka's default, and a workload count left out is taken as the catalogue's (a workload file
    that sets another count is not known here). The recommended files hold keys against Kafka's defaults; this is
    what an operator starting from the current configuration changes."""
    out = []
    for key in sorted(set(chosen) | set(current)):
        p = catalogue.CATALOGUE.get(key)
        if p is None:
            continue
        cur = current.get(key, p.default)
        new = chosen.get(key, cur if p.scope == "broker" else p.default)
        if str(cur) != str(new):
            out.append((key, "unset" if cur is None else str(cur), "unset" if new is None else str(new)))
    return out


def _changes_line(conf: Confirmation, vs: Comparison) -> list[str]:
    """What the chosen configuration changes from the current one, judged as a whole by `vs`."""
    chosen, cur = conf.arm(None), conf.arm(vs.label)
    changes = current_changes(chosen.config, cur.config) if chosen and cur else []
    if not changes:
        return []
    said = "; ".join(f"{k} {a} -> {b}" for k, a, b in changes)
    if vs.distinguishable:
        return [f"  from {CURRENT_WORDS}, the recommended one changes (judged as a whole): {said}"]
    return [f"  no change from {CURRENT_WORDS} is shown to help; the chosen one would change: {said}"]


def _current_lines(s: Summary, conf: Confirmation) -> list[str]:
    """The chosen configuration against what the cluster runs now (sweeps.current) and what it changes from it, or
    why it was not compared."""
    if (vs := conf.vs_current) is not None:
        alias = "" if vs.label == "baseline:current" else f" (measured as {vs.label})"
        return [_vs_defaults_line(vs, CURRENT_WORDS + alias), *_changes_line(conf, vs)]
    cur = s.baselines.get("current")
    same = confirm.arm_as(conf, "baseline:current", cur.config) if cur else conf.arm("baseline:current")
    if same is not None and same.label == conf.chosen:
        alias = "" if same.label == "baseline:current" else f" ({same.label}'s configuration)"
        return [f"  {CURRENT_WORDS}{alias} measured best: no change is recommended"]
    if cur is None or conf.arm("baseline:current") is not None:
        return []
    acks = producer_acks(cur.config)
    if same is not None:
        why = f"it is {same.label}'s configuration above, measured as that candidate"
    elif acks != "all":
        why = f"it runs acks={acks} (the confirmation holds acks=all only)"
    else:
        why = "it is not among the confirmation's candidates"
    return [f"  {CURRENT_WORDS} was not confirmed on its own: {why}"]


def _resolution_lines(conf: Confirmation) -> list[str]:
    step = conf.resolution.step if conf.resolution else None
    if not step:
        return []
    return [
        f"  differences' intervals include the search's resolution: a sustainable rate is known to within "
        f"{step:.0%} (the highest rate held twice, the lowest missed just above it)"
    ]


def operating_lines(s: Summary) -> list[str]:
    """The operating point (sweeps.hold): a rate picked from the fit of p99 against rate, held in a run of its own;
    or why no rate holds reliably."""
    op = s.operating_point
    if not op:
        return []
    if op.not_load_driven:
        return [f"operating point: none: no rate holds the SLO reliably: {op.not_load_driven}"]
    tried = "; ".join(f"{t.rate_msg_s:,.0f} msg/s: {t.why or 'held'}" for t in op.tries if t.rate_msg_s)
    if not op.held or op.rate_msg_s is None or op.mb_s is None:
        return [f"operating point: no fixed rate held in {len(op.tries)} run(s) of {op.run_s} s ({tried})"]
    lat = [f"p99 end-to-end {op.p99_e2e_ms:.1f} ms" if op.p99_e2e_ms is not None else ""]
    lat += [f"p99 publish {op.p99_publish_ms:.1f} ms" if op.p99_publish_ms is not None else ""]
    out = [
        f"operating point: {op.rate_msg_s:,.0f} msg/s ({op.mb_s:.2f} MB/s received) held "
        + ", ".join(x for x in lat if x)
        + f" in one {op.run_s}-s run at that fixed rate (n=1: a check, not an estimate)"
    ]
    if (fit := op.fit) and op.predicted_p99_e2e_ms is not None:
        out.append(
            f"  picked from p99 against rate over {fit.n} search steps ({fit.low:,.0f}-{fit.high:,.0f} msg/s; "
            f"p99 ∝ rate^{fit.b:.2f}, between-run spread ×{math.exp(fit.sigma):.2f}): predicted p99 "
            f"{op.predicted_p99_e2e_ms:.1f} ms there"
        )
    if op.headroom < 1:
        out.append(f"  judged against {op.headroom:.0%} of the SLO (hold.headroom)")
    if len(op.tries) > 1:
        out.append(f"  higher rates tried first: {tried}")
    return out


def key_lines(s: Summary) -> list[str]:
    alone = [e for e in s.recommended if e.beyond_noise]
    lines = [f"  {e.key}: {e.old or '(unset)'} -> {e.new}: {_effect(e)}" for e in alone]
    if lines:
        lines.insert(0, "keys with an effect beyond noise (each put back alone, interleaved with the recommended):")
    if group := [e for e in s.recommended if not e.beyond_noise]:
        lines.append(f"kept as a group (in the recommended files): {group[0].why}")
        lines += [f"  {e.key}: {e.old or '(unset)'} -> {e.new}: put back alone {_effect(e)}" for e in group]
    if none := s.no_measurable_effect:
        lines.append("no measurable effect (left out of the recommended files):")
        lines += [f"  {e.key}: {e.old or '(unset)'} -> {e.new}: {_effect(e)}; {e.why}" for e in none]
    if blocked := (s.confirmation.not_ablated if s.confirmation else ()):
        lines.append("not ablated (left out of the recommended files):")
        lines += [f"  {e.key}: {e.old or '(unset)'} -> {e.new}: {e.why}" for e in blocked]
    return lines


def _effect(e: KeyEffect) -> str:
    if e.interval is None:
        return "not measured (" + (e.why or "no repeats") + ")"
    extra = f"; {e.why}" if e.why and e.beyond_noise else ""
    return f"{e.interval.text('{:+.2f}', 'MB/s')}{extra}"


def lines(s: Summary) -> list[str]:
    """Everything above, in the order a reader needs it."""
    return [
        objective_line(s.objective, s.slo),
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


def rule_confirmed(sweep: Summary) -> list[Recommendation]:
    """The sweep's confirmation and ablations (summary.json): the keys whose effect is beyond noise, with the
    recommended configuration's and the defaults' intervals; nothing else is an action."""
    conf = sweep.confirmation
    if conf is None:
        return []
    w = conf.written  # the configuration as written, when it was measured: its blocks are the evidence
    by = {c.label: c for c in (w.arms if w else conf.candidates)}
    chosen = w.arm() if w else conf.arm(None)
    if chosen is None:
        return []
    action = {e.key: e.new for e in sweep.recommended}
    ev = [f"{chosen.label}: {chosen.interval.text(unit='MB/s')}" if chosen.interval else ""]
    dflt = by.get(DEFAULTS) if chosen.label != DEFAULTS else None  # the headline may be the defaults themselves
    if dflt and dflt.interval:
        ev.append(f"Kafka defaults: {dflt.interval.text(unit='MB/s')}")
    vs = w.vs_defaults if w else conf.vs_defaults
    gain = None
    if vs:
        d = vs.difference
        ev.append(
            f"difference {d.text('{:+.2f}', 'MB/s')}"
            + ("" if vs.distinguishable else ": NOT distinguishable from the defaults")
        )
        gain = d.estimate if vs.distinguishable else None
    if w and w.headline == DEFAULTS and (fw := w.full_vs_written):  # empty files: the chosen keys did not help
        said = fw.difference.text("{:+.2f}", "MB/s")
        ev.append(f"the full configuration − Kafka's defaults, in their own blocks: {said}: not ahead beyond noise")
    ev += [
        f"{e.key} {e.old or '(unset)'} -> {e.new}: {e.interval.text('{:+.2f}', 'MB/s')}"
        for e in sweep.recommended
        if e.interval
    ]
    none = [e.key for e in sweep.no_measurable_effect]
    if none:
        ev.append(f"no measurable effect, not recommended: {', '.join(none)}")
    alone = sum(e.beyond_noise for e in sweep.recommended)
    title = f"Apply the confirmed configuration's {len(action)} key(s) with an effect beyond noise"
    if alone < len(action):  # some are kept as a group (sweeps.written): their effect is the group's
        title = f"Apply the confirmed configuration's {len(action)} key(s), {alone} beyond noise alone, as a group"
    if not action:  # applying nothing gains nothing: the lead over the defaults is no key's to promise
        title, gain = _nothing_to_apply(none, [e.key for e in conf.not_ablated]), None
    return [
        Recommendation(
            "best-config",
            title,
            action=action,
            evidence=[e for e in ev if e],
            trials=list(chosen.trial_ids) + (list(dflt.trial_ids) if dflt else []),
            expected_gain_mb_s=gain,
            severity="high" if action and gain else "medium" if action else "info",
        )
    ]
