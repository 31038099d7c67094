"""The claims study: its numbers, its findings checked against the store, and the quick config end to end."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks.harness.frame import feasible_mask
from deplbench.benchmarks.report import claims_complexity, claims_study
from deplbench.benchmarks.report.references import references
from deplbench.benchmarks.report.sections import ReportContext, registered_sections


def test_share_interval_is_clopper_pearson():
    share, lo, hi = claims_study.share_ci(0, 10)
    assert share == 0 and lo == 0 and hi == pytest.approx(1 - 0.025 ** 0.1)
    share, lo, hi = claims_study.share_ci(10, 10)
    assert share == 1 and hi == 1 and lo == pytest.approx(0.025 ** 0.1)
    assert math.isnan(claims_study.share_ci(0, 0)[0])


def test_fixed_effect_fit_recovers_the_exponent_across_instances():
    rng = np.random.default_rng(0)
    x = np.tile([25.0, 50, 100, 200, 400], 3)
    groups = np.repeat(["a", "b", "c"], 5)
    t = np.exp(np.repeat([0.0, 2.0, -1.0], 5)) * x ** 1.7 * np.exp(rng.normal(0, 0.02, x.size))
    f = claims_complexity.fe_fit(x, t, groups)
    assert f["lo"] < 1.7 < f["hi"] and f["hi"] - f["lo"] < 0.1
    # without the per-instance intercepts the spread of the instances would swamp the exponent
    assert abs(claims_complexity.fe_fit(x, t, np.zeros(x.size))["b"] - 1.7) < 0.1


def _map_runs() -> pd.DataFrame:
    """Two seeds of one 1 x 2 map: depl saves 20 % and 0 % in cell y = 2, nothing in y = 1."""
    rows = []
    costs = {(1, 0): (10, 10, 10), (1, 1): (8, 8, 8), (2, 0): (10, 8, 8), (2, 1): (5, 5, 5)}
    for (y, seed), (c_exp, c_depl, c_opt) in costs.items():
        inst = f"q-{y}-{seed}"
        params = f'{{"quantile": {0.9 if y == 1 else 0.99}, "spread": {y}}}'
        for solver, kind, cost in (("best-exp", "heuristic", c_exp), ("depl", "heuristic", c_depl),
                                   ("exact", "exact", c_opt)):
            rows.append({"experiment": "map-a", "instance": inst, "instance_params": params, "instance_seed": seed,
                         "solver": solver, "solver_kind": kind, "cost": float(cost), "feasible": True,
                         "status": "optimal" if kind == "exact" else "feasible", "known_optimum": None,
                         "bound": float(cost) if kind == "exact" else None,
                         "x_exp_plan_misses": 1.0 if solver == "best-exp" and seed == 0 else
                         (0.0 if solver == "best-exp" else None)})
    return pd.DataFrame(rows)


def test_cells_and_findings_of_a_known_map():
    d = _map_runs()
    rows = claims_study.instance_rows(d, references(d))
    cells = claims_study.map_cells(rows)
    depl = cells[(cells["solver"] == "depl") & (cells["y"] == 2)].iloc[0]
    assert depl["saving"] == pytest.approx(0.1) and depl["saving_max"] == pytest.approx(0.2)
    assert depl["ratio"] == pytest.approx(1.0) and depl["proven_refs"] == 2
    base = cells[(cells["solver"] == "best-exp") & (cells["y"] == 2)].iloc[0]
    assert base["ratio"] == pytest.approx((1.25 + 1.0) / 2) and base["miss_share"] == pytest.approx(0.5)
    f = claims_study.findings(rows, cells)
    assert f["cell_saving"] == pytest.approx(0.1) and f["instance_saving"] == pytest.approx(0.2)
    assert f["cells_saving"] == 1 and f["cells"] == 2 and not f["reaches_paper_instance"]
    assert "10.0 %" in claims_study.findings_text(f)[0]


def test_an_unproven_reference_is_a_bound_not_an_optimum():
    d = _map_runs()
    gone = (d["solver"] == "exact") & (d["instance"] == "q-2-0")
    d.loc[gone, ["status", "bound"]] = ["timeout", 7.0]
    rows = claims_study.instance_rows(d, references(d))
    r = rows[(rows["instance"] == "q-2-0") & (rows["solver"] == "best-exp")].iloc[0]
    assert not r["proven"] and math.isnan(r["ratio"]) and r["ratio_upper"] == pytest.approx(10 / 7)


@pytest.mark.slow
def test_quick_claims_run_and_its_findings_match_the_store(tmp_path):
    from deplbench.benchmarks.report.write import load
    from deplbench.cli import main

    out = tmp_path / "claims"
    # the store is what the findings are checked against; the section is built below (the whole report is tested
    # on other stores)
    assert main(["run", "claims-quick", "--out", str(out), "--workers", "2", "--no-report"]) == 0
    d, get = load(out)
    assert (d["harness_status"] == "ok").all()
    assert feasible_mask(d).all()  # every plan of the study is certified by the evaluator
    ctx = ReportContext(d, get, tmp_path / "fig", out)
    (tmp_path / "fig").mkdir()
    spec = next(s for s in registered_sections() if s.name == "claims-study")
    sec = spec.func(ctx)
    tables = {b[1]: b[2] for b in sec.blocks if b[0] == "table"}
    text = " ".join(b[1] for b in sec.blocks if b[0] == "p")
    # the findings, recomputed here from the store alone
    maps = d[d["experiment"].str.startswith("map-")]
    cost = maps.pivot_table(index="instance", columns="solver", values="cost", aggfunc="min")
    cell = maps.drop_duplicates("instance").set_index("instance")["instance_params"]
    saving = pd.concat({s: 1 - cost[s] / cost["best-exp"] for s in ("depl", "depl-plus")}, axis=1)
    by_cell = saving.groupby(cell).mean()
    found = dict(zip(tables["Findings: where the quantile pays"]["finding"],
                     tables["Findings: where the quantile pays"]["value"], strict=True))
    assert float(found["cell_saving"]) == pytest.approx(by_cell.max().max(), abs=1e-4)
    assert float(found["instance_saving"]) == pytest.approx(saving.max().max(), abs=1e-4)
    assert f"{100 * by_cell.max().max():.1f} %" in text
    misses = maps.loc[maps["solver"] == "best-exp", "x_exp_plan_misses"]
    assert float(found["miss_share"]) == pytest.approx(misses.mean(), abs=1e-4)
    # ratios: proven where exact proved, else a bound
    size = tables["Competitive ratio against size (trend: ratio = a + b ln(size) on proven optima)"]
    proven = d[(d["experiment"] == "size-models") & (d["solver"] == "exact") & (d["status"] == "optimal")]
    assert size["proven"].sum() == 2 * proven["instance"].nunique()
    exps = tables["Per-stage CPU-time exponents against Property 2's terms"]
    st2 = exps[(exps["stage"] == "stage 2 (model DP)") & (exps["variable"] == "eta")].iloc[0]
    assert np.isfinite(st2["exponent"]) and st2["ci_lo"] <= st2["exponent"] <= st2["ci_hi"]
    assert any(b[0] == "fig" and b[3] is not None for b in sec.blocks)  # interactive heatmaps for the site
