"""The brokers' class-data-sharing archive (testbed.cds): made from a JVM's own dump, checked before any start maps
it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from testbed import cds
from testbed.dist import KafkaDist


def _install_like(real: KafkaDist, root: Path) -> KafkaDist:
    """A Kafka install of its own at `root` (the real one's jars, linked): its archive is its own."""
    root.mkdir()
    (root / "libs").symlink_to(real.libs)
    (root / ".installed").write_text((real.root / ".installed").read_text())
    return KafkaDist(root)


@pytest.mark.server  # starts JVMs (no server): the dumps are real ones
def test_a_dump_the_jvm_maps_becomes_the_archive_and_one_cut_short_is_never_used(
    kafka_dist: KafkaDist, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _install_like(kafka_dist, tmp_path / "kafka")
    final = cds.archive(d)
    opts = cds.options(d)
    (dump_opt,) = [o for o in opts if o.startswith("-XX:ArchiveClassesAtExit=")]  # no archive yet: a dump is asked
    dump = Path(dump_opt.split("=", 1)[1])
    cds.started(d, opts, os.getpid())  # a JVM that runs (this process, here) will write it: no other start asks
    assert cds.options(d) == []
    # what a broker's clean exit does, in a JVM that loads some of Kafka's classes and exits
    run = subprocess.run([str(d.java), *opts, "-cp", d.classpath, "kafka.Kafka", "--version"], capture_output=True)
    assert run.returncode == 0 and dump.exists(), run.stderr[-2000:]
    cut = final.with_name(f"{final.name}.dump-cut")  # a JVM killed while writing: its file cut short, long ago
    cut.write_bytes(dump.read_bytes()[: dump.stat().st_size // 3])
    os.utime(cut, (time.time() - cds.STALE_S - 1,) * 2)
    os.utime(dump, (time.time() - 5,) * 2)  # checked after the cut one: the cut one is refused, not skipped
    assert cds.promote(d) and final.exists()
    assert not list(final.parent.glob(f"{final.name}.dump-*"))  # the good one moved, the cut one removed
    late = final.with_name(f"{final.name}.dump-late")  # a JVM asked before the archive was there, exiting now
    late.write_bytes(b"")
    assert cds.options(d) == [*cds.AGENT_OPTIONS, f"-XX:SharedArchiveFile={final}"]
    assert not late.exists() and not list(final.parent.glob("*.pending"))  # the next start clears what is left
    monkeypatch.setenv(cds.OFF, "0")
    assert cds.options(d) == []
    # another JDK or install has an archive of its own
    assert cds.archive(_install_like(kafka_dist, tmp_path / "other")) != final
