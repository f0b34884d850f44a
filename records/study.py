"""A study's folder, `runs/<study>/` (a sweep), or a single bench run's folder, and its trials as flat rows.

    runs/<study>/
        spec.yaml                        the spec as run, secrets masked (core.secrets)
        inventory.yaml                   the inventory it ran on (secret references only), when it had one
        profile.json                     the cluster profile the trials were held against (records.profile)
        optuna.db                        the Optuna storage (sweeps.storage), unless given elsewhere
        broker-snapshot-<cluster>.json   the pre-sweep broker configs (records.snapshot)
        trials/<stage>-<number>/         trial.json (records.trial) + a run record (records.run)
        summary.json                     the sweep's summary (records.summary)
        analysis/                        the analysis tables (records.analysis)
        report/                          report.html, report.md, recommended/*.properties

Reading a study reads only these files; the heavy per-second Parquet files are left to Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from core import files
from core.acks import acks
from core.errors import UserError
from records import result
from records import run as runs
from records import summary as summaries
from records import trial as trials
from records.profile import PROFILE, ClusterProfile, Limits, read_profile
from records.trialrow import TrialRow

SPEC = "spec.yaml"
INVENTORY = "inventory.yaml"
TRIALS = "trials"

# The knobs a sweep calls params that a bench record (records.result.RunResult) carries as its counts.
WORKLOAD_PARAMS = ("producers", "consumers", "partitions")


def trial_dir(root: Path, label: str, number: int) -> Path:
    """Where trial `number` of stage (or phase) `label` keeps its records."""
    return root / TRIALS / f"{label}-{number:03d}"


def snapshot_path(root: Path, cluster_tag: str) -> Path:
    return root / f"broker-snapshot-{cluster_tag}.json"


def write_spec_copy(root: Path, text: str) -> None:
    """The spec as run (already masked by the caller), so the study says what produced it."""
    files.write_text(root / SPEC, text)


def write_inventory_copy(root: Path, public: dict[str, Any]) -> None:
    """The inventory the study ran on, as `Inventory.public()` gives it: secret references, never values."""
    files.write_text(root / INVENTORY, yaml.safe_dump(public, sort_keys=False))


def read_spec(root: Path) -> dict[str, Any]:
    """The study's spec copy as data, for the secret scan that reads every value; {} when absent or not a mapping."""
    return _yaml(root / SPEC)


def _yaml(p: Path) -> dict[str, Any]:
    if not p.exists():
        return {}
    d = yaml.safe_load(p.read_text())
    return d if isinstance(d, dict) else {}


def _mapping(v: Any) -> Mapping[str, Any]:
    """`v` when the YAML held a mapping there, else empty (a spec's workload may name a file instead)."""
    return v if isinstance(v, Mapping) else {}


@dataclass(frozen=True)
class SpecCopy:
    """What the readers of a study take from its spec copy (sweeps.spec's fields) or a bench run's workload.yaml
    (OMB's workload fields): a study's name and objectives, its workload's name and RF, and the keys it swept. Typed
    here, at the YAML edge, because records cannot import sweeps.spec (it sits above)."""

    name: str | None = None
    objectives: tuple[str, ...] = ()
    workload: str | None = None  # the workload's name
    replication_factor: int | None = None
    swept: frozenset[str] = frozenset()  # keys of its params and of every stage's params

    @classmethod
    def of(cls, spec: Mapping[str, Any], workload: Mapping[str, Any]) -> SpecCopy:
        stages = spec.get("stages")
        swept = set(_mapping(spec.get("params")))
        for st in stages if isinstance(stages, list) else []:
            swept |= set(_mapping(_mapping(st).get("params")))
        rf = workload.get("replicationFactor")
        return cls(
            name=str(spec["name"]) if spec.get("name") else None,
            objectives=tuple(str(o) for o in spec.get("objectives") or ()),
            workload=str(workload["name"]) if workload.get("name") else None,
            replication_factor=int(rf) if rf else None,
            swept=frozenset(str(k) for k in swept),
        )


def spec_copy(root: Path) -> SpecCopy:
    """A study's spec copy, typed (its workload inline); a bench run's folder gives its workload.yaml's."""
    spec = _yaml(root / SPEC)
    workload = _mapping(spec.get("workload")) if spec else _yaml(root / runs.WORKLOAD)
    return SpecCopy.of(spec, workload)


@dataclass(frozen=True)
class Study:
    root: Path
    name: str
    kind: str  # "sweep" | "bench"
    trial_dirs: list[Path]
    objectives: list[str]
    profile: ClusterProfile | None
    rf: int
    synthetic: bool

    @property
    def brokers(self) -> int:
        """Brokers of the cluster it ran on (3 when the profile does not say)."""
        return Limits.of(self.profile).brokers

    def trial(self, trial_id: str) -> Path | None:
        return next((d for d in self.trial_dirs if d.name == trial_id), None)


