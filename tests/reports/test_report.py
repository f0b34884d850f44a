"""Reports: the HTML opens in headless Chromium with every chart, the .properties files parse."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from advisor.analysis import analyze
from records import synthetic
from records.analysis import load_table, rows
from records.profile import ClusterProfile, Machine
from reports.properties import parse
from reports.study import measured_on
from tests.helpers import FIXTURES, kafkatune

FIXTURE = FIXTURES / "study-demo"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with a fresh profile; console messages go to stderr (--enable-logging)."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: `make deps` installs Debian's chromium package")
    profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


CONSOLE = re.compile(r"CONSOLE|Uncaught|console\.error", re.I)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE.search(line)]


def test_console_error_detection_is_not_vacuous(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('planted'); undefinedFunction();</script></body></html>")
    proc = chromium(bad, tmp_path, "--dump-dom")
    assert console_errors(proc.stderr), proc.stderr[-2000:]


def _check_report(run_dir: Path, tmp: Path, expect: set[str]) -> dict[str, Any]:
    proc = kafkatune("report", str(run_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    page = Path(out["html"])
    assert expect <= set(out["charts"]), out["charts"]
    text = page.read_text()
    # opens offline: nothing is loaded from anywhere (XML namespace names are not loads)
    assert not re.findall(r"""(?:src|href|url)\s*[=(]\s*["']?(?:https?:)?//""", text), "must open offline"
    assert "<script" not in text
    dom = chromium(page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not console_errors(dom.stderr), console_errors(dom.stderr)
    figures = re.findall(r'<figure class="chart" id="chart-([^"]+)"[^>]*>\s*<svg', dom.stdout)
    assert sorted(figures) == sorted(out["charts"])  # every chart is in the rendered DOM with its SVG
    assert len(re.findall(r"<figcaption><b>[^<]+</b>[^<]{10,}</figcaption>", dom.stdout)) == len(figures)
    shot = tmp / f"{run_dir.name}.png"
    proc = chromium(page, tmp, "--window-size=1200,3000", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000  # a blank page is a few kB
    return out


def test_report_of_a_recorded_study(tmp_path: Path, spark: Any) -> None:
    d = tmp_path / "study-demo"
    shutil.copytree(FIXTURE, d)
    analyze(d, spark)
    out = _check_report(d, tmp_path, {"history", "rates", "latency", "importance", "stability"})
    assert any(c.startswith("param-") for c in out["charts"])
    md = (d / "report" / "report.md").read_text()
    for section in ("## Recommendations", "## Recommended settings", "## Capacity plan", "## Durability trade-off"):
        assert section in md
    assert "## Measured on\n\n- 2 CPUs\n" in md  # a profile from before the CPU probe: what it has, no more
    # .properties: parse, only swept keys, values of the best trial
    trials = {t["trial_id"]: t for t in rows(load_table(d / "analysis", "trials"))}
    spec_keys = {"batch.size", "linger.ms", "producers", "num.io.threads", "num.replica.fetchers"}
    best_id = re.search(r"from trial (\S+)", (d / "report" / "recommended" / "producer.properties").read_text())
    assert best_id
    best = trials[best_id.group(1)]
    seen = {}
    for name in ("producer.properties", "consumer.properties", "server.properties", "topic-configs.txt"):
        props = parse(d / "report" / "recommended" / name)
        assert set(props) <= spec_keys, (name, props)
        for k, v in props.items():
            assert best["params"][k] == v
        seen.update(props)
    assert seen  # the demo changed batch.size at least


def test_report_of_a_multi_objective_study_has_a_pareto_chart(tmp_path: Path, spark: Any) -> None:
    d = synthetic.generate(tmp_path / "gen", trials=20, samples=40_000)
    analyze(d, spark)
    _check_report(d, tmp_path, {"history", "pareto", "importance"})
    assert "synthetic" in (d / "report" / "report.md").read_text()


def test_durability_trade_off_is_spelled_out_when_the_study_varied_acks_or_flushes() -> None:
    from advisor.study import durability as _durability

    def t(tid: str, mb_s: float, **params: str) -> dict[str, Any]:
        return {"trial_id": tid, "state": "complete", "mb_s": mb_s, "params": params}

    lines = _durability(
        pd.DataFrame(
            [
                t("a", 10.0, acks="all"),
                t("b", 14.0, acks="1"),
                t("c", 6.0, acks="all", **{"log.flush.interval.messages": "1"}),
            ]
        )
    )
    assert any("acks=1: best 14.00 MB/s (b) vs acks=all 10.00 MB/s (a): +4.00 MB/s" in x for x in lines), lines
    assert any(x.startswith("forced flushes: best 6.00 MB/s (c) vs 14.00 MB/s") for x in lines), lines
    assert _durability(pd.DataFrame([t("a", 10.0, acks="all"), t("b", 9.0, acks="all")])) == []


def test_the_machine_a_study_was_measured_on_is_stated_from_its_profile() -> None:
    """The CPU probe of the day first (with its spread), the writeback the brokers ran with, their JVM."""
    machine = {
        "cpus": 2,
        "cpu_probe_ms": 81.5,
        "cpu_probe_ms_range": [60.25, 90.0],
        "writeback": {"dirty_expire_centisecs": 100},
        "broker_jvm_options": ["-Xmx1g", "-XX:+UseG1GC"],
    }
    lines = measured_on(Machine.of(ClusterProfile(machine=machine)))
    assert lines[0].startswith("CPU probe 81.5 ms (median of 5, 60.25-90; lower is faster")
    assert lines[1:] == [
        "2 CPUs, shared by the brokers and the load generator",
        "host page-cache writeback: continuous while the testbed ran (`testbed/writeback.py`)",
        "brokers' JVM: `-Xmx1g -XX:+UseG1GC`",
    ]
    left = measured_on(
        Machine.of(ClusterProfile(machine={"writeback": "left as the kernel has them: changing vm.dirty_* needs root"}))
    )
    assert left == ["host page-cache writeback: left as the kernel has them: changing vm.dirty_* needs root"]
    assert "says nothing of its machine" in measured_on(Machine.of(None))[0]


def test_a_headline_whose_written_configuration_is_kafkas_defaults_says_no_key_changes() -> None:
    """The written phase found the files empty and the chosen configuration not ahead of Kafka's defaults in their
    own blocks (sweeps.written): the headline names the defaults and says there is nothing to change."""
    from core.stats import mean_interval
    from records.confirmation import DEFAULTS, Arm, Confirmation, Written
    from records.summary import Best, Summary
    from reports.study import _confirmed_headline

    iv = mean_interval([9.8, 10.1, 10.3])
    dflt = Arm(DEFAULTS, {}, (9.8, 10.1, 10.3), ("w-1", "w-3", "w-5"), interval=iv, mean_mb_s=10.1)
    w = Written((dflt,), DEFAULTS, dropped=("batch.size",))
    sw = Summary("s", objective="sustainable_mb_s", confirmation=Confirmation((), "producer#0", written=w))
    best = Best(10.1, {}, "as written", DEFAULTS, iv)
    (line, *_) = _confirmed_headline(sw, sw.confirmation, best, None)  # type: ignore[arg-type]
    assert line.startswith("Recommended (baseline:kafka-defaults): sustainable rate **10.07 MB/s"), line
    assert "no key to change: producer#0 did not beat Kafka's defaults beyond noise in their own blocks" in line
