"""The Apache Kafka distribution, assembled from Maven Central with `testbed/kafka/pom.xml`.

`install()` runs `mvn dependency:copy-dependencies` into `<cache>/kafka-<version>/libs` once; a stamp
file holding the pom's hash makes later calls a no-op, so a cached install works offline.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core import paths
from core.errors import EnvironmentProblem
from core.java import java_home

POM = Path(__file__).with_name("kafka") / "pom.xml"


def _pom_property(name: str) -> str:
    m = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", POM.read_text())
    if not m:
        raise RuntimeError(f"{POM} has no <{name}> property")
    return m.group(1).strip()


KAFKA_VERSION = _pom_property("kafka.version")
JMX_EXPORTER_VERSION = _pom_property("jmx.exporter.version")


@dataclass(frozen=True)
class KafkaDist:
    root: Path

    @property
    def version(self) -> str:
        return KAFKA_VERSION

    @property
    def libs(self) -> Path:
        return self.root / "libs"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    @property
    def jmx_agent(self) -> Path:
        return self.libs / f"jmx_prometheus_javaagent-{JMX_EXPORTER_VERSION}.jar"

    @property
    def java(self) -> Path:
        return java_home() / "bin" / "java"

    def installed(self) -> bool:
        return maven_installed(POM, self.root)


def _pom_hash(pom: Path = POM) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def default_dist(cache: Path | None = None) -> KafkaDist:
    return KafkaDist((cache or paths.cache_dir()) / f"kafka-{KAFKA_VERSION}")


def install(cache: Path | None = None, *, quiet: bool = True) -> KafkaDist:
    """Resolve the jars into the cache unless they are there already. Idempotent."""
    dist = default_dist(cache)
    if not dist.installed():
        maven_install(POM, dist.root, f"Kafka {KAFKA_VERSION}", quiet=quiet)
    return dist


def maven_install(pom: Path, root: Path, what: str, *, quiet: bool = True) -> None:
    """`mvn dependency:copy-dependencies` of `pom` into root/libs, atomically, stamped with the pom's hash."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentProblem(f"Maven (mvn) is needed once to fetch the {what} jars: apt-get install maven")
    tmp = root.with_name(root.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [mvn, "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={tmp / 'libs'}"]
    if quiet:
        cmd.insert(1, "-q")
    env = dict(os.environ, JAVA_HOME=str(java_home()))
    proc = subprocess.run(cmd, env=env, capture_output=quiet, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").splitlines()[-15:])
        raise EnvironmentProblem(f"mvn could not resolve {what}:\n{tail}")
    (tmp / ".installed").write_text(_pom_hash(pom) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)


def maven_installed(pom: Path, root: Path) -> bool:
    stamp = root / ".installed"
    return stamp.exists() and stamp.read_text().strip() == _pom_hash(pom)
