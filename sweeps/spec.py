"""The sweep spec (YAML): what to sweep, against which cluster, judged how, for how long.

Validated at the edge, before anything touches a cluster: every error names the field and what is
allowed. Parameter names are the catalogue's (`brokerconf.catalogue`); values are checked against the
catalogue's legal ranges (the parameter space and its stages: sweeps.stages) and the cross-key rules.

    name: staged-sync                  # study name: runs/<name>/
    cluster: {testbed: true}           # or {bootstrap: "h1:9092,h2:9092", admin: {...}} or {inventory: hosts.yaml}
    workload: {...}                    # the bench workload (OMB field names), or an OMB workload file's path
    plan: staged                       # or joint (then `params:` at the top level)
    fixed: {partitions: 6}             # every trial, baselines included for workload/topic keys
    stages:
      - name: producer
        fixed: {acks: "0"}
        params:
          batch.size: {low: 16384, high: 1048576, log: true}
          compression.type: {choices: [none, lz4]}
        trials: 8
    objectives: [sustainable_mb_s]     # the default; or throughput_mb_s (max rate); + p99_publish_ms / p99_e2e_ms
    slo: {p99_e2e_ms: 100}             # what "sustainable" holds (loadgen.sustainable)
    search: {min_step_s: 5, max_step_s: 30, start: 0.7, resolution: 0.06}
    baselines: [kafka-defaults, current]   # default: kafka-defaults, omb-throughput, confluent-throughput
    current: {producer: producer.properties, topic: orders}   # what runs now (sweeps.current)
    confirm: {top: 1, repeats: 3}      # the best of each stage and the baselines, re-measured interleaved
    ablate: {repeats: 3}               # each changed key put back alone, interleaved with the recommended
    hold: {run_s: 30, tries: 4, headroom: 0.6, step: 0.06}   # the operating point: one fixed rate, within
                                       # 60 % of the SLO, 6 % lower per miss
    constraints: {max_lost: 0, p999_e2e_ms: 5000}
    budget: {trials: 30, minutes: 60}
    measurement: {warmup_s: 5, window_s: 10, windows: 3}
    faults: [hard_bounce:leader@5]     # a robustness study: in every trial's windows (testbed, throughput_mb_s)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from brokerconf import catalogue
from core import secrets
from core.errors import UserError
from core.files import read_yaml
from faults.spec import Fault
from faults.spec import parse as parse_fault
from loadgen.sustainable import Slo
from loadgen.workload import Workload, load_workload, parse_workload
from sweeps import current
from sweeps.current import Current
from sweeps.settings import Ablate, Budget, Confirm, Constraints, Hold, Measurement, SearchSpec, SpecSlo
from sweeps.stages import Params, ParamSpec, Scalar, Stage, bounds

Objective = Literal["sustainable_mb_s", "throughput_mb_s", "p99_publish_ms", "p99_e2e_ms"]
SUSTAINABLE: Objective = "sustainable_mb_s"  # the default: the highest rate held within the SLO
OBJECTIVES: dict[str, Literal["minimize", "maximize"]] = {
    "sustainable_mb_s": "maximize",
    "throughput_mb_s": "maximize",
    "p99_publish_ms": "minimize",
    "p99_e2e_ms": "minimize",
}
BaselineName = Literal["kafka-defaults", "omb-throughput", "confluent-throughput", "current"]
# the default; `current` (sweeps.current: what the cluster and its clients run now) is asked for by name
BASELINES: tuple[BaselineName, ...] = ("kafka-defaults", "omb-throughput", "confluent-throughput")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cluster(_Model):
    testbed: bool | None = None
    state_dir: str | None = None
    bootstrap: Annotated[str, Field(min_length=1)] | None = None
    admin: dict[str, str] = Field(default_factory=dict)
    # a cluster inventory (cluster.inventory): bootstrap, security and SSH to the brokers, which
    # makes restart-only keys sweepable on a cluster kafkatune did not start; relative to the spec file
    inventory: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one(self) -> Cluster:
        given = [k for k in ("testbed", "bootstrap", "inventory") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"give one of testbed: true, bootstrap or inventory, not {' and '.join(given)}")
        if self.inventory and self.admin:
            raise ValueError("admin: the inventory's security section sets the clients' security")
        if self.testbed is False and not (self.bootstrap or self.inventory):
            raise ValueError("testbed: false needs bootstrap (host:port,…) or inventory of the cluster to sweep")
        if self.bootstrap is not None:
            for hp in self.bootstrap.split(","):
                host, _, port = hp.strip().rpartition(":")
                if not host or not port.isdigit() or not 0 < int(port) < 65536:
                    raise ValueError(f"bootstrap: {hp!r} is not host:port")
        return self

    @property
    def is_testbed(self) -> bool:
        return self.bootstrap is None and self.inventory is None


class Spec(Params):
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")]
    cluster: Cluster = Field(default_factory=Cluster)
    workload: dict[str, Any] = Field(default_factory=dict)
    plan: Literal["staged", "joint"]
    fixed: dict[str, Scalar] = Field(default_factory=dict)
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    stages: list[Stage] = Field(default_factory=list)
    trials: Annotated[int, Field(ge=1)] | None = None  # joint plan
    objectives: Annotated[list[Objective], Field(min_length=1)] = Field(default_factory=lambda: [SUSTAINABLE])
    slo: SpecSlo = Field(default_factory=Slo)
    search: SearchSpec = Field(default_factory=SearchSpec)
    confirm: Confirm = Field(default_factory=Confirm)
    ablate: Ablate = Field(default_factory=Ablate)
    hold: Hold = Field(default_factory=Hold)
    constraints: Constraints = Field(default_factory=Constraints)
    budget: Budget = Field(default_factory=Budget)
    measurement: Measurement = Field(default_factory=Measurement)
    sampler: Literal["tpe", "nsga2", "gp", "random"] = "tpe"
    seed: int | None = None
    baselines: list[BaselineName] = Field(default_factory=lambda: list(BASELINES))
    current: Current | None = None  # where the `current` baseline's client configs and topic are read from
    storage: str | None = None
    # a robustness study: these faults (faults.spec, as `bench --fault` writes them) in every trial's windows
    faults: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "ramp" in data:
            raise ValueError(
                "ramp: replaced by search: {min_step_s, max_step_s, start, grow, resolution, …} (the sustainable "
                "rate is now bracketed, bisected and confirmed in one run, each step judged on its own seconds: "
                "docs/design.md)"
            )
        if isinstance(data, dict) and "confirm_top" in data:
            raise ValueError(
                f"confirm_top: replaced by confirm: {{top: {data['confirm_top']}, repeats: 3}} (the best of each "
                "stage and the baselines, each re-measured `repeats` times, interleaved)"
            )
        return data

    @model_validator(mode="after")
    def _plan(self) -> Spec:
        if self.plan == "staged":
            if not self.stages:
                raise ValueError("plan staged needs a non-empty `stages` list")
            if self.params or self.trials:
                raise ValueError("plan staged takes `stages`; top-level `params`/`trials` are for plan joint")
            names = [s.name for s in self.stages]
            if len(set(names)) != len(names):
                raise ValueError(f"stage names must be unique (got {names})")
        else:
            if not self.params or not self.trials:
                raise ValueError("plan joint needs `params` and `trials`")
            if self.stages:
                raise ValueError("plan joint takes top-level `params`; `stages` are for plan staged")
        if self.objectives[0] not in ("sustainable_mb_s", "throughput_mb_s"):
            raise ValueError(
                "the first objective must be sustainable_mb_s or throughput_mb_s (latency objectives come after it)"
            )
        if "sustainable_mb_s" in self.objectives[1:] or self.objectives.count("throughput_mb_s") > 1:
            raise ValueError("objectives: one rate objective, first (sustainable_mb_s or throughput_mb_s)")
        if len(set(self.objectives)) != len(self.objectives):
            raise ValueError("objectives: each at most once")
        if self.sampler == "nsga2" and len(self.objectives) == 1:
            pass  # NSGA-II works single-objective too
        if self.storage is not None and not self.storage.startswith(("sqlite:///", "postgresql", "journal:")):
            raise ValueError("storage: a sqlite:///, postgresql://… URL or journal:<file>")
        return self

    # ---- derived -----------------------------------------------------------------------------------
    @property
    def stage_list(self) -> list[Stage]:
        if self.plan == "staged":
            return list(self.stages)
        assert self.trials is not None
        return [Stage(name="joint", params=self.params, trials=self.trials)]

    @property
    def objective(self) -> str:
        """The rate the sweep maximizes: sustainable_mb_s (under `slo`) or throughput_mb_s (max rate)."""
        return self.objectives[0]

    @property
    def sustainable(self) -> bool:
        return self.objective == "sustainable_mb_s"

    @property
    def directions(self) -> list[Literal["minimize", "maximize"]]:
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def planned(self) -> tuple[int, int, int]:
        """Trials planned: (baselines, search within the budget, confirmation runs at most; ablations come on
        top, one set of repeats per key the recommended configuration changes, and 3 sets when it is measured as
        written, sweeps.written)."""
        search = sum(s.trials for s in self.stage_list)
        if self.budget.trials is not None:
            search = min(search, self.budget.trials)
        if not self.confirm.top:
            return len(self.baselines), search, 0
        candidates = self.confirm.top * len(self.stage_list) + len(self.baselines)
        if "kafka-defaults" not in self.baselines:
            candidates += 1
        return len(self.baselines), search, candidates * self.confirm.repeats

    def fault_list(self, source: str = "spec") -> list[Fault]:
        return [parse_fault(x, f"{source}: faults") for x in self.faults]

    def base_workload(self) -> Workload:
        return parse_workload({"name": self.name, **self.workload}, "workload")

    def all_keys(self) -> set[str]:
        keys = set(self.fixed)
        for s in self.stage_list:
            keys |= set(s.params) | set(s.fixed)
        return keys


def _fault_checks(spec: Spec, source: str) -> None:
    """A robustness study's faults: on the testbed, with the max-rate objective, inside the trial's windows."""
    if not spec.faults:
        return
    faults = spec.fault_list(source)
    if not spec.cluster.is_testbed:
        raise UserError(f"{source}: faults: injected on the testbed only (kafkatune starts and stops its brokers)")
    if spec.objective != "throughput_mb_s":
        raise UserError(f"{source}: faults: with objectives [throughput_mb_s] (a fault in a search decides a step)")
    m = spec.measurement
    for f in faults:
        if f.at_s >= m.window_s * m.windows:
            raise UserError(f"{source}: faults: {f.text} starts after the {m.window_s * m.windows:g} s of windows")


def _current_checks(spec: Spec, source: str) -> None:
    """The `current` section: asked for in `baselines`, its files readable and their swept keys legal."""
    if spec.current is None:
        return
    if current.NAME not in spec.baselines:
        raise UserError(f"{source}: current: add current to baselines to measure it (baselines: {spec.baselines})")
    current.client_config(spec.current, source)


def _semantic_checks(spec: Spec, source: str) -> None:
    _fault_checks(spec, source)
    _current_checks(spec, source)
    w = parse_workload({"name": spec.name, **spec.workload}, f"{source}: workload")
    if w.builds_backlog:
        raise UserError(f"{source}: workload.consumerBacklogSizeGB: backlog runs are bench runs, not sweeps")
    if w.subscriptionsPerTopic != 1:
        raise UserError(f"{source}: workload.subscriptionsPerTopic: sweeps measure one consumer group (set 1)")
    if w.producerRate != "max":
        raise UserError(
            f"{source}: workload.producerRate: a sweep sets the rate by its objective "
            "(sustainable_mb_s: a discovered rate; throughput_mb_s: max rate): leave it out"
        )
    for key in ("testDurationMinutes", "warmupDurationMinutes"):
        if key in spec.workload:
            raise UserError(f"{source}: workload.{key}: set by `measurement` in a sweep (warmup_s, window_s, windows)")
    if spec.cluster.bootstrap is not None:
        restart = sorted(k for k in spec.all_keys() if catalogue.CATALOGUE[k].apply == "restart")
        if restart:
            raise UserError(
                f"{source}: {', '.join(restart)}: restart-only broker configs need a broker restart: sweep them "
                "on the testbed (cluster.testbed: true) or give cluster.inventory (SSH to the brokers)"
            )
    base = {**{k: v for k, v in w.str_map("producerConfig").items()}, **spec.fixed}
    for st in spec.stage_list:
        vals: dict[str, ParamSpec] = {**base, **st.fixed, **st.params}
        vals = {k: v for k, v in vals.items() if k in catalogue.CATALOGUE}
        for k, v in list(vals.items()):
            if isinstance(v, str) and catalogue.CATALOGUE[k].kind == "int":
                vals[k] = int(v)
        for msg in catalogue.infeasible_rules(bounds(vals)):
            raise UserError(f"{source}: stages.{st.name}: {msg}")


def format_error(source: str, e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        loc = [str(p) for p in err["loc"] if not str(p).startswith(("IntRange", "Choices", "function-after"))]
        loc = [p for p in loc if p not in ("str", "int")]
        field = ".".join(loc) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(f"{source}: {field}: {msg}")
    # A union reports one error per member; the first is the useful one.
    return lines[0] if lines else f"{source}: invalid"


# An OMB workload file's run-control fields: a sweep's objective sets the rate, its `measurement` the durations.
OMB_RUN_FIELDS = ("name", "producerRate", "testDurationMinutes", "warmupDurationMinutes")


def workload_file(value: str, base: Path) -> dict[str, Any]:
    """`workload: FILE` (an OMB workload file, relative to the spec's folder) as the mapping a spec holds: the
    file's fields (payloadFile resolved) without its run-control fields (OMB_RUN_FIELDS)."""
    path = Path(value) if Path(value).is_absolute() else base / value
    w = load_workload(path)
    data = w.model_dump(exclude_unset=True, exclude=set(OMB_RUN_FIELDS))
    if w.payloadFile is not None:
        data["payloadFile"] = w.payloadFile
    return data


def parse_spec(data: object, source: str = "spec", base: Path | None = None) -> Spec:
    """A spec from its data; `base`: the folder a `workload: FILE` is relative to (the spec file's)."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: expected a mapping (name, cluster, workload, plan, …), got {type(data).__name__}")
    if isinstance(data.get("workload"), str):
        data = {**data, "workload": workload_file(data["workload"], base or Path.cwd())}
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        raise UserError(format_error(source, e)) from None
    if spec.current is not None:  # its files, like a workload file, are relative to the spec's folder
        spec = spec.model_copy(update={"current": spec.current.resolved(base or Path.cwd())})
    _semantic_checks(spec, source)
    return spec


def load_spec(path: Path) -> Spec:
    return parse_spec(read_yaml(path), str(path), path.parent)


def redacted_text(path: Path) -> str:
    """The spec file as run, for the study folder: secret values and the storage URL's password masked, and a
    `workload: FILE` written out as the mapping it was read as (the study needs no other file)."""
    data = secrets.redact_mapping(yaml.safe_load(path.read_text()))
    if isinstance(data.get("workload"), str):
        data["workload"] = workload_file(data["workload"], path.parent)
    if data.get("storage"):
        data["storage"] = secrets.redact_url(data["storage"])
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
