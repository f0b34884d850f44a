"""A class-data-sharing archive of the brokers' classes (JDK 17's dynamic CDS): a broker JVM that maps it loads
Kafka's classes from it instead of from the jars, and serves sooner after every testbed start and rolling restart
(benchmarks/broker_start.py measures it).

The archive is made by the brokers themselves. While there is none, one broker start at a time asks its JVM to write
the classes it loaded to a file of its own when it exits cleanly (-XX:ArchiveClassesAtExit; writing it slows that
exit by seconds, so no other start asks while that JVM runs); a later start checks such a
file with `java -Xshare:on` (a file still being written, or cut short by a kill, fails the check) and moves it into
place. One archive per JDK and Kafka install (its name holds their hash): another of either makes its own. Only a
file a JVM has mapped with -Xshare:on becomes the archive (a JVM that maps one cut short dies of SIGBUS); a broker
that cannot map it starts without it (-Xshare:auto, the JVM's default). KAFKATUNE_CLASS_ARCHIVE=0 turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from testbed.dist import KafkaDist

# The JMX exporter is a Java agent, whose classes the JVM archives only when allowed to (a diagnostic option); the
# JVM then warns on every start that such an archive is for testing, which a testbed is.
AGENT_OPTIONS = ("-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent")
STALE_S = 600  # a dump file this old that fails the check is a JVM's that was killed while writing it
OFF = "KAFKATUNE_CLASS_ARCHIVE"
DUMP = "-XX:ArchiveClassesAtExit="


def archive(dist: KafkaDist) -> Path:
    """Where this JDK's archive of this Kafka install is (or will be)."""
    release = dist.java.resolve().parent.parent / "release"
    key = hashlib.sha256(
        "\0".join(
            [
                str(dist.java.resolve()),
                release.read_text(errors="replace") if release.exists() else "",
                (dist.root / ".installed").read_text() if (dist.root / ".installed").exists() else "",
                dist.classpath,
                str(dist.jmx_agent),
            ]
        ).encode()
    ).hexdigest()[:16]
    return dist.root / f"broker-classes-{key}.jsa"


def options(dist: KafkaDist) -> list[str]:
    """The JVM options of a broker start: map the archive when there is one, else write a dump at exit."""
    if os.environ.get(OFF) == "0":
        return []
    final = archive(dist)
    if final.exists() or promote(dist):
        _clear(final)  # dumps of JVMs asked before there was an archive
        return mapped(dist)
    if dumper(final) is not None:
        return []  # a running JVM writes one at its exit
    return [*AGENT_OPTIONS, f"{DUMP}{final.with_name(f'{final.name}.dump-{uuid.uuid4().hex}')}"]


def mapped(dist: KafkaDist) -> list[str]:
    """The JVM options of another tool on the brokers' classpath (kafka-storage): map the archive when there is one;
    never a dump (the archive is the brokers' classes)."""
    final = archive(dist)
    if os.environ.get(OFF) == "0" or not final.exists():
        return []
    return [*AGENT_OPTIONS, f"-XX:SharedArchiveFile={final}"]


def started(dist: KafkaDist, opts: list[str], pid: int) -> None:
    """Note that the JVM `pid`, started with `opts` (options'), writes a dump at its exit, when they ask it to."""
    if any(o.startswith(DUMP) for o in opts):
        _pending(archive(dist)).write_text(f"{pid}\n")


def _pending(final: Path) -> Path:
    return final.with_name(f"{final.name}.pending")


def dumper(final: Path) -> int | None:
    """The pid of the running JVM that was asked for a dump, if one still runs."""
    try:
        pid = int(_pending(final).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if psutil.pid_exists(pid) else None


def promote(dist: KafkaDist) -> bool:
    """Move the first dump that the JVM maps (`-Xshare:on` fails on any it cannot) into place; remove the ones that
    fail and are STALE_S old. Returns whether the archive is now there."""
    final = archive(dist)
    for dump, mtime in sorted(_dumps(final), key=lambda d: d[1]):
        if _maps(dist, dump):
            # atomic: a start sees the whole archive or none; another start may have moved this dump already
            with contextlib.suppress(FileNotFoundError):
                dump.replace(final)
            break
        if time.time() - mtime > STALE_S:
            with contextlib.suppress(OSError):
                dump.unlink()
    return final.exists()


def _clear(final: Path) -> None:
    for dump in [*(d for d, _ in _dumps(final)), _pending(final)]:
        with contextlib.suppress(OSError):
            dump.unlink()


def _dumps(final: Path) -> list[tuple[Path, float]]:
    """The dump files beside `final` with their modification times (one another start removes meanwhile is left
    out)."""
    out = []
    for dump in final.parent.glob(f"{final.name}.dump-*"):
        with contextlib.suppress(FileNotFoundError):
            out.append((dump, dump.stat().st_mtime))
    return out


def _maps(dist: KafkaDist, jsa: Path) -> bool:
    """Whether a JVM maps `jsa` (-Xshare:on: it must, or exit). One cut short dies of SIGBUS, touching pages past the
    file's end: its crash report goes to a folder thrown away."""
    with tempfile.TemporaryDirectory(prefix="kt-cds-") as tmp:
        cmd = [str(dist.java), *AGENT_OPTIONS, f"-XX:SharedArchiveFile={jsa}", "-Xshare:on", "-cp", dist.classpath]
        cmd += ["-XX:-CreateCoredumpOnCrash", f"-XX:ErrorFile={tmp}/hs_err.log", "-version"]
        try:
            return subprocess.run(cmd, capture_output=True, timeout=60, cwd=tmp, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
