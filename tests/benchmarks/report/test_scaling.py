"""The scaling fits of the report: power laws, a fixed part beside a growing one, per-stage tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deplbench.benchmarks.report.scaling import (
    loglog_fit,
    offset_fit,
    stage_explanations,
    stage_scaling_table,
)


def test_loglog_fit_recovers_a_power_law():
    x = np.array([25.0, 50, 100, 200, 400])
    f = loglog_fit(x, 3e-5 * x**2)
    assert abs(f["b"] - 2.0) < 1e-9 and f["r2"] > 0.999


def test_offset_fit_separates_a_fixed_part():
    rng = np.random.default_rng(0)
    x = np.repeat([25.0, 50, 100, 200, 400, 800, 1600], 4)
    t = (0.1 + 2e-6 * x**2) * np.exp(rng.normal(0, 0.03, x.size))
    plain, o = loglog_fit(x, t), offset_fit(x, t)
    assert plain["b"] < 1.6  # a single power law bends: the fixed part flattens it
    assert o["p_lo"] <= 2.0 <= o["p_hi"] and abs(o["p"] - 2.0) < 0.15
    assert abs(o["fixed"] - 0.1) < 0.02 and o["r2"] > 0.95


def test_offset_fit_refuses_too_few_values():
    assert np.isnan(offset_fit(np.array([1.0, 2.0, 1.0, 2.0]), np.array([1.0, 2.0, 1.0, 2.0]))["p"])


def _runs(eta, t2, cells) -> pd.DataFrame:
    n = len(eta)
    return pd.DataFrame({
        "solver": "depl", "family": "horizon", "noise_mode": "per_run", "max_epochs": 60, "n_models": 3,
        "n_clusters": 3, "n_datasets": 1, "n_options": 24, "p_eta": eta, "p_eps": 0.05, "p_time_limit": 60.0,
        "harness_status": "ok", "status": "feasible", "timed_out": False, "runtime_s": t2,
        "x_t_stage2_s": t2, "x_t_stage3_s": np.full(n, 0.01), "x_dp_cells": cells})


def test_stage_table_fits_the_driven_stage_and_the_work():
    eta = np.repeat([25.0, 50, 100, 200, 400, 800], 2)
    tab, series = stage_scaling_table(_runs(eta, 0.1 + 1e-6 * eta**2, 50 * eta**1.8))
    s2 = tab[tab["stage"] == "stage2"].iloc[0]
    work = tab[tab["stage"] == "stage2 DP states"].iloc[0]
    assert abs(s2["exponent_beyond_fixed"] - 2.0) < 0.05 and s2["predicted"] == "2"
    assert abs(work["exponent"] - 1.8) < 1e-6
    assert np.isnan(tab[tab["stage"] == "stage3"].iloc[0]["exponent_beyond_fixed"])  # not driven by eta
    assert all("DP states" not in s["var"] for s in series)  # the figure draws times only
    text = " ".join(stage_explanations(tab))
    assert "eta^2.0" in text and "eta^1.80" in text
