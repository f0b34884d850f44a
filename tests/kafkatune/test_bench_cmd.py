"""kafkatune bench --search: a sweep's search settings for a bench's search, each checked as a sweep spec checks it
and before any cluster is contacted (--dry-run says the search it would run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli, write_workload


def _bench(tmp_path: Path, *args: str, rate: float = 0) -> tuple[int, str]:
    wl = write_workload(tmp_path / "w.yaml", producerRate=rate)
    proc = cli("bench", str(wl), "--dry-run", "--state-dir", str(tmp_path / "state"), *args)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_search_set_as_a_sweeps_is_the_one_the_bench_says_it_runs(tmp_path: Path) -> None:
    rc, out = _bench(tmp_path, "--search", "min_step_s=3", "--search", "max_step_s=8", "--search", "resolution=0.1")
    assert rc == 0, out
    assert "search: steps of 3-8 judged s, warm-up 3 s, resolution 0.1" in out
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    ("args", "rate", "said"),
    [
        (["--search", "min_step_s=9", "--search", "max_step_s=8"], 0, "min_step_s (9) must not exceed max_step_s (8)"),
        (["--search", "steps=3"], 0, "--search: steps: unknown field (allowed: warmup_s, start"),
        (["--search", "max_step_s=1"], 0, "--search: max_step_s: Input should be greater than or equal to 2"),
        (["--search", "max_step_s"], 0, "expected FIELD=VALUE, e.g. max_step_s=8 (fields: warmup_s"),
        (["--search", "max_step_s=8"], 1000, "--search: only with producerRate 0"),
    ],
)
def test_a_bad_search_setting_is_refused_naming_the_field(
    tmp_path: Path, args: list[str], rate: float, said: str
) -> None:
    rc, out = _bench(tmp_path, *args, rate=rate)
    assert rc == 2 and said in out, out
