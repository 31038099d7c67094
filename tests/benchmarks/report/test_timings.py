"""The report says which time its figures use and how many of their runs shared a core."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import prepare
from deplbench.benchmarks.report.scaling import scaling_series, scaling_table
from deplbench.benchmarks.report.timings import basis_note, shared_note, timing_table


def _runs(shared: list[bool]) -> pd.DataFrame:
    n = len(shared)
    eta = [10.0 * 2**i for i in range(n)]
    return prepare(pd.DataFrame({
        "run_key": [f"k{i}" for i in range(n)], "solver": "depl", "label": "depl", "solver_kind": "heuristic",
        "family": "random", "instance": "i", "max_epochs": 4, "n_models": 2, "n_clusters": 2, "n_datasets": 1,
        "n_options": 4, "noise_mode": "per_run", "harness_status": "ok", "status": "feasible", "feasible": True,
        "cost": 1.0, "p_eta": eta, "p_threads": 1, "p_time_limit": 60.0,
        "runtime_s": [0.001 * e**2 + 1.0 for e in eta], "method_cpu_s": [0.001 * e**2 for e in eta],
        "wall_s": 1.0, "shared_core": shared}))


def test_fits_use_cpu_time_and_count_shared_points():
    d = _runs([True, False, False, True])
    tab = scaling_table(scaling_series(d, time_col="clock_s"))
    row = tab[tab["variable"] == "eta"].iloc[0]
    assert row["time_used"] == "cpu" and row["shared_core_points"] == 2
    assert np.isclose(row["exponent"], 2.0)  # the CPU times grow like eta^2; the wall times, a second of waiting added, do not


def test_notes_name_the_basis_and_the_shared_runs():
    d = _runs([True, False, False, True])
    assert "4 single-threaded runs of 4" in basis_note(d)
    assert shared_note(d).startswith("2 of the 4 runs")
    assert shared_note(_runs([False] * 3)) == ""
    html = timing_table(d, "t", "t1")
    assert "Shared a core" in html and "2 of the 4 runs" in html


def test_repetitions_give_median_and_spread():
    from deplbench.benchmarks.report.timings import repetitions

    d = pd.DataFrame({"method": ["a", "a", "a", "b"], "instance": "i", "clock_s": [1.0, 3.0, 2.0, 5.0]})
    r = repetitions(d).set_index("method")
    assert list(r.index) == ["a"]  # b ran once: no spread to give
    assert (r.loc["a", "repetitions"], r.loc["a", "median_s"], r.loc["a", "spread_s"]) == (3, 2.0, 2.0)
    assert r.loc["a", "relative_spread"] == 1.0
    assert "Repeated timings" in timing_table(d, "t", "t1")