def open_study(root: Path) -> Study:
    """A sweep folder (runs/<study>/ with trials/) or a bench run folder (runs/<name>/ with result.json)."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: no such study folder (expected runs/<study>/ from `kafkatune sweep` or `bench`)")
    summary = summaries.read_summary(root)
    spec = spec_copy(root)
    if (root / TRIALS).is_dir():
        done = {p.parent for p in (root / TRIALS).glob(f"*/{runs.RESULT}")}
        failed = {p.parent for p in (root / TRIALS).glob(f"*/{trials.TRIAL}") if not runs.has_result(p.parent)}
        dirs, kind = sorted(done | failed), "sweep"
    elif runs.has_result(root):
        dirs, kind = [root], "bench"
    else:
        raise UserError(f"{root}: neither trials/*/result.json (a sweep) nor result.json (a bench run) is there")
    if not dirs:
        raise UserError(f"{root}/{TRIALS}: no trial records yet")
    profile = read_profile(root / PROFILE)
    if profile is None:  # older studies: each result.json carries the profile
        first = next((d for d in dirs if runs.has_result(d)), None)
        copy = runs.read_result(first).profile if first else None
        profile = ClusterProfile.from_json(copy, str(first)) if copy else None
    return Study(
        root=root,
        name=(summary and summary.study) or spec.name or spec.workload or root.name,
        kind=kind,
        trial_dirs=dirs,
        objectives=list((summary and summary.objectives) or spec.objectives or ["throughput_mb_s"]),
        profile=profile,
        rf=spec.replication_factor or 3,
        synthetic=bool(summary and summary.synthetic),
    )


def _merged_broker(read_back: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """One value per broker key: the common value, or `mixed(a|b)` when brokers differ."""
    keys = sorted({k for per in read_back.values() for k in per})
    out: dict[str, str] = {}
    for k in keys:
        vals = {str(per.get(k)) for per in read_back.values()}
        out[k] = vals.pop() if len(vals) == 1 else "mixed(" + "|".join(sorted(vals)) + ")"
    return out


class _Ran(NamedTuple):
    """What a trial (or a bench run) ran and what its record says it measured; None: not measured."""

    config: dict[str, str]
    broker: dict[str, str]
    state: str
    objective: str
    mb_s: float | None
    windows: tuple[float, ...]
    throughput_mb_s: float | None
    sustainable_mb_s: float | None
    client_bound: bool
    warnings: tuple[str, ...]


def _what_it_ran(tj: trials.TrialRecord | None, res: result.RunResult | None) -> _Ran:
    """A trial's configuration, broker settings, state, objective, figure, window rates and measurement: from its
    trial record, or for a bench run (no trial.json) from its record's producer/consumer/broker configs."""
    summ = (res or result.RunResult()).summary
    if tj is not None:
        got, written = tj.figures, tj.measured or {}
        objective = tj.objective or "throughput_mb_s"
        # the trial's figure is its study's objective: the sustainable rate, or the max-rate throughput (all a trial
        # that never reached its search has); a key the record lacks falls back to the run's own summary
        searched = objective == "sustainable_mb_s" and "sustainable_mb_s" in written
        return _Ran(
            {k: str(v) for k, v in tj.config.items()},
            _merged_broker(tj.broker_read_back or {}),
            tj.state or "complete",
            objective,
            got.sustainable_mb_s if searched else got.throughput_mb_s,
            got.windows_mb_s,
            got.throughput_mb_s if "throughput_mb_s" in written else summ.consume_mb_s,
            got.sustainable_mb_s,
            got.client_bound if "client_bound" in written else bool(summ.client_bound),
            tuple(summ.warnings or got.warnings),
        )
    if res is None:
        return _Ran({}, {}, "failed", "throughput_mb_s", None, (), None, None, False, ())
    # a bench run: its knobs are its producer/consumer/topic configs and its workload counts
    config = {k: str(v) for k, v in {**res.producer_config, **res.consumer_config}.items()}
    broker = _merged_broker(res.broker_config or {})
    bound, warnings = bool(summ.client_bound), tuple(summ.warnings or ())
    if res.sustainable is not None:
        mb_s = res.sustainable.mb_s
        return _Ran(config, broker, "complete", "sustainable_mb_s", mb_s, (), summ.consume_mb_s, mb_s, bound, warnings)
    mb_s = summ.consume_mb_s
    return _Ran(config, broker, "complete", "throughput_mb_s", mb_s, (), mb_s, None, bound, warnings)


