"""The report section ``saa-bounds``: replication lower bound and violation bounds per (method, instance, S)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest
from scipy import stats

from deplbench.benchmarks.report.saa import saa_table
from deplbench.benchmarks.report.sections import ReportContext, registered_sections


def _ctx(runs: pd.DataFrame, tmp_path) -> ReportContext:
    ctx = ReportContext(runs=runs, instances=lambda name: SimpleNamespace(loss=SimpleNamespace(quantile=0.95)),
                        fig_dir=tmp_path, root=tmp_path)
    ctx.__dict__["refs"] = pd.DataFrame({"ref_lo": [3.5], "ref_hi": [3.5], "proven": [True]},
                                        index=pd.Index(["i1"], name="instance"))
    return ctx


def test_saa_table_replication_bound_and_violation(tmp_path):
    R = 12
    runs = pd.DataFrame({
        "solver_kind": ["saa"] * R + ["exact"], "method": ["milp-scip"] * R + ["bruteforce"],
        "instance": ["i1"] * (R + 1), "p_scenarios": [200] * R + [None],
        "status": ["optimal"] * (R - 1) + ["timeout", "optimal"],
        "objective": [float(v) for v in range(1, R + 1)] + [3.5], "bound": [None] * (R - 1) + [0.5, 3.5],
        "feasible": [True] * (R - 2) + [False, True, True], "cost": [float(v) for v in range(1, R + 1)] + [3.5],
        "oos_rate": [0.04] * R + [None], "oos_cp_upper": [0.045] * (R - 1) + [0.06, None],
        "runtime_s": [1.0] * (R + 1), "x_root_gap": [0.1] * R + [None],
    })
    t = saa_table(_ctx(runs, tmp_path))
    assert len(t) == 1
    row = t.iloc[0]
    assert row["R"] == R and row["optimal"] == R - 1 and row["certified"] == f"{R - 1}/{R}"
    assert row["oos_cp95_max"] == pytest.approx(0.06) and row["root_gap"] == pytest.approx(0.1)
    # the timeout contributes its bound 0.5, so the sorted values are 0.5, 1, 2, ..., 11
    rho = stats.binom.cdf(10, 200, 0.05)  # allowed = 200 - ceil(0.95 * 200) = 10
    L = max(k for k in range(1, R + 1) if stats.binom.cdf(k - 1, R, rho) <= 0.05)
    assert row["rho"] == pytest.approx(rho) and row["lb_rank"] == L
    assert row["lower_bound"] == sorted([0.5, *range(1, R)])[L - 1]
    assert row["exact_optimum"] == 3.5 and row["best_certified"] == 1.0


def test_section_is_registered_and_skips_stores_without_saa(tmp_path):
    spec = next(s for s in registered_sections() if s.name == "saa-bounds")
    runs = pd.DataFrame({"solver_kind": ["exact"], "method": ["bruteforce"], "instance": ["i1"]})
    assert spec.func(_ctx(runs, tmp_path)) is None
    assert math.isfinite(spec.order)
