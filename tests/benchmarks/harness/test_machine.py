"""The store's machine record: written by a grid, naming CPU, RAM, OS, thread variables, solver versions; one host per store."""

from __future__ import annotations

import duckdb
import pytest
from harness_configs import config, solver

from deplbench.benchmarks.api import run_config
from deplbench.benchmarks.harness import machine
from deplbench.benchmarks.harness.store import RUN_COLUMNS, Store
from deplbench.errors import InputError


def test_record_names_the_machine_and_the_solvers():
    r = machine.record()
    assert r["cpu"] and r["cpu_count"] >= 1 and 1 <= r["cores"] <= r["cpu_count"]
    assert r["ram_mb"] > 0 and r["os"] and r["kernel"] and r["python"]
    assert set(machine.THREAD_VARS) <= set(r["threads"])
    for pkg in ("pyscipopt", "pulp", "highsbox", "numba", "numpy"):
        assert r["packages"][pkg], pkg
    assert r["binaries"]["cbc"]["version"][0].isdigit()  # PuLP's CBC answers with its version
    assert r["binaries"]["highs"]["version"][0].isdigit()
    assert r["binaries"]["scip"]["version"][0].isdigit()
    assert r["suite"]["version"] and r["suite"]["git_commit"]


def test_grid_writes_machine_and_warmup(tmp_path):
    path = config(tmp_path, [solver("harness-ok")], seeds=(0,), harness="grace = 5.0\neval_samples = 100")
    run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    with Store(tmp_path / "out", read_only=True) as store:
        rec = machine.read(store.con)
        warm = machine.read(store.con, "warmups")
    assert rec["host"] and rec["threads"]["OMP_NUM_THREADS"] == "1"  # what the runs saw (set for the fork server)
    assert len(warm) == 1 and warm[0]["runs"] == 1 and warm[0]["warmup_s"] > 0


def test_a_store_of_another_host_is_refused(tmp_path, monkeypatch):
    path = config(tmp_path, [solver("harness-ok")], seeds=(0,), harness="grace = 5.0\neval_samples = 100")
    run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    monkeypatch.setattr(machine.socket, "gethostname", lambda: "elsewhere")
    with pytest.raises(InputError, match="belongs to one machine"):
        run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    con = duckdb.connect(str(tmp_path / "out" / "results.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    assert machine.read(con)["host"] != "elsewhere"  # nothing written
    con.close()


def test_old_store_gains_the_timing_columns(tmp_path):
    """A store written before the timing columns existed opens, and its old rows read NULL there."""
    old = {k: v for k, v in RUN_COLUMNS.items() if k not in ("cpu_s", "cpu_user_s", "load_start", "shared_core")}
    tmp_path.joinpath("s").mkdir()
    con = duckdb.connect(str(tmp_path / "s" / "results.duckdb"))
    con.execute("CREATE TABLE runs (" + ", ".join(f'"{k}" {v}' for k, v in old.items()) + ")")
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema', 'depl-store/2')")
    con.execute("INSERT INTO runs (run_key, solver, params, harness_status) VALUES ('k', 'depl', '{}', 'ok')")
    con.close()
    with Store(tmp_path / "s") as store:
        df = store.runs()
    assert {"cpu_s", "cpu_user_s", "load_start", "shared_core"} <= set(df.columns)
    assert df["cpu_s"].isna().all()


def test_export_has_the_columns_and_the_machine_record(tmp_path):
    import json

    import pandas as pd

    from deplbench.cli import main

    path = config(tmp_path, [solver("harness-busy", seconds=0.2)], seeds=(0,), harness="grace = 5.0\neval_samples = 100")
    run_config(path, tmp_path / "out", workers=1, progress=False, report=False)
    assert main(["export-results", str(tmp_path / "out"), "--format", "csv", "--out", str(tmp_path / "x")]) == 0
    runs = pd.read_csv(tmp_path / "x" / "runs.csv")
    for col in ("cpu_s", "cpu_user_s", "method_cpu_s", "wall_s", "load_start", "load_end", "runs_beside", "cores",
                "workers", "shared_core", "peak_mem_mb"):
        assert runs[col].notna().all(), col
    rec = json.loads((tmp_path / "x" / "machine.json").read_text())
    assert rec["ram_mb"] > 0 and rec["binaries"]["cbc"]["version"] and len(rec["warmups"]) == 1
