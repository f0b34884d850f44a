"""The live view of a run: a rich panel on a terminal, plain progress lines otherwise (cron, CI)."""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from loadgen import recorder
from loadgen.runner import RawRun, Tick, phase_of


@dataclass
class _Second:
    """One second's totals over all workers: messages and bytes published and consumed, and their latency
    histograms (publish and end-to-end, one per worker)."""

    pub_msgs: int = 0
    pub_bytes: int = 0
    con_msgs: int = 0
    con_bytes: int = 0
    pub_hists: list[bytes | None] = field(default_factory=list)
    con_hists: list[bytes | None] = field(default_factory=list)


class LiveView:
    """Per-second totals over all workers; shows the last complete second."""

    def __init__(self, total_s: float | None, plain_every_s: float = 5.0) -> None:
        self.total_s = total_s
        self.tty = sys.stderr.isatty()
        self.plain_every_s = plain_every_s
        self._last_plain = 0.0
        self._rows: dict[int, _Second] = defaultdict(_Second)
        self._live: Any = None
        self._shown = -1
        self._raw: RawRun | None = None

    def __enter__(self) -> LiveView:
        if self.tty:
            self._live = Live(console=Console(stderr=True), refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def __call__(self, raw: RawRun, t: Tick) -> None:
        if raw is not self._raw:  # the next run of a rate discovery (probe, then search): its seconds start at 0
            self._raw, self._shown = raw, -1
            self._rows.clear()
        r = self._rows[t.second]
        if t.role == "producer":
            r.pub_msgs += t.msgs
            r.pub_bytes += t.nbytes
            r.pub_hists.append(t.hist)
        else:
            r.con_msgs += t.msgs
            r.con_bytes += t.nbytes
            r.con_hists.append(t.hist)
        done = t.second - 1
        if done > self._shown and done in self._rows:
            self._shown = done
            self._render(raw, done)

    def _line(self, raw: RawRun, s: int) -> str:
        r = self._rows[s]
        w = raw.workload
        # a backlog run measures until its producers stop (loadgen.backlog): not on the workload's time line
        phase = phase_of(s, w.warmup_seconds, math.inf if w.builds_backlog else w.test_seconds)
        of = f"/{self.total_s:.0f}" if self.total_s else ""
        rate = f" at {_rate_at(raw, s):,.0f} msg/s" if raw.schedule else ""
        return (
            f"t={s + 1:>4}s{of} {phase:<7}{rate} publish {r.pub_msgs:>9,} msg/s "
            f"{r.pub_bytes / 1e6:8.2f} MB/s  consume {r.con_msgs:>9,} msg/s {r.con_bytes / 1e6:8.2f} MB/s  "
            f"p99 publish {_p99(r.pub_hists):>8} ms  e2e {_p99(r.con_hists):>8} ms"
        )

    def _render(self, raw: RawRun, s: int) -> None:
        if self._live is not None:
            tab = Table(title=f"kafkatune bench {raw.workload.name}", expand=False)
            for c in (
                "second",
                "publish msg/s",
                "publish MB/s",
                "consume msg/s",
                "consume MB/s",
                "p99 publish ms",
                "p99 e2e ms",
            ):
                tab.add_column(c, justify="right")
            for sec in range(max(0, s - 9), s + 1):
                r = self._rows.get(sec)
                if r is None:
                    continue
                tab.add_row(
                    str(sec + 1),
                    f"{r.pub_msgs:,}",
                    f"{r.pub_bytes / 1e6:.2f}",
                    f"{r.con_msgs:,}",
                    f"{r.con_bytes / 1e6:.2f}",
                    _p99(r.pub_hists),
                    _p99(r.con_hists),
                )
            self._live.update(tab)
        elif time.monotonic() - self._last_plain >= self.plain_every_s:
            self._last_plain = time.monotonic()
            print(self._line(raw, s), file=sys.stderr, flush=True)


def _p99(hists: list[bytes | None]) -> str:
    """The p99 of one second's histograms in ms, or "–" when nothing was recorded in it (no figure)."""
    h = recorder.merge(hists)
    return f"{recorder.percentiles(h, [99])[0] / 1000:.2f}" if h.get_total_count() else "–"


def _rate_at(raw: RawRun, s: int) -> float:
    """The scheduled rate (msg/s) in second `s` of a stepped run (a search)."""
    return next((r for start, r in reversed(raw.schedule) if start <= s), raw.schedule[0][1])