def trial_row(study: Study, d: Path) -> TrialRow:
    """One trial (or the bench run) as its records say it: what it set, how it ended, what its records measured;
    the per-second aggregates and the judgement are added by the analysis (spark.tables.trial_table). Its
    produce_mb_s is the record's broker rate, for a run without per-second broker rows."""
    tj = trials.read_trial(d)
    res = runs.read_result(d) if runs.has_result(d) else None
    r = res or result.RunResult()
    summ, client = r.summary, r.summary.client
    ran = _what_it_ran(tj, res)
    loops = client.loop_cpu_util
    stats = client.producer_stats
    row = TrialRow(
        trial_id=d.name,
        stage=tj.stage if tj else study.kind,
        number=tj.number if tj else 0,
        # the confirmation phase's re-run of Kafka's defaults is a defaults baseline too
        baseline=(tj.baseline or _confirmed_baseline(tj.confirms or "")) if tj else None,
        state=ran.state,
        fail_reason=tj.fail_reason if tj else None,
        started_ns=int((tj.started_ns if tj else 0) or r.started_ns or 0),
        config=_with_counts(ran.config, r),
        broker=ran.broker,
        message_bytes=int(r.message_bytes or 0),
        mb_s=_float(ran.mb_s),
        objective=ran.objective,
        throughput_mb_s=_float(ran.throughput_mb_s),
        sustainable_mb_s=_float(ran.sustainable_mb_s),
        windows_mb_s=tuple(float(x) for x in ran.windows),
        publish_mb_s=summ.publish_mb_s,
        lost=int(summ.lost) if summ.lost is not None else None,
        client_bound=ran.client_bound,
        buffer_full_events=int(client.buffer_full_events or 0),
        machine_cpu_percent=client.machine_cpu_percent,
        # the busiest send or receive loop, as a fraction of one core (loadgen.result._client_bound)
        client_loop_cpu_max=max((u for us in loops.values() for u in us), default=None),
        consumer_loop_cpu_max=max(loops.get("consumer") or (), default=None),
        rate_mode=summ.mode,
        client_consume_mb_s=summ.consume_mb_s,
        consumers_idle=client.consumers_idle,
        topic_config={k: str(v) for k, v in r.topic_config.items()},
        warnings=ran.warnings,
        produce_mb_s=summ.broker_rates.produce_mb_s if summ.broker_rates else None,
        client_queue_ms=stats.queue_ms,
        client_rtt_ms=stats.rtt_ms,
        client_inflight=stats.inflight,
        batch_bytes=stats.batch_bytes,
        batch_records=stats.batch_records,
        publish_p50_ms=_ms(r.publish_p50_ms),
        publish_p99_ms=_ms(r.publish_p99_ms),
        publish_p999_ms=_ms(r.publish_p999_ms),
        publish_max_ms=_ms(r.publish_max_ms),
        e2e_p50_ms=_ms(r.e2e_p50_ms),
        e2e_p99_ms=_ms(r.e2e_p99_ms),
        e2e_p999_ms=_ms(r.e2e_p999_ms),
        e2e_max_ms=_ms(r.e2e_max_ms),
    )
    return with_links(row, r.links)


def _ms(v: Any) -> float | None:
    """A latency figure of result.json (RunResult's, ms) as the row's: None where it is not a number."""
    return float(v) if isinstance(v, int | float) else None


def _with_counts(config: dict[str, str], r: result.RunResult) -> dict[str, str]:
    """A trial's settings with its record's workload counts and acks, whether swept or not."""
    for name in WORKLOAD_PARAMS:
        if (n := getattr(r, name)) is not None:
            config.setdefault(name, str(n))
    config.setdefault("acks", acks(r.producer_config))
    return config


def with_links(row: TrialRow, links: Sequence[result.Link]) -> TrialRow:
    """`row` with a run's links (result.json `links`, testbed.links.Sampler.rows) as its maps, keyed "b1/b2"."""
    return replace(
        row,
        link_data_segs={"/".join(x.hosts): int(x.data_segs) for x in links},
        link_retrans={"/".join(x.hosts): int(x.retrans) for x in links},
        link_rtt_ms={"/".join(x.hosts): x.rtt_ms for x in links if x.rtt_ms is not None},
    )


def _float(v: Any) -> float | None:
    return float(v) if v is not None else None


def _confirmed_baseline(key: str) -> str | None:
    """`baseline:kafka-defaults@2` (a confirmation repeat of a baseline) -> kafka-defaults."""
    return key.split(":", 1)[1].split("@", 1)[0] if key.startswith("baseline:") else None


def trial_rows(study: Study) -> list[TrialRow]:
    return [trial_row(study, d) for d in study.trial_dirs]


@dataclass(frozen=True)
class LatencyCurve:
    """A run's publish and end-to-end latency by percentile ("50", "99.9", "100": ms), as its result.json keeps
    them; a kind the run did not measure is empty."""

    publish: Mapping[str, float]
    e2e: Mapping[str, float]


def latency_quantiles(study: Study, trial_id: str) -> LatencyCurve | None:
    """A trial's latency quantiles from its result.json; None when it has none."""
    d = study.trial(trial_id)
    if d is None or not runs.has_result(d):
        return None
    res = runs.read_result(d)
    pub, e2e = ({str(k): float(v) for k, v in q.items()} for q in (res.publish_quantiles, res.e2e_quantiles))
    return LatencyCurve(pub, e2e) if pub or e2e else None


def secret_bearing_documents(study: Study) -> list[Any]:
    """The study's spec copy and run records as data, to find secret values that must not reach a report."""
    docs: list[Any] = [read_spec(study.root)]
    docs += [runs.result_document(d) for d in study.trial_dirs if runs.has_result(d)]
    return docs
