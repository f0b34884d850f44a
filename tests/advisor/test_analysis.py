"""The Spark analysis, the advisor's rules and the capacity plan, on recorded and generated studies."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from advisor import diagnose
from advisor.analysis import analyze
from advisor.context import Context
from advisor.plan import plan
from advisor.rules import recommend
from core import procs
from core.errors import UserError
from records import synthetic
from records.analysis import TRIAL_FIELDS, AnalysisSummary, load_table, rows
from records.study import open_study
from tests.helpers import FIXTURES, cli, kafkatune

FIXTURE = FIXTURES / "study-demo"
RECORDED_RUNS = FIXTURES / "recorded" / "diagnosis"


@pytest.fixture(scope="module")
def fixture_study(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Path, AnalysisSummary]:
    d = tmp_path_factory.mktemp("fixture") / "study-demo"
    shutil.copytree(FIXTURE, d)
    return d, analyze(d, spark)


def _trial_json(d: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in d.glob("trials/*/trial.json")}


def test_fixture_study_tables(fixture_study: tuple[Path, AnalysisSummary]) -> None:
    d, summary = fixture_study
    records = _trial_json(d)
    trials = {t["trial_id"]: t for t in rows(load_table(d / "analysis", "trials"))}
    assert set(trials) == set(records) and summary.trials == len(records)
    profile = json.loads((d / "profile.json").read_text())
    ceiling = profile["network"]["nic_mb_s_measured"]  # 3 brokers, RF 3, 1 group: P_max = B
    for tid, rec in records.items():
        t = trials[tid]
        assert t["state"] == rec["state"]
        if rec["state"] != "complete":
            continue
        assert t["mb_s"] == pytest.approx(rec["measured"]["throughput_mb_s"])
        assert t["fraction_of_ceiling"] == pytest.approx(t["mb_s"] / ceiling)
        # Spark's per-second aggregation agrees with the record's own broker rates (same JMX rows)
        res = json.loads((d / "trials" / tid / "result.json").read_text())
        assert t["produce_mb_s"] == pytest.approx(res["summary"]["broker_rates"]["produce_mb_s"], rel=0.05)
        # RF 3: every produced byte is fetched by two followers
        assert t["replication_ratio"] == pytest.approx(2.0, rel=0.1)
        assert t["bound"] in diagnose.BOUNDS
        assert t["bound_reason"]
        assert t["measure_seconds"] and t["second_cv"] is not None
        assert t["e2e_p99_ms"] and t["publish_p99_ms"]
    # the best confirmed trial of a shaped 25 MB/s testbed is network-bound
    best = max((t for t in trials.values() if t["stage"] == "confirm" and t["mb_s"]), key=lambda t: t["mb_s"])
    assert best["bound"].startswith("network"), best["bound_reason"]
    params = rows(load_table(d / "analysis", "params"))
    swept = {(p["stage"], p["param"]) for p in params}
    assert ("producer", "batch.size") in swept
    for stage, param in swept:  # each value group's trial ids are trials of that stage with that value
        for p in (p for p in params if (p["stage"], p["param"]) == (stage, param) and not p["binned"]):
            assert all(trials[i]["params"][param] == p["value"] and trials[i]["stage"] == stage for i in p["trial_ids"])
    pareto = rows(load_table(d / "analysis", "pareto"))
    assert pareto and all(p["trial_id"] in trials for p in pareto)
    series = rows(load_table(d / "analysis", "series"))
    assert {s["trial_id"] for s in series} <= set(trials)
    assert summary.rows["series"] == len(series) and summary.synthetic is False


def test_recommendations_cite_trials_and_measured_deltas(fixture_study: tuple[Path, AnalysisSummary]) -> None:
    d, _ = fixture_study
    trials = load_table(d / "analysis", "trials")
    recs = recommend(trials, load_table(d / "analysis", "params"), Context())
    ids = set(trials["trial_id"])
    assert recs and recs[0].severity == "high"
    best = next(r for r in recs if r.rule == "best-config")
    assert best.action and best.expected_gain_mb_s and best.expected_gain_mb_s > 0
    assert all(t in ids for r in recs for t in r.trials)
    assert any(r.rule == "param-effect" and r.evidence for r in recs)
    proc = kafkatune("advise", str(d), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["recommendations"]
    assert [r["rule"] for r in out] == [r.rule for r in recs]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Path, AnalysisSummary]:
    d = synthetic.generate(tmp_path_factory.mktemp("gen") / "gen-study", trials=40, samples=400_000)
    return d, analyze(d, spark)


def test_generated_study_recovers_the_planted_response(generated: tuple[Path, AnalysisSummary]) -> None:
    d, summary = generated
    assert summary.synthetic is True and summary.trials == 40 and (summary.samples or 0) >= 400_000
    trials = {t["trial_id"]: t for t in rows(load_table(d / "analysis", "trials"))}
    for tid, rec in _trial_json(d).items():
        c = rec["config"]
        want = synthetic.planted_mb_s(c["batch.size"], c["linger.ms"], c["num.replica.fetchers"])
        # the mean of the measure-phase per-second client rows (±1 % noise per row)
        assert trials[tid]["second_mean_mb_s"] == pytest.approx(want, rel=0.01)
        assert trials[tid]["produce_mb_s"] == pytest.approx(want, rel=1e-6)
        assert trials[tid]["replication_ratio"] == pytest.approx(2.0)
        assert trials[tid]["leader_share"] == pytest.approx(1 / 3)  # leaders balanced: each broker a third
    batch = [p for p in rows(load_table(d / "analysis", "params")) if p["param"] == "batch.size"]
    assert next(p for p in batch if p["best_value"])["value"] == str(synthetic.BEST_BATCH)
    linger = [p for p in rows(load_table(d / "analysis", "params")) if p["param"] == "linger.ms"]
    assert linger and all(p["binned"] for p in linger) and len(linger) <= 6  # continuous: quantile bins
    imp = rows(load_table(d / "analysis", "importance"))
    assert {i["param"] for i in imp} >= {"batch.size"} and sum(i["importance"] for i in imp) == pytest.approx(1.0)
    # two objectives (MB/s up, p99 down): no trial on the front is dominated by another trial
    front = rows(load_table(d / "analysis", "pareto"))
    allt = list(trials.values())
    for f in front:
        assert not any(
            o["mb_s"] >= f["mb_s"]
            and o["e2e_p99_ms"] <= f["e2e_p99_ms"]
            and (o["mb_s"], o["e2e_p99_ms"]) != (f["mb_s"], f["e2e_p99_ms"])
            for o in allt
        )
    # the fetcher rule sees the planted cost of multiples of the broker count
    recs = recommend(load_table(d / "analysis", "trials"), load_table(d / "analysis", "params"), Context())
    rf = next(r for r in recs if r.rule == "replica-fetchers-multiple")
    assert rf.expected_gain_mb_s and rf.expected_gain_mb_s > 0


# ---- a Spark standalone cluster from the pyspark install -----------------------------------------


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import pyspark

    from spark.session import environment

    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("spark-standalone")
    env = {
        **os.environ,
        **environment(),
        "SPARK_HOME": str(home),
        "SPARK_LOG_DIR": str(work),
        "SPARK_NO_DAEMONIZE": "1",
    }
    port, ui, wui = procs.free_port(), procs.free_port(), procs.free_port()
    cls = str(home / "bin" / "spark-class")
    master = subprocess.Popen(
        [
            cls,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        env=env,
        stdout=(work / "master.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"spark://127.0.0.1:{port}"
    worker = subprocess.Popen(
        [
            cls,
            "org.apache.spark.deploy.worker.Worker",
            url,
            "--host",
            "127.0.0.1",
            "--cores",
            "2",
            "--memory",
            "3g",
            "--webui-port",
            str(wui),
            "--work-dir",
            str(work / "work"),
        ],
        env=env,
        stdout=(work / "worker.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    st = json.loads(r.read())
                if any(w.get("state") == "ALIVE" for w in st.get("workers", [])):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (work / "master.log").read_text()[-2000:]
            assert master.poll() is None and worker.poll() is None, "standalone master or worker exited"
            time.sleep(1)
        yield url
    finally:
        for p in (worker, master):
            p.terminate()
        for p in (worker, master):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _rows(d: Path, table: str, key: tuple[str, ...]) -> list[dict[str, Any]]:
    return sorted(rows(load_table(d, table)), key=lambda r: tuple(str(r[k]) for k in key))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_standalone_cluster_gives_the_same_tables(
    fixture_study: tuple[Path, AnalysisSummary], standalone: str, tmp_path: Path
) -> None:
    d, _ = fixture_study
    out = tmp_path / "standalone"
    proc = kafkatune("analyze", str(d), "--master", standalone, "--out", str(out), "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["master"] == standalone
    keys = {
        "trials": ("trial_id",),
        "params": ("stage", "param", "value"),
        "importance": ("stage", "param"),
        "pareto": ("trial_id",),
        "series": ("trial_id", "second"),
    }
    for table, key in keys.items():
        local, remote = _rows(d / "analysis", table, key), _rows(out, table, key)
        assert len(local) == len(remote), table
        for a, b in zip(local, remote, strict=True):
            assert _same(a, b), (table, a, b)


# ---- bad input ------------------------------------------------------------------------------------


def test_analyze_and_plan_bad_input_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such study folder"):
        open_study(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="neither trials"):
        open_study(tmp_path / "empty")
    proc = cli("analyze", str(tmp_path / "empty"))
    assert proc.returncode == 2 and "neither trials" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("plan", "--target-mb-s", "100")
    assert proc.returncode == 2 and "--nic-mbps" in proc.stderr
    proc = cli("plan", "--target-mb-s", "100", "--nic-mbps", "100", "--headroom", "1.5")
    assert proc.returncode == 2 and "--headroom" in proc.stderr


# ---- capacity plan --------------------------------------------------------------------------------


def test_plan_sizes_the_reference_case_and_scales_with_the_target() -> None:
    p = plan(800, rf=3, nic_mb_s=1170, disk_mb_s=1200, headroom=0.7)
    # without a study: docs/reference.md §1's 70 % efficiency; the planned cluster carries the target at headroom
    assert p.brokers >= 3 and p.ceiling_mb_s * p.efficiency * p.headroom >= 800
    # with one broker down (the default allowance) the rest still carry it, and one broker less would not
    assert p.spare_brokers == 1
    assert ((p.brokers - 1) / p.brokers) * p.ceiling_mb_s * p.efficiency * p.headroom >= 800
    assert ((p.brokers - 2) / p.brokers) * p.ceiling_mb_s * p.efficiency * p.headroom < 800
    bare = plan(800, rf=3, nic_mb_s=1170, disk_mb_s=1200, headroom=0.7, spare_brokers=0)
    assert bare.brokers == p.brokers - 1
    # each broker's NIC is sized for its share with one broker down
    busier = max(p.per_broker_mb_s["in"], p.per_broker_mb_s["out"]) * p.brokers / (p.brokers - 1)
    assert p.nic_mb_s_needed == pytest.approx(busier / (p.efficiency * p.headroom))
    assert any("1 broker(s) down" in e for e in p.explain) and not any("down" in e for e in bare.explain)
    assert any(e.startswith("efficiency 70%: assumed") for e in p.explain)
    assert p.partitions % p.brokers == 0 and p.consumers <= p.partitions
    assert p.per_broker_mb_s["in"] == pytest.approx(800 * 3 / p.brokers)
    assert p.assumptions  # it says what it assumed
    assert plan(1600, rf=3, nic_mb_s=1170, disk_mb_s=1200).brokers > p.brokers
    assert plan(800, rf=3, nic_mb_s=1170, disk_mb_s=200).bound == "disk"
    a1 = plan(800, rf=3, acks="1", nic_mb_s=1170)
    assert any("acks=1" in a for a in a1.assumptions)


def test_plan_leaves_client_bound_trials_out_and_says_at_which_size_rates_were_measured() -> None:
    def t(tid: str, mb_s: float, size: int, **kw: Any) -> dict[str, Any]:
        row = {k: None for k, _ in TRIAL_FIELDS}
        row.update(
            trial_id=tid,
            stage="s",
            state="complete",
            mb_s=mb_s,
            message_bytes=size,
            ceiling_mb_s=100.0,
            fraction_of_ceiling=mb_s / 100,
            client_bound=False,
            bound="none",
            started_ns=1,
            params={"acks": "all", "producers": "2", "consumers": "2", "partitions": "6"},
        )
        row.update(kw)
        return row

    # "big" carries an older record's client_bound flag (set by any full buffer): its loop was far from a core
    trials = pd.DataFrame(
        [
            t("client", 90.0, 1024, client_loop_cpu_max=0.97, bound="client"),
            t("big", 60.0, 1024, client_bound=True, client_loop_cpu_max=0.2, bound="network_in"),
            t("small", 30.0, 100),
        ]
    )
    p = plan(100, nic_mb_s=100, message_bytes=100, trials=trials)
    assert p.basis is not None and p.basis.trial == "big" and p.efficiency == pytest.approx(0.6)  # not the 90 %
    assert p.basis.excluded_client_bound == 1 and "1 client-bound trial(s) left out" in p.explain[0]
    assert p.basis.unit_trial == "small" and p.basis.per("producers") == pytest.approx(15.0)  # at 100 B
    assert not any("not at the plan's" in a for a in p.assumptions)
    q = plan(100, nic_mb_s=100, message_bytes=4096, trials=trials)
    assert any("measured at 1024-B messages (big), not at the plan's 4096 B" in a for a in q.assumptions)
    with pytest.raises(UserError, match="client-bound"):
        plan(100, nic_mb_s=100, trials=trials[trials["trial_id"] == "client"])
    # a confirmed configuration: its repeats' mean with the interval, not its luckiest run
    reps = pd.DataFrame([t("c1", 50.0, 1024), t("c2", 58.0, 1024), t("c3", 54.0, 1024), t("lucky", 66.0, 1024)])
    c = plan(100, nic_mb_s=100, trials=reps, confirmed=["c1", "c2", "c3"])
    assert c.efficiency == pytest.approx(0.54) and c.basis is not None and c.basis.trials == ("c1", "c2", "c3")
    assert c.basis.per("producers") == pytest.approx(27.0)  # 54 MB/s over 2 producers
    assert "c1, c2, c3: 54.00 MB/s (95 % CI 44.06–63.94, n=3)" in c.explain[0]
    assert "one run" in plan(100, nic_mb_s=100, trials=reps).explain[0]  # no confirmation: the best run, n=1


def test_plan_from_a_study_uses_its_measured_efficiency(fixture_study: tuple[Path, AnalysisSummary]) -> None:
    d, _ = fixture_study
    proc = kafkatune("plan", "--target-mb-s", "100", "--from", str(d), "--json")
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)
    trials = {t["trial_id"]: t for t in rows(load_table(d / "analysis", "trials"))}
    basis = trials[p["basis"]["trial"]]
    assert p["efficiency"] == pytest.approx(min(1.0, basis["fraction_of_ceiling"]), abs=1e-3)
    prof = json.loads((d / "profile.json").read_text())
    # per broker NIC from the study's measured profile; the planned cluster carries 100 MB/s
    assert p["ceiling_mb_s"] * p["efficiency"] * p["headroom"] >= 100
    assert p["ceiling_mb_s"] == pytest.approx(prof["network"]["nic_mb_s_measured"] * p["brokers"] / 3, rel=1e-3)


@pytest.mark.parametrize("name", sorted(p.parent.name for p in RECORDED_RUNS.glob("*/result.json")))
def test_the_recorded_diagnosis_runs_analysis_is_what_spark_computes_from_them(
    name: str, spark: Any, tmp_path: Path
) -> None:
    """tests/advisor/test_recorded_diagnosis.py judges the recorded analyses: they must be what the Spark job makes
    of the recorded runs today, or they are stale and are recorded again."""
    # in a folder named as the recording's was (`run`): a single run's trial id is its folder's name
    run = Path(shutil.copytree(RECORDED_RUNS / name, tmp_path / "run", ignore=shutil.ignore_patterns("analysis")))
    analyze(run, spark)
    (now,) = rows(load_table(run / "analysis", "trials"))
    (then,) = rows(load_table(RECORDED_RUNS / name / "analysis", "trials"))
    assert now.keys() == then.keys()
    assert {k: v for k, v in now.items() if v != then[k] and not (v != v and then[k] != then[k])} == {}, name
