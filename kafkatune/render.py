"""What commands print for a person: rich tables on a terminal, plain lines otherwise. Figures only; each
comes from a record or a computation of another folder, never from here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from advisor import diff as diff_mod
from advisor.ceiling import Ceiling
from advisor.diff import Row, Side
from advisor.recommendation import Recommendation
from core.fmt import num
from loadgen import tail
from records.result import Latency, RunSummary, ScaledOut, Sustainable
from records.trialrow import TrialRow
from testbed.status import ClusterStatus

if TYPE_CHECKING:  # advisor.plan needs pandas, which the commands that render a run (bench) need not import
    from advisor.plan import Plan


def testbed_status(st: ClusterStatus) -> None:
    t = Table(title=f"testbed ({st.network}, Kafka {st.kafka_version}) {st.bootstrap_servers}")
    for col in ("node", "pid", "listener", "alive", "under-replicated", "controller"):
        t.add_column(col)
    for n in st.nodes:
        t.add_row(
            str(n.id),
            str(n.pid or "-"),
            n.listener,
            "yes" if n.alive else "NO",
            num(n.under_replicated_partitions, "{}", "-"),
            "*" if st.controller == n.id else "",
        )
    Console().print(t)
    ur = st.under_replicated_partitions
    click.echo(f"under-replicated partitions: {'unknown' if ur is None else len(ur)}")


def latency_line(label: str, h: Latency) -> str:
    """`label` p50/p99/p99.9/max in ms, or why nothing was measured: never a number that was not measured."""
    if not h.count:
        return f"{label} not measured: {h.missing or 'no samples'}"
    return f"{label} p50 {num(h.p50)}  p99 {num(h.p99)}  p99.9 {num(h.p999)}  max {num(h.max)}"


def bench_summary(s: RunSummary, d: Path) -> None:
    """A run's figures over its measure window (a max-rate or fixed-rate bench)."""
    lines = [
        f"publish  {s.publish_msg_s or 0:>12,.0f} msg/s {s.publish_mb_s or 0:>9.2f} MB/s "
        f"{(s.publish_bit_s or 0) / 1e9:.3f} Gbit/s",
        f"consume  {s.consume_msg_s or 0:>12,.0f} msg/s {s.consume_mb_s or 0:>9.2f} MB/s",
        latency_line("publish latency ms ", s.publish_latency_ms),
        latency_line("end-to-end ms      ", s.end_to_end_latency_ms),
        _counts(s),
        *_late(s),
    ]
    if s.unacknowledged_at_end:
        lines.append(f"{s.unacknowledged_at_end:,} message(s) still unacknowledged when the producers' flush timed out")
    b = s.broker_rates
    if b is not None and None not in (b.produce_mb_s, b.replicate_mb_s, b.consume_mb_s):
        lines.append(
            f"brokers: produce {b.produce_mb_s:.2f} MB/s  replicate {b.replicate_mb_s:.2f} MB/s  "
            f"consume {b.consume_mb_s:.2f} MB/s"
        )
    if s.tail:
        lines += tail.words(s.tail)
    lines += [f"WARNING: {w}" for w in s.warnings]
    lines.append(f"results: {d}/result.json")
    print("\n".join(lines), file=sys.stderr)


def _counts(s: RunSummary) -> str:
    return (
        f"acknowledged {s.acknowledged or 0:,}  consumed {s.consumed or 0:,}  lost {s.lost}  "
        f"duplicated {s.duplicated}  publish errors {s.publish_errors}"
    )


def _late(s: RunSummary) -> list[str]:
    """What the log read again said of the messages no consumer received (loadgen.verify)."""
    if s.not_consumed_in_time:
        return [
            f"{s.not_consumed_in_time:,} acknowledged message(s) not consumed before the drain ended were in "
            "the log when it was read again: late, not lost"
        ]
    if s.loss_verified is False and s.lost:
        return ["the lost count is not verified: this system keeps no log to read again"]
    return []


def scaled_out(d: ScaledOut) -> None:
    """Each run of a max-rate bench that scaled its producer processes out (loadgen.scaleout)."""
    lines = [f"scaled out from {d.from_producers} to {d.to_producers} producer processes per topic: {d.why}"]
    for st in d.steps:
        loops = ", ".join(f"{u:.0%}" for u in st.loop_cpu_util)
        lines.append(f"  {st.producers:>3} process(es)  {st.publish_mb_s:9.2f} MB/s  send loops {loops}")
    lines.append("the figures above are the last run's")
    print("\n".join(lines), file=sys.stderr)


