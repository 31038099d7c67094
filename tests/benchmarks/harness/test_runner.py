"""Local execution: statuses, limits, rows, resume, retry, export (tiny test methods, no real solver)."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest
from harness_configs import config, solver

from deplbench.benchmarks.harness.config import load_config
from deplbench.benchmarks.harness.parquet import read_parquet
from deplbench.benchmarks.harness.rows import clopper_pearson_upper
from deplbench.benchmarks.harness.runner import run_grid
from deplbench.benchmarks.harness.store import Store
from deplbench.cli import main


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """One grid with every outcome, run once for the module (2 seeds x 5 methods)."""
    tmp = tmp_path_factory.mktemp("grid")
    path = config(tmp, [solver("harness-ok"), solver("harness-saa", scenarios=1000),
                        solver("harness-sleep", seconds=30, time_limit=0.5), solver("harness-raise"),
                        solver("harness-hog", mb=3000)],
                  harness="grace = 1.0\nmemory_limit_mb = 700\noos_samples = 5000\neval_samples = 2000")
    runs = load_config(path).runs
    out = tmp / "out"
    summary = run_grid(runs, out, workers=2, progress=False)
    with Store(out) as st:
        df = st.runs()
    return runs, out, summary, df


def by(df, name):
    return df[df["solver"] == name]


@pytest.mark.slow
def test_every_run_is_stored_once_with_its_status(grid):
    runs, _, summary, df = grid
    assert summary.ran == len(runs) == 10 and summary.skipped == 0
    assert sorted(df["run_key"]) == sorted(r.key for r in runs)
    assert set(by(df, "harness-ok")["harness_status"]) == {"ok"}
    assert set(by(df, "harness-saa")["harness_status"]) == {"ok"}
    assert set(by(df, "harness-sleep")["harness_status"]) == {"timeout"}
    assert set(by(df, "harness-raise")["harness_status"]) == {"error"}
    assert set(by(df, "harness-hog")["harness_status"]) == {"memory"}
    assert dict(summary.counts) == {"ok": 4, "timeout": 2, "error": 2, "memory": 2}


def test_timeout_is_killed_at_the_hard_limit(grid):
    sleep = by(grid[3], "harness-sleep")
    assert (sleep["status"] == "timeout").all()
    # killed at time_limit + grace (1.5 s), long before the 30 s sleep ends
    assert (sleep["wall_s"] >= 1.5).all() and (sleep["wall_s"] < 10).all()
    assert sleep["error"].str.contains("killed after").all()
    assert (sleep["wall_limit_s"] == 1.5).all()


def test_error_and_memory_keep_their_text(grid):
    df = grid[3]
    assert by(df, "harness-raise")["error"].str.contains("boom: deliberate failure").all()
    assert by(df, "harness-hog")["error"].str.contains("Memory|memory").all()
    assert (by(df, "harness-hog")["memory_limit_mb"] == 700).all()


def test_ok_rows_are_reevaluated_with_provenance(grid):
    df = by(grid[3], "harness-ok")
    assert df["feasible"].all()
    assert (df["cost"] - df["objective"]).abs().max() < 1e-6  # the reference plan's known cost
    assert (df["q_hi"] <= df["target"]).all() and (df["mc_samples"] == 2000).all()
    assert (df["peak_mem_mb"] > 10).all() and (df["wall_s"] >= df["runtime_s"]).all()
    for col in ("package_version", "host", "cpu", "python", "solver_versions", "worker", "started_at"):
        assert df[col].notna().all(), col
    versions = json.loads(df["solver_versions"].iloc[0])
    assert {"numpy", "scipy", "highspy", "ortools", "pyomo", "duckdb"} <= set(versions)
    assert df["oos_samples"].isna().all()  # heuristic plans get no out-of-sample check
    plan = json.loads(df["plan_json"].iloc[0])
    assert plan["schema"] == "depl-plan/1" and plan["segments"]


def test_saa_rows_get_an_out_of_sample_check(grid):
    df = by(grid[3], "harness-saa")
    assert (df["oos_samples"] == 5000).all()
    assert ((df["oos_violations"] >= 0) & (df["oos_violations"] <= 5000)).all()
    for _, r in df.iterrows():
        assert r["oos_rate"] == pytest.approx(r["oos_violations"] / 5000)
        assert r["oos_cp_upper"] == pytest.approx(clopper_pearson_upper(int(r["oos_violations"]), 5000))
        assert r["oos_cp_upper"] > r["oos_rate"]
    # the reference plan's 0.95-quantile is below the target: well under 5 % exceed it
    assert (df["oos_rate"] < 0.05).all()


def test_clopper_pearson_known_values():
    assert clopper_pearson_upper(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert clopper_pearson_upper(100, 100) == 1.0
    assert 0.05 < clopper_pearson_upper(5, 100) < 0.11


def test_rerun_resumes_and_retry_failed_reruns_only_failures(grid, tmp_path):
    runs, out, _, df = grid
    again = run_grid(runs, out, workers=2, progress=False)
    assert again.ran == 0 and again.skipped == len(runs)
    ok = [r for r in runs if r.solver in ("harness-ok", "harness-saa", "harness-raise")]
    fin = df.set_index("run_key")["finished_at"]
    retry = run_grid(ok, out, workers=2, progress=False, retry_failed=True)
    assert retry.ran == 2 and dict(retry.counts) == {"error": 2}
    with Store(out) as st:
        after = st.runs()
    assert len(after) == len(runs) and after["run_key"].is_unique
    new = after.set_index("run_key")["finished_at"]
    changed = {k for k in fin.index if new[k] != fin[k]}
    assert changed == {r.key for r in ok if r.solver == "harness-raise"}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export(grid, tmp_path, fmt, capsys):
    _, out, _, df = grid
    dest = tmp_path / fmt
    assert main(["export-results", str(out), "--format", fmt, "--out", str(dest)]) == 0
    got = read_parquet(dest / "runs.parquet") if fmt == "parquet" else pd.read_csv(dest / "runs.csv")
    assert len(got) == len(df) and set(got["run_key"]) == set(df["run_key"])
    inst = read_parquet(dest / "instances.parquet") if fmt == "parquet" else pd.read_csv(dest / "instances.csv")
    assert set(inst["name"]) == set(df["instance"])
    assert main(["export-results", str(out), "--format", "xml"]) == 2
    assert main(["export-results", str(tmp_path / "nothing"), "--format", "csv"]) == 2


def test_store_holds_the_instances_the_runs_used(grid):
    _, out, _, df = grid
    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    names = {r[0] for r in con.execute("SELECT name FROM instances").fetchall()}
    con.close()
    assert names == set(df["instance"])


def test_missing_solver_module_is_an_error_row(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[experiments]]\nname = "x"\n[[experiments.instances]]\nfamily = "random"\n'
                    'params = { epochs = 3 }\n[[experiments.solvers]]\nname = "ghost"\n'
                    'module = "deplbench.no_such_module"\n')
    runs = load_config(path).runs
    s = run_grid(runs, tmp_path / "out", workers=1, progress=False)
    assert dict(s.counts) == {"error": 1}
    with Store(tmp_path / "out") as st:
        row = st.runs().iloc[0]
    assert "No module named" in row["error"] and row["instance"].startswith("random-")
