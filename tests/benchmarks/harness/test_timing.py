"""Every stored run carries its CPU time, load, runs beside it, cores and whether it shared a core."""

from __future__ import annotations

import os

import duckdb
from harness_configs import config, solver

from deplbench.benchmarks.api import run_config
from deplbench.benchmarks.harness import timing


def test_in_flight_counts_the_runs_beside():
    with timing.in_flight() as a:
        assert a[0] == 0
        with timing.in_flight() as b:
            assert (a[0], b[0]) == (1, 1)
            with timing.in_flight() as c:
                assert c[0] == 2
        assert a[0] == 2  # the most seen beside it, not the count at its end
    with timing.in_flight() as d:
        assert d[0] == 0  # the finished runs are gone


def test_shared_core_rule():
    assert not timing.shared(0, 2, (1.0, 1.9))
    assert timing.shared(2, 2, (0.0, 0.0))  # three runs on two cores
    assert timing.shared(0, 2, (0.5, 2.4))  # a load above the cores at its end
    assert not timing.shared(1, 2, (None, None))


def test_rows_of_a_grid_carry_the_timing_columns(tmp_path):
    """Four CPU-burning runs, three workers on this machine: CPU time of the tree, load, cores."""
    path = config(tmp_path, [solver("harness-busy", seconds=0.4), solver("harness-busy-child", seconds=0.4)],
                  harness="grace = 20.0\neval_samples = 100")
    run_config(path, tmp_path / "out", workers=3, progress=False, report=False)
    con = duckdb.connect(str(tmp_path / "out" / "results.duckdb"), read_only=True)
    rows = con.execute("SELECT solver, harness_status, wall_s, cpu_user_s, cpu_sys_s, cpu_s, method_cpu_s, "
                       "load_start, load_end, runs_beside, cores, workers, shared_core FROM runs").df()
    con.close()
    assert len(rows) == 4 and set(rows["harness_status"]) == {"ok"}
    for r in rows.itertuples():
        assert r.cpu_s >= 0.4 and abs(r.cpu_s - (r.cpu_user_s + r.cpu_sys_s)) < 1e-9
        assert r.method_cpu_s >= 0.4 and r.cpu_s >= r.method_cpu_s  # the tree's span holds the method's
        assert r.load_start >= 0 and r.load_end >= 0
        assert r.cores == len(os.sched_getaffinity(0)) and r.workers == 3
        assert 0 <= r.runs_beside <= 2
        assert r.shared_core == (r.runs_beside + 1 > r.cores or max(r.load_start, r.load_end) > r.cores)


def test_workers_mark_shared_cores_only_where_runs_were_not_counted():
    row = {"cores": 2, "shared_core": False}
    assert timing.with_workers(dict(row), 3)["shared_core"] is False  # threads: runs_beside decides
    assert timing.with_workers(dict(row), 3, counted=False)["shared_core"] is True  # Dask processes
    assert timing.with_workers(dict(row), 2, counted=False)["shared_core"] is False


def test_method_time_uses_cpu_time_for_single_threaded_runs_only():
    import pandas as pd

    d = pd.DataFrame({"runtime_s": [1.0, 1.0, 1.0, 1.0], "method_cpu_s": [0.4, 3.5, 0.4, None],
                      "p_threads": [1, 4, 4, 1]})
    t, basis = timing.method_time(d)
    assert list(basis) == ["cpu", "wall", "wall", "wall"]  # waited for a core; 4 threads used; asked 4; old store
    assert list(t) == [0.4, 1.0, 1.0, 1.0]