def sustainable(d: Sustainable, s: RunSummary, out: Path) -> None:
    """The discovered rate, and every step of the search that found it (`s`: the search run's summary)."""
    lines = [
        f"probe (max rate): {d.probe_msg_s or 0:,.0f} msg/s, {d.probe_mb_s or 0:.2f} MB/s",
        f"search, SLO {d.slo.describe} (bracket, bisect, confirm; each step judged on its own seconds):",
    ]
    for st in d.steps:
        verdict = "held" if st.held else f"missed: {st.why}"
        secs = f"{len(st.judged_s)} s{'*' if st.early else ''}"
        lines.append(
            f"  {st.phase:<8} {st.rate_msg_s:>10,.0f} msg/s  {secs:>5}  {st.mb_s:7.2f} MB/s  "
            f"p99 e2e {num(st.p99_e2e_ms, '{:.1f}')} ms  {verdict}"
        )
    if any(st.early for st in d.steps):
        lines.append("  * decided early: its figures were clear of the SLO (loadgen.search)")
    lines += [f"  re-measured: {r}" for r in d.remeasured]
    if d.rate_msg_s is None:
        lines.append(f"SUSTAINABLE RATE: not found: {d.note}")
    else:
        lines.append(
            f"SUSTAINABLE RATE: {d.rate_msg_s:,.0f} msg/s, {d.mb_s or 0:.2f} MB/s delivered "
            f"({d.note}; one search: repeat it for an interval)"
        )
    lines += [f"search run: {_counts(s)}", *_late(s)]
    if s.tail:  # over the steps that held, or every step when none did (loadgen.sustainable.tail_seconds)
        lines += tail.words(s.tail)
    lines.append(f"results: {out}/result.json (the answer and its steps under `sustainable`)")
    print("\n".join(lines), file=sys.stderr)


def recommendations(recs: list[Recommendation], limit: int | None = None) -> None:
    for i, r in enumerate(recs[:limit] if limit else recs, 1):
        gain = (
            f"  (expected +{r.expected_gain_mb_s:.2f} MB/s)"
            if r.expected_gain_mb_s and r.expected_gain_mb_s > 0
            else ""
        )
        click.echo(f"{i}. [{r.severity}] {r.title}{gain}")
        if r.action:
            click.echo("   set: " + ", ".join(f"{k}={v}" for k, v in r.action.items()))
        for e in r.evidence:
            click.echo(f"   - {e}")


def analysis(trials: list[TrialRow], tables: Path) -> None:
    click.echo(f"{'trial':<36} {'MB/s':>8} {'% ceil':>7} {'prod':>7} {'repl':>7} {'cons':>7}  bound")
    for r in trials:
        click.echo(
            f"{r.trial_id[:36]:<36} {num(r.mb_s, missing='-'):>8} "
            f"{num(r.fraction_of_ceiling, '{:.0%}', '-'):>7} {num(r.produce_mb_s, missing='-'):>7} "
            f"{num(r.replicate_mb_s, missing='-'):>7} {num(r.consume_mb_s, missing='-'):>7}  {r.bound}"
        )
    click.echo(f"tables: {tables}/")


def plan(p: Plan, message_bytes: int) -> None:
    b = p.per_broker_mb_s
    lines = [
        f"target: {p.target_mb_s:g} MB/s = {p.target_msg_s:,.0f} msg/s of {message_bytes} B, RF {p.rf}, acks={p.acks}",
        f"brokers: {p.brokers}   partitions: {p.partitions}   producers: {p.producers}   consumers: {p.consumers}"
        + (f"   (the target holds with {p.spare_brokers} broker(s) down)" if p.spare_brokers else ""),
        f"each broker at the target: in {b['in']:.1f}, out {b['out']:.1f}, disk {b['disk']:.1f} MB/s",
        f"needed per broker: NIC ≥ {p.nic_mb_s_needed:.1f} MB/s each way, disk ≥ {p.disk_mb_s_needed:.1f} MB/s",
        f"planned cluster ceiling: {p.ceiling_mb_s:.1f} MB/s ({p.bound}); "
        f"efficiency used {p.efficiency:.0%}, headroom {p.headroom:.0%}"
        + (f"; basis: {p.basis.trial} ({p.basis.mb_s:.2f} MB/s)" if p.basis else ""),
        *[f"  why {e}" for e in p.explain],
        *[f"assumption: {a}" for a in p.assumptions],
    ]
    click.echo("\n".join(lines))


def ceiling(c: Ceiling) -> None:
    click.echo(f"ceiling: {c.mb_s:,.1f} MB/s of producer payload, bound by {c.binding}")
    for k, v in sorted(c.terms.items(), key=lambda kv: kv[1]):
        click.echo(f"  {k:<15} {v:>12,.1f} MB/s{'   ← binds' if k == c.binding else ''}")
    pb = c.per_broker
    click.echo(f"each broker at the ceiling: in {pb['in']:,.1f}, out {pb['out']:,.1f}, disk {pb['disk']:,.1f} MB/s")
    for n in c.notes:
        click.echo(f"note: {n}")


def diff(base: Side, cand: Side, table: list[Row]) -> None:
    """Both sides, then one line per metric: baseline, candidate, change and the verdict."""
    for name, s in (("baseline ", base), ("candidate", cand)):
        click.echo(f"{name} {s.given}: {s.measures}, {len(s.sources)} run(s)")
        for n in s.notes:
            click.echo(f"          {n}")
    t = Table()
    for col in ("metric", "baseline", "candidate", "change", "verdict"):
        t.add_column(col)
    for r in table:
        spec = "{:,.0f}" if r.unit == "msg/s" else "{:.2f}"
        pct = f" ({r.change_pct:+.1f} %)" if r.change_pct is not None else ""
        t.add_row(
            f"{r.label} ({r.unit})",
            r.baseline.text(spec),
            r.candidate.text(spec),
            (r.change.text("{:+,.2f}") if r.change.has_interval else f"{r.change.estimate:+,.2f}") + pct,
            r.verdict,
        )
    Console(width=200).print(t)
    if any(r.verdict.startswith("not judged") for r in table):
        click.echo(f"not judged: {diff_mod.NOT_JUDGED}")
