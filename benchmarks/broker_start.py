"""Broker starts with and without the class-data-sharing archive (testbed.cds): `testbed up` of a new 3-node
cluster, then a clean restart of each node (stopped, started, serving, every partition in sync again), then one
node's log dir formatted anew (testbed.nodes.format_storage: the tool's JVM maps the archive too).

    .venv/bin/python benchmarks/broker_start.py [--repeats 3] [--quick]

The suite's broker options (C1 only, its heap); one topic of 6 partitions, RF 3, so a restart
moves leaders and waits for the node to rejoin their ISR. The archive is made first if there is none (a start
without it, then a clean stop). The two settings alternate, the first of each pair swapped every repeat. Printed:
medians with their ranges and the ratio with / without; kept in benchmarks/results/broker_start.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import log, paired_rows, result_file
from cluster import admin as kadmin
from records.testbed import node_dir
from testbed import cds, dist, nodes
from testbed.lifecycle import Testbed

# the suite's broker options (tests/conftest.py: SUITE_JVM, SUITE_HEAP), whose starts the archive was made for
SUITE_JVM = ("-XX:TieredStopAtLevel=1",)
SUITE_HEAP = "768m"


def cycle(root: Path, with_archive: bool) -> dict[str, float]:
    """One new testbed: its `up`, each node's restart, then node 1's log dir formatted anew, in seconds."""
    os.environ[cds.OFF] = "1" if with_archive else "0"
    tb = Testbed(root, dist.install(), base_port=27590, prefix="ktb", heap=SUITE_HEAP, jvm_extra=SUITE_JVM)
    tb.down(wipe=True, progress=lambda m: None)
    try:
        t0 = time.monotonic()
        st = tb.up(progress=lambda m: None)
        out = {"up_s": time.monotonic() - t0}
        from confluent_kafka.admin import NewTopic

        admin = kadmin.admin_client(st.bootstrap_servers)
        admin.create_topics([NewTopic("kt-start", 6, 3)])["kt-start"].result(timeout=30)
        kadmin.wait_full_isr(admin)
        for n in (1, 2, 3):
            t0 = time.monotonic()
            tb.restart(n, progress=lambda m: None)
            out[f"restart_{n}_s"] = time.monotonic() - t0
        tb.stop(1)  # its log dir formatted again, as a new cluster's is before its broker starts
        shutil.rmtree(node_dir(root, 1) / "data")
        t0 = time.monotonic()
        nodes.format_storage(tb.dist, root, st, st.nodes[0])
        out["format_s"] = time.monotonic() - t0
        return out
    finally:
        tb.down(wipe=True, progress=lambda m: None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 repeat, no result file (a check that it runs)")
    a = ap.parse_args()
    repeats = 1 if a.quick else a.repeats
    root = Path(tempfile.mkdtemp(prefix="kt-broker-start-"))
    try:
        if not cds.archive(dist.install()).exists():
            log("no archive yet: one start and clean stop to make it")
            cycle(root, True)
            log(f"archive: {cds.promote(dist.install())}")
        runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
        for r in range(repeats):
            for with_archive in (False, True) if r % 2 == 0 else (True, False):
                label = "with" if with_archive else "without"
                runs[label].append(cycle(root, with_archive))
                log(f"repeat {r + 1}/{repeats} {label} the archive: {runs[label][-1]}")
    finally:
        os.environ.pop(cds.OFF, None)
        shutil.rmtree(root, ignore_errors=True)
    fields = {
        "up_s": "testbed up (3 nodes)",
        **{f"restart_{n}_s": f"restart of node {n}" for n in (1, 2, 3)},
        "format_s": "kafka-storage format (1 node)",
    }
    rows = paired_rows(runs, "without", "with", fields, f"(seconds, median of {repeats})", 28)
    if not a.quick:
        result_file(
            "broker_start",
            {"args": {"repeats": repeats, "jvm": list(SUITE_JVM)}, "n": repeats, "summary": rows, "runs": runs},
        )


if __name__ == "__main__":
    main()
