"""Limits that mean what they say: saa-bounds ends within its time limit and grace; counts are capped before
any allocation; the memory limit is the resident memory of the process tree."""

from __future__ import annotations

import json
import time

import pytest

import deplbench.benchmarks.harness.testing  # noqa: F401 - registers the harness-* methods
from deplbench.cli import main
from deplbench.cli.saa_bounds import MAX_REPLICATIONS, SAA_GRACE_S
from hostile.kit import assert_one_line, fixtures


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return fixtures(d)


@pytest.mark.parametrize("option,value,largest", [
    ("--replications", "100000000000", MAX_REPLICATIONS), ("--replications", str(MAX_REPLICATIONS + 1), MAX_REPLICATIONS),
    ("--scenarios", "100000000000", 100_000), ("--lb-scenarios", "10000000", 100_000),
    ("--eval-samples", "100000000000", 10_000_000), ("--eval-samples", "1e12", None),
    ("--time-limit", "nan", None), ("--time-limit", "-1", None), ("--time-limit", "inf", None)])
def test_absurd_saa_bounds_counts_are_refused_naming_the_option(tmp_path, capsys, files, option, value, largest):
    line = assert_one_line(["saa-bounds", files["inst"], option, value], capsys, option, watch=(tmp_path,))
    if largest is not None:
        assert str(largest) in line, line


@pytest.mark.slow
@pytest.mark.parametrize("replications", [1, 3])
def test_saa_bounds_ends_within_its_time_limit_and_grace(tmp_path, capsys, replications):
    inst = tmp_path / "p.json"
    assert main(["generate", "paper-alexnet", "--out", str(inst)]) == 0
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(["saa-bounds", str(inst), "--time-limit", "2", "--replications", str(replications), "--json"])
    took = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert rc == 0
    assert took <= 2 + SAA_GRACE_S, took
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert len(d["replication_values"]) == replications


def _solve(files, tmp_path, capsys, solver, limit, *sets):
    args = ["solve", str(files["inst"]), "--solver", solver, "--memory-limit", str(limit), "--time-limit", "60",
            "--out", str(tmp_path / "p.json")]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_reserved_address_space_is_not_resident_memory(tmp_path, capsys, files):
    """3 GB reserved, 50 MB touched, under a 2000 MB limit: the run is not a memout (it was, under RLIMIT_AS)."""
    out = _solve(files, tmp_path, capsys, "harness-reserve", 2000, "mb=3000", "touch=50")
    assert out.startswith("harness-reserve: feasible"), out


@pytest.mark.slow
@pytest.mark.parametrize("solver,sets", [("harness-hog", ("mb=600",)),
                                          ("harness-hog-child", ("mb=200", "children=2"))])
def test_resident_memory_of_the_tree_over_the_limit_is_memout(tmp_path, capsys, files, solver, sets):
    out = _solve(files, tmp_path, capsys, solver, 300, *sets)
    assert out.startswith(f"{solver}: memout"), out
    assert "resident memory of its process tree (limit 300 MB)" in out or "MemoryError" in out, out


@pytest.mark.slow
def test_a_grid_stores_the_tree_peak_under_a_memory_limit(tmp_path):
    from harness_configs import config, solver

    from deplbench.benchmarks.api import run_config
    from deplbench.benchmarks.harness.store import Store

    cfg = config(tmp_path, [solver("harness-reserve", mb=3000.0, touch=200.0), solver("harness-hog-child", mb=150.0,
                                                                                         children=2, hold=5.0)],
                 seeds=(0,), harness="grace = 5.0\nmemory_limit_mb = 1000\neval_samples = 100")
    run_config(cfg, tmp_path / "out", workers=1, progress=False, report=False)
    with Store(tmp_path / "out", read_only=True) as st:
        rows = st.runs().set_index("solver")
    assert rows.loc["harness-reserve", "harness_status"] == "ok", rows.loc["harness-reserve", "error"]
    assert 200 <= rows.loc["harness-reserve", "peak_mem_mb"] < 1000  # touched, not reserved
    assert rows.loc["harness-hog-child", "harness_status"] == "ok"
    assert rows.loc["harness-hog-child", "peak_mem_mb"] >= 300  # two grandchildren of 150 MB: the tree's sum
