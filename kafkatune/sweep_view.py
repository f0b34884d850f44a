"""What a sweep shows while it runs: a live trial table on a terminal, plain lines otherwise.

Each row: stage, trial, the parameters that differ from Kafka's defaults, the objective's MB/s (the
sustainable rate, or the max-rate throughput), the max-rate MB/s (mean ± spread of the windows), % of the
ceiling when known, p99 publish / end-to-end (at the sustainable rate when that is the objective), state. Under the
table: the best so far, trials done, restarts, and an ETA from the mean trial time.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from brokerconf.catalogue import short
from core.units import MB

MAX_ROWS = 14


@dataclass(frozen=True)
class _Row:
    """A finished trial as the view lists it."""

    stage: str
    n: int
    cfg: str  # the keys that differ from Kafka's defaults
    mb: float | None  # the objective's MB/s; None: not measured
    max: float | None  # the max-rate MB/s
    spread: float  # between its windows
    pct: float | None  # of the ceiling
    p99p: float | None
    p99e: float | None
    state: str
    restarts: int


@dataclass
class _Running:
    """The trial under way: what it runs and what its consumers received in their latest second."""

    stage: str
    n: int
    cfg: str
    t0: float
    mb: float | None = None


class SweepView:
    def __init__(self, *, tty: bool | None = None, quiet: bool = False) -> None:
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.quiet = quiet
        self.rows: list[_Row] = []
        self.total = 0
        self.objective = "throughput_mb_s"
        self.best: tuple[float, str] | None = None
        self.durations: list[float] = []
        self._live: Any = None
        self._current: _Running | None = None
        self._last_plain = 0.0

    # ---- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> SweepView:
        if self.tty and not self.quiet:
            self._live = Live(console=Console(stderr=True), refresh_per_second=2, get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def _print(self, msg: str) -> None:
        if self.quiet:
            return
        if self._live is not None:
            self._live.console.print(msg)
        else:
            print(msg, file=sys.stderr, flush=True)

    # ---- events ------------------------------------------------------------------------------------
    def plan(self, spec: Any) -> None:
        self.total = sum(spec.planned)
        self.objective = spec.objective

    def extend(self, n: int) -> None:
        """`n` more trials than planned (the ablations, known once the confirmation chose a configuration)."""
        self.total += n

    def note(self, msg: str) -> None:
        self._print(f"  {msg}")

    def trial_started(self, stage: str, number: int, cfg: Mapping[str, Any]) -> None:
        self._current = _Running(stage, number, short(cfg), time.monotonic())
        if not self.tty:
            self._print(f"[{len(self.rows) + 1}/{self.total}] {stage} #{number}: {short(cfg)}")

    def on_tick(self, raw: Any, tick: Any) -> None:
        if self._current is None or tick.role != "consumer":
            return
        self._current.mb = tick.nbytes / MB

    def trial_finished(self, stage: str, number: int, out: Any, ceiling: float | None) -> None:
        dur = out.total_s
        self.durations.append(dur)
        mb = out.values.get(self.objective) if out.ok else None
        max_rate = out.values.get("throughput_mb_s") if out.ok else None
        if out.ok and out.no_rate_held:  # the sampler's 0.0 is not a measured rate
            mb = None
        spread = statistics.stdev(out.windows_mb_s) if len(out.windows_mb_s) > 1 else 0.0
        state = (
            "ok"
            if out.ok and not out.violations
            else ("violates: " + "; ".join(out.violations) if out.ok else "FAILED")
        )
        row = _Row(
            stage,
            number,
            self._current.cfg if self._current else "",
            mb,
            max_rate,
            spread,
            (mb / ceiling * 100) if (mb is not None and ceiling) else None,
            out.values.get("p99_publish_ms"),
            out.values.get("p99_e2e_ms"),
            (f"no rate held: {out.no_rate_held}" if out.no_rate_held else state)
            if out.ok
            else f"FAILED: {out.fail_reason}",
            out.restarts,
        )
        self.rows.append(row)
        self._current = None
        if mb is not None and out.ok and not out.violations and (self.best is None or mb > self.best[0]):
            self.best = (mb, f"{stage} #{number}")
        if not self.tty:
            self._print(
                f"    -> {_fmt(mb)} MB/s"
                + _rate_note(stage, mb, max_rate, spread)
                + (f" ({row.pct:.0f}% of ceiling)" if row.pct is not None else "")
                + f", p99 publish {_fmt(row.p99p)} ms, e2e {_fmt(row.p99e)} ms, {row.state}, {dur:.0f} s"
                + f" | {self.footer()}"
            )

    def footer(self) -> str:
        best = f"best {self.best[0]:.2f} MB/s ({self.best[1]})" if self.best else "best -"
        left = max(0, self.total - len(self.rows))
        eta = ""
        if self.durations and left:
            eta = f", ETA {statistics.fmean(self.durations) * left / 60:.0f} min"
        return f"{best}; {len(self.rows)}/{self.total} trials{eta}"

    # ---- rich table --------------------------------------------------------------------------------
    def _render(self) -> Any:

        t = Table(expand=False, header_style="bold")
        for col in (
            "stage",
            "#",
            "params (≠ Kafka defaults)",
            "sustained MB/s" if self.objective == "sustainable_mb_s" else "MB/s",
            "max-rate MB/s",
            "±",
            "% ceil",
            "p99 pub ms",
            "p99 e2e ms",
            "state",
        ):
            t.add_column(col, no_wrap=col != "params (≠ Kafka defaults)")
        for r in self.rows[-MAX_ROWS:]:
            t.add_row(
                r.stage,
                str(r.n),
                r.cfg,
                _fmt(r.mb) if r.mb is not r.max else "",
                _fmt(r.max),
                f"{r.spread:.2f}",
                _fmt(r.pct, 0),
                _fmt(r.p99p, 1),
                _fmt(r.p99e, 1),
                r.state[:60],
            )
        if self._current:
            c = self._current
            el = time.monotonic() - c.t0
            t.add_row(c.stage, str(c.n), c.cfg, "", _fmt(c.mb), "", "", "", "", f"running {el:.0f} s")
        return Group(t, Text(self.footer()))


def _fmt(v: float | None, nd: int = 2) -> str:
    """A figure, or "-" when there is none (not measured: None, or inf, the sampler's stand-in for it)."""
    return "-" if v is None or v == float("inf") else f"{v:,.{nd}f}"


def _rate_note(stage: str, mb: float | None, max_rate: float | None, spread: float) -> str:
    """What the trial's figure is: a max rate (± its windows' spread), a sustained rate, or a fixed rate."""
    if stage == "hold":
        return " at one fixed rate (the operating point)"
    if mb is max_rate:
        return f" ±{spread:.2f}"
    if max_rate is None:
        return " sustained"
    return f" sustained (max rate {_fmt(max_rate)} ±{spread:.2f})"
