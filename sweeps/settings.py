"""How a sweep measures and judges: the spec's measurement, constraints, SLO, search, confirmation, ablation,
operating-point and budget sections (sweeps.spec puts them together; every error names the field and what is
allowed)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from loadgen import sustainable


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Measurement(_Model):
    warmup_s: Annotated[float, Field(ge=0, le=3600)] = 5
    window_s: Annotated[float, Field(ge=1, le=3600)] = 10
    windows: Annotated[int, Field(ge=1, le=100)] = 3
    # After a rolling restart the brokers' JIT is cold again: load them until their compilers are quiet
    # (loadgen.warmup.JitWatch; about 85 s on the testbed), for this long at the most (0: no warm-up).
    restart_warmup_s: Annotated[float, Field(ge=0, le=3600)] = 180
    # A run whose window found a broker's JIT still compiling (loadgen.brokerside.JIT_BUSY_CORES) measured the compiler:
    # the trial is measured again after loading the brokers until their compilers are quiet, for this long at the
    # most (sweeps.trial, at most MAX_ATTEMPTS runs: the last is kept, with its warning). 0: keep the first run.
    jit_warmup_s: Annotated[float, Field(ge=0, le=3600)] = 120
    # Longest wait for consumers to receive everything acknowledged after the window (acks=0: 5 s).
    drain_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120
    # A stage that sweeps restart-only keys keeps them for this many trials in a row: fewer restarts.
    trials_per_restart: Annotated[int, Field(ge=1, le=100)] = 3


class Constraints(_Model):
    max_lost: Annotated[int, Field(ge=0)] = 0
    p99_publish_ms: Annotated[float, Field(gt=0)] | None = None
    p99_e2e_ms: Annotated[float, Field(gt=0)] | None = None
    p999_e2e_ms: Annotated[float, Field(gt=0)] | None = None


def _bounds_latency(slo: sustainable.Slo) -> sustainable.Slo:
    if not slo.bounds_latency():
        raise ValueError("give p99_e2e_ms and/or p99_publish_ms")
    return slo


# The spec's `slo` section: the one Slo class (loadgen.sustainable), bounding at least one latency.
SpecSlo = Annotated[sustainable.Slo, AfterValidator(_bounds_latency)]


class SearchSpec(_Model):
    """The sustainable-rate search (loadgen.search): after the trial's max-rate measurement, which is its probe, one
    steered run that brackets, bisects and confirms the highest rate held within the SLO, each step judged on its own
    seconds (`min_step_s` to `max_step_s`, decided early when its figures are clear of the SLO)."""

    warmup_s: Annotated[int, Field(ge=0, le=600)] = 3
    start: Annotated[float, Field(gt=0, le=2)] = 0.7
    grow: Annotated[float, Field(gt=1, le=4)] = 1.25
    cap: Annotated[float, Field(gt=0, le=4)] = 1.3
    resolution: Annotated[float, Field(gt=0, le=1)] = 0.06
    min_step_s: Annotated[int, Field(ge=2, le=600)] = 5
    max_step_s: Annotated[int, Field(ge=2, le=3600)] = 30
    early_hold: Annotated[float, Field(gt=0, le=1)] = 0.6
    early_miss: Annotated[float, Field(ge=1, le=100)] = 1.6
    max_steps: Annotated[int, Field(ge=2, le=40)] = 12

    @model_validator(mode="after")
    def _span(self) -> SearchSpec:
        if self.min_step_s > self.max_step_s:
            raise ValueError(f"min_step_s ({self.min_step_s}) must not exceed max_step_s ({self.max_step_s})")
        if self.start > self.cap:
            raise ValueError(f"start ({self.start:g}) must not exceed cap ({self.cap:g})")
        return self

    def how(self) -> sustainable.Search:
        """The search as loadgen.search runs it (no probe of its own: the trial's max-rate run is one)."""
        return sustainable.Search(probe_s=0, **self.model_dump())


class Confirm(_Model):
    """The confirmation: the best `top` of each stage and every acks=all baseline, plus Kafka's defaults,
    each measured `repeats` times in randomized blocks (each block runs every one once, in a new random order)."""

    top: Annotated[int, Field(ge=0, le=10)] = 1
    repeats: Annotated[int, Field(ge=2, le=20)] = 4


class Ablate(_Model):
    """Per key the recommended configuration changes from Kafka's defaults: the configuration with that key
    put back, `repeats` times, in randomized blocks with `repeats` runs of the recommended one (its confirmation
    runs chose it: they are not reused); the keys are judged as one family (Holm) (0 repeats: no ablation). The same
    `repeats` measure the configuration as written against the full one and the defaults (sweeps.written)."""

    repeats: Annotated[int, Field(ge=0, le=20)] = 4
    # An effect must also be this share of the recommended rate: smaller ones are reported, not recommended.
    min_effect: Annotated[float, Field(ge=0, le=1)] = 0.05


class Hold(_Model):
    """The operating point (sustainable_mb_s only, sweeps.hold): the highest rate whose p99, fitted against the rate
    over the confirmation's search steps, is `z` between-run spreads within the SLO; checked in one run of `run_s`
    seconds at that fixed rate, judged against `headroom` times the SLO, `step` lower after each miss, at most
    `tries` runs (0: no operating point). z 2.33: one run in a hundred misses when the fit is right. A run of 30 s
    because a p99 over a few seconds is mostly chance (benchmarks/step_length.py)."""

    run_s: Annotated[int, Field(ge=2, le=600)] = 30
    tries: Annotated[int, Field(ge=0, le=10)] = 4
    z: Annotated[float, Field(ge=0, le=5)] = 2.33
    headroom: Annotated[float, Field(ge=0.3, le=1.0)] = 1.0
    step: Annotated[float, Field(gt=0, le=0.5)] = 0.06


class Budget(_Model):
    trials: Annotated[int, Field(ge=1)] | None = None
    minutes: Annotated[float, Field(gt=0)] | None = None
