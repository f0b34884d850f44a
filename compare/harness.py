"""The harness every comparison method runs through: a system resolved to a server and client hosts, one
recorded harness run of a workload, per-second rates, trimmed medians.

Every run is a loadgen run with its own record under runs/<name>/<system>/<method>/ (records.comparison),
as `bench` writes it. A size or mode a system cannot carry is a row with its error, never dropped.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cluster import target
from compare.spec import CompareSpec, System
from core import paths
from loadgen import result as res
from loadgen import runner
from loadgen.workload import Workload
from records.result import RunResult
from records.run import write_run
from testbed.servers import Servers

Say = Callable[[str], None]
Tick = Callable[[], None]  # one harness run done


@dataclass
class SystemTarget:
    """A system with its server found (or started) and the client hosts its workers run on."""

    system: System
    common: dict[str, str]
    client_netns: list[target.Placement] = field(default_factory=lambda: [None])

    @property
    def name(self) -> str:
        return self.system.name


@contextlib.contextmanager
def targets(
    spec: CompareSpec, state_dir: Path | None, say: Say, only: list[str] | None = None
) -> Iterator[list[SystemTarget]]:
    """Resolve the address of every system (of those in `only`, when given); servers that were not running
    are started, and stopped after. A system left out needs neither its server nor the testbed."""
    sv = Servers(paths.home() / "servers")
    started: list[str] = []
    out: list[SystemTarget] = []
    try:
        for s in spec.selected(only):
            common = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in s.common.items()}
            ns: list[target.Placement] = [None]
            kind = s.server_kind
            if s.driver == "tcp":
                common.setdefault("tcp.dir", str(paths.home() / "tcp"))
            elif "bootstrap.servers" in common or kind == "none":
                pass
            elif kind == "testbed":
                tb = target.testbed(
                    state_dir or paths.state_dir(), all_nodes=False, instead="bootstrap.servers in the system's common"
                )
                common["bootstrap.servers"] = tb.bootstrap
                ns = list(tb.placements)
            else:
                st = sv.alive(kind)
                if st is None:
                    st = sv.up(kind, progress=say)
                    started.append(kind)
                for k, v in st.common().items():
                    common.setdefault(k, v)
            out.append(SystemTarget(s, common, ns))
        yield out
    finally:
        for kind in started:
            sv.down(kind, progress=say)


def workload(t: SystemTarget, name: str, size: int, **kw: Any) -> Workload:
    s = t.system
    return Workload(
        name=name,
        driver=s.driver,
        messageSize=size,
        replicationFactor=s.replicationFactor,
        producerConfig=dict(s.producerConfig),
        consumerConfig=dict(s.consumerConfig),
        topicConfig=dict(s.topicConfig),
        **kw,
    )


def harness_run(t: SystemTarget, w: Workload, out: Path) -> tuple[runner.RawRun, RunResult]:
    """One run of `w` on the system, its record written to `out`; the raw run and its result, typed."""
    raw = runner.run(w, runner.RunSettings(t.common, t.client_netns).quiet())
    rec = res.build(raw, None, {"client": t.system.driver, "system": t.name})
    write_run(out, rec)
    return raw, rec.result


def per_second(raw: runner.RawRun, role: str) -> list[float]:
    """Messages per whole measured second, summed over the role's workers."""
    w = raw.workload
    by: defaultdict[int, int] = defaultdict(int)
    for tk in raw.ticks:
        if tk.role == role and runner.phase_of(tk.second, w.warmup_seconds, w.test_seconds) == "measure":
            by[tk.second] += tk.msgs
    n = runner.measured_seconds(w.warmup_seconds, w.test_seconds)
    first = math.ceil(w.warmup_seconds)
    return [float(by[first + i]) for i in range(n)]


def error_text(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    lines = text.splitlines()
    # a worker's traceback: its last line names the error
    return lines[-1] if len(lines) > 3 else " ".join(lines)


def trimmed_median(samples: list[float], lo: float, hi: float) -> tuple[float, int, float, float]:
    """(median, samples kept, p25, p75) after dropping samples below the lo-th or above the hi-th percentile."""
    if not samples:
        return float("nan"), 0, float("nan"), float("nan")
    a = np.asarray(samples, dtype=float)
    p_lo, p_hi = np.percentile(a, [lo, hi])
    kept = a[(a >= p_lo) & (a <= p_hi)]
    if kept.size == 0:
        kept = a
    return float(np.median(kept)), int(kept.size), float(np.percentile(kept, 25)), float(np.percentile(kept, 75))
