"""cluster.hoststats on this machine's own /proc: a process outside the run that takes a CPU shows in the
seconds' `other_cpu`, by name; one inside the run (a descendant of it) and a client host's worker agent (the run's
load generator reached over SSH, here) do not."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cluster.hoststats import CLK_TCK, HostSampler, other_ticks, rows

# asserts the share of a core a spinner gets: run where the CPU comes when asked (tests/lanes.py)
pytestmark = pytest.mark.timing

SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass"


def test_a_process_outside_the_run_is_counted_and_named_and_one_inside_it_is_not() -> None:
    inside = subprocess.Popen([sys.executable, "-c", SPIN.format(s=30)])
    # a shell that starts the spinner in the background and exits: the spinner's parent is no longer ours
    spin = f"{sys.executable} -c '{SPIN.format(s=30)}' </dev/null >/dev/null 2>&1 & echo $!"  # sh exits: not ours
    outside, agent, delay = (
        int(subprocess.run(["sh", "-c", cmd], check=True, capture_output=True, text=True).stdout)
        for cmd in (
            spin,
            spin.replace(" </dev/null", " -m loadgen.agent </dev/null"),  # the agent's argv, as cluster.clients runs it
            spin.replace(" </dev/null", " -m testbed.delayline </dev/null"),  # a delay line's (testbed.netns)
        )
    )
    try:
        time.sleep(0.2)
        others = other_ticks([os.getpid()])
        assert inside.pid not in others and outside in others and agent not in others and delay not in others
        assert not any(name.startswith(("kworker", "ksoftirqd", "kthreadd")) for name, _ in others.values())
        s = HostSampler({}, links=False)
        a = s.read()
        time.sleep(1.0)
        b = s.read()
        (row,) = rows([a, b])
        # two spinners on two CPUs: the outside one gets about a core, never less than a fifth of one
        dt = (b.t_ns - a.t_ns) / 1e9
        took = {pid: (ticks - a.others.get(pid, ("", 0))[1]) / CLK_TCK / dt for pid, (_, ticks) in b.others.items()}
        assert took[outside] >= 0.2 and row["other_cpu"] >= took[outside], (took, row)
        # named, unless another process outside the run (a parallel test worker, say) took more still
        top = max(took, key=took.__getitem__)
        assert row["other_top"] == f"{b.others[top][0]}[{top}]", (took, row)
    finally:
        inside.kill()
        os.kill(outside, 9)
        os.kill(agent, 9)
        os.kill(delay, 9)
