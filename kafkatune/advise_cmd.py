"""`kafkatune analyze`, `kafkatune advise` and `kafkatune plan`."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import click

from core import paths
from core.errors import EnvironmentProblem, UserError


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def run_analysis(run_dir: Path, master: str | None, out: Path | None = None) -> dict[str, Any]:
    from records.study import open_study
    from spark.analyze import analyze
    from spark.session import session

    open_study(run_dir)  # bad folders fail here, before a JVM starts
    _say(f"starting Spark ({master or 'local[*]'}) …")
    s = session(master)
    try:
        return analyze(run_dir, s, out, progress=_say)
    finally:
        s.stop()


def study_recommendations(run_dir: Path, master: str | None = None) -> tuple[list[Any], dict[str, Any]]:
    from advisor.recommend import recommend
    from records.analysis import load_table
    from records.study import open_study

    study = open_study(run_dir)
    an = run_dir / "analysis"
    if not (an / "trials.parquet").exists():
        _say(f"no analysis in {an} yet: running it")
        run_analysis(run_dir, master)
    trials = load_table(an, "trials")
    params = load_table(an, "params")
    ctx = {"brokers": len((study.profile or {}).get("brokers") or []) or 3, "rf": study.rf, "study": study.name}
    return recommend(trials, params, ctx), ctx


def print_recommendations(recs: list[Any], limit: int | None = None) -> None:
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


def _live_row(urls: dict[int, str], seconds: float) -> dict[str, Any]:
    from cluster import metrics

    sampler = metrics.BrokerMetricsSampler(urls).start()
    time.sleep(seconds)
    rows = metrics.rates(sampler.stop())
    if not rows:
        raise EnvironmentProblem(f"no broker metrics could be read from {', '.join(urls.values())}")
    by_t: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_t.setdefault(round(r["t_ns"] / 1e9), []).append(r)

    def avg(vals: list[float]) -> float | None:
        return statistics.mean(vals) if vals else None

    per_s = list(by_t.values())
    return {
        "seconds": len(per_s),
        "produce_mb_s": avg([sum(r.get("bytes_in_per_s", 0) for r in s) / 1e6 for s in per_s]),
        "broker_in_max_mb_s": avg(
            [max((r.get("bytes_in_per_s", 0) + r.get("replication_bytes_in_per_s", 0)) / 1e6 for r in s) for s in per_s]
        ),
        "broker_out_max_mb_s": avg(
            [
                max((r.get("bytes_out_per_s", 0) + r.get("replication_bytes_out_per_s", 0)) / 1e6 for r in s)
                for s in per_s
            ]
        ),
        "request_handler_idle": avg([r["request_handler_idle"] for r in rows if "request_handler_idle" in r]),
        "network_processor_idle": avg([r["network_processor_idle"] for r in rows if "network_processor_idle" in r]),
        "under_replicated_max": max((r.get("under_replicated", 0) for r in rows), default=0),
    }


def register(cli: click.Group) -> None:
    @cli.command("analyze")
    @click.argument("run_dir", type=click.Path(path_type=Path))
    @click.option("--master", default=None, help="Spark master URL (default local[*]; e.g. spark://host:7077).")
    @click.option(
        "--out", type=click.Path(path_type=Path), default=None, help="Output folder (default RUN_DIR/analysis)."
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the analysis summary as JSON.")
    def analyze_cmd(run_dir: Path, master: str | None, out: Path | None, as_json: bool) -> None:
        """Analyse a study (runs/<study>/ of `sweep`) or a bench run with Spark: reads only its files and
        writes Parquet tables to RUN_DIR/analysis/: trials (MB/s, produce/replicate/consume, % of ceiling,
        binding resource, latency, stability), params (marginal effect per value), importance (Optuna
        PED-ANOVA), pareto, series (per second)."""
        summary = run_analysis(run_dir, master, out)
        if as_json:
            click.echo(json.dumps(summary))
            return
        from records.analysis import load_table

        rows = load_table(Path(summary["tables"]["trials"]).parent, "trials")
        click.echo(f"{'trial':<36} {'MB/s':>8} {'% ceil':>7} {'prod':>7} {'repl':>7} {'cons':>7}  bound")
        for r in rows:

            def f(v: Any, fmt: str = "{:.2f}") -> str:
                return fmt.format(v) if v is not None else "-"

            click.echo(
                f"{r['trial_id'][:36]:<36} {f(r['mb_s']):>8} {f(r['fraction_of_ceiling'], '{:.0%}'):>7} "
                f"{f(r['produce_mb_s']):>7} {f(r['replicate_mb_s']):>7} {f(r['consume_mb_s']):>7}  {r['bound']}"
            )
        click.echo(f"tables: {Path(summary['tables']['trials']).parent}/")

    @cli.command("advise")
    @click.argument("run_dir", required=False, type=click.Path(path_type=Path))
    @click.option("--bootstrap", default=None, help="Advise on a live cluster from its current configs and metrics.")
    @click.option("--metrics-url", "metrics_urls", multiple=True, help="Prometheus JMX exporter URL per broker (live).")
    @click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder (live).")
    @click.option(
        "--seconds", type=click.FloatRange(min=2), default=10, show_default=True, help="Live metric sampling."
    )
    @click.option("--master", default=None, help="Spark master, if the study still needs its analysis.")
    @click.option("--top", type=int, default=None, help="Show only the first N recommendations.")
    @click.option("--json", "as_json", is_flag=True, help="Print the recommendations as JSON.")
    def advise_cmd(
        run_dir: Path | None,
        bootstrap: str | None,
        metrics_urls: tuple[str, ...],
        state_dir: Path | None,
        seconds: float,
        master: str | None,
        top: int | None,
        as_json: bool,
    ) -> None:
        """Recommendations with evidence (trial ids, measured deltas, expected gain).

        \b
        kafkatune advise runs/<study>        from a study's analysis (run first if missing)
        kafkatune advise --bootstrap HOST:PORT   a live cluster: its configs, and its JMX metrics when
                                             --metrics-url is given or it is the testbed"""
        if (run_dir is None) == (bootstrap is None):
            raise UserError("give either RUN_DIR (a study) or --bootstrap (a live cluster), not both")
        if run_dir is not None:
            recs, _ = study_recommendations(run_dir, master)
        else:
            assert bootstrap is not None
            recs = _advise_live(bootstrap, list(metrics_urls), state_dir, seconds)
        if as_json:
            click.echo(json.dumps([r.as_json() for r in (recs[:top] if top else recs)], indent=2))
        else:
            print_recommendations(recs, top)

    @cli.command("plan")
    @click.option("--target-mb-s", type=float, required=True, help="Producer payload rate to carry, MB/s.")
    @click.option("--rf", type=int, default=3, show_default=True)
    @click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all", show_default=True)
    @click.option("--message-bytes", type=int, default=1024, show_default=True)
    @click.option("--consumer-groups", type=int, default=1, show_default=True)
    @click.option("--nic-mbps", type=float, default=None, help="Per-broker NIC, MB/s each way (default: the study's).")
    @click.option("--disk-mbps", type=float, default=None, help="Per-broker disk write, MB/s (default: the study's).")
    @click.option(
        "--from",
        "from_dir",
        type=click.Path(path_type=Path),
        default=None,
        help="A study: use its measured efficiency and rates.",
    )
    @click.option(
        "--headroom", type=float, default=0.7, show_default=True, help="Plan to run at this fraction of capacity."
    )
    @click.option("--json", "as_json", is_flag=True)
    def plan_cmd(
        target_mb_s: float,
        rf: int,
        acks: str,
        message_bytes: int,
        consumer_groups: int,
        nic_mbps: float | None,
        disk_mbps: float | None,
        from_dir: Path | None,
        headroom: float,
        as_json: bool,
    ) -> None:
        """Brokers, partitions, producers, consumers, NIC and disk per broker for a target rate."""
        from advisor.plan import plan

        trials = profile = None
        if from_dir is not None:
            from records.analysis import load_table
            from records.study import open_study

            st = open_study(from_dir)
            profile = st.profile
            if not (from_dir / "analysis" / "trials.parquet").exists():
                _say(f"no analysis in {from_dir}/analysis yet: running it")
                run_analysis(from_dir, None)
            trials = load_table(from_dir / "analysis", "trials")
        p = plan(
            target_mb_s,
            rf=rf,
            acks=acks,
            message_bytes=message_bytes,
            nic_mb_s=nic_mbps,
            disk_mb_s=disk_mbps,
            consumer_groups=consumer_groups,
            headroom=headroom,
            trials=trials,
            profile=profile,
        )
        if as_json:
            click.echo(json.dumps(p.as_json(), indent=2))
            return
        b = p.per_broker_mb_s
        click.echo(
            "\n".join(
                [
                    f"target: {p.target_mb_s:g} MB/s = {p.target_msg_s:,.0f} msg/s of {message_bytes} B, "
                    f"RF {p.rf}, acks={p.acks}",
                    f"brokers: {p.brokers}   partitions: {p.partitions}   producers: {p.producers}   "
                    f"consumers: {p.consumers}",
                    f"each broker at the target: in {b['in']:.1f}, out {b['out']:.1f}, disk {b['disk']:.1f} MB/s",
                    f"needed per broker: NIC ≥ {p.nic_mb_s_needed:.1f} MB/s each way, "
                    f"disk ≥ {p.disk_mb_s_needed:.1f} MB/s",
                    f"planned cluster ceiling: {p.ceiling_mb_s:.1f} MB/s ({p.bound}); "
                    f"efficiency used {p.efficiency:.0%}, headroom {p.headroom:.0%}"
                    + (f"; basis: {p.basis['trial']} ({p.basis['mb_s']:.2f} MB/s)" if p.basis else ""),
                    *[f"assumption: {a}" for a in p.assumptions],
                ]
            )
        )


def _advise_live(bootstrap: str, metrics_urls: list[str], state_dir: Path | None, seconds: float) -> list[Any]:
    from advisor import recommend
    from brokerconf.apply import BrokerConfigs
    from brokerconf.catalogue import DYNAMIC_KEYS, RESTART_KEYS

    try:
        bc = BrokerConfigs.connect(bootstrap, progress=_say)
    except Exception as e:
        raise EnvironmentProblem(f"--bootstrap {bootstrap} is not reachable: {e}") from None
    configs = bc.read_back([*DYNAMIC_KEYS, *RESTART_KEYS])
    recs = recommend.live_config_rules(configs, len(bc.broker_ids))
    urls: dict[int, str] = {}
    profile = None
    if metrics_urls:
        urls = dict(zip(sorted(bc.broker_ids), metrics_urls, strict=False))
    else:
        from cluster import target

        tb = target.testbed_serving(state_dir or paths.state_dir(), bootstrap)
        if tb is not None:
            urls, profile = dict(tb.metrics_urls), tb.profile
    if urls:
        _say(f"sampling broker metrics for {seconds:g} s …")
        recs += recommend.live_metric_rules(_live_row(urls, seconds), profile)
    else:
        _say("no metrics endpoints (--metrics-url): advice from configs only")
    return recs
