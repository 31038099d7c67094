"""The claims study's numbers from the store: quantile-pays cells, the findings, the ratio trend in size.

Read by the registered section :mod:`deplbench.benchmarks.report.claims_section` (config ``claims``,
``docs/claims.md``). Every cost is the evaluator's certified ``cost`` of a feasible plan; a ratio's
reference is a proven optimum (``exact`` with status optimal), otherwise it is an interval from the
best proven bound, never an optimum.

* Maps: experiments ``map-*`` on the ``quantile`` family; the two instance parameters an experiment
  varies are its axes. Per cell and method: cost / optimum (mean, 95 % t-interval over seeds),
  the saving over ``best-exp`` (1 - cost / best-exp's cost, paired per seed), and the share of
  best-exp runs whose expectation plan misses the quantile target (``x_exp_plan_misses``, the
  evaluator's certified bracket; Clopper-Pearson 95 % interval).
* Size: experiments ``size-*``; the ratio of depl and depl-plus against the parameter that moves,
  a least-squares trend ratio = a + b ln(x) on the proven references with the 95 % interval of b.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask

MAP_PREFIX = "map-"
SIZE_PREFIX = "size-"
BASELINE = "best-exp"
PLANNERS = ("depl", "depl-plus")
MAP_METHODS = (BASELINE, *PLANNERS)
PAPER_SAVING = 0.27  # "outperforms the state of the art by over 27 %"
SIZE_AXES = {"models": "n_models", "epochs": "max_epochs", "clusters": "n_clusters", "datasets": "n_datasets"}


def mean_ci(values) -> tuple[float, float, float, int]:
    """Mean and 95 % t-interval of the finite values (the interval is the mean for one value)."""
    from scipy import stats

    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], float)
    n = v.size
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n == 1:
        return m, m, m, 1
    half = float(stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half, n


def share_ci(k: int, n: int) -> tuple[float, float, float]:
    """Share k / n with its Clopper-Pearson 95 % interval (nan for n = 0)."""
    from scipy import stats

    if n == 0:
        return math.nan, math.nan, math.nan
    lo = float(stats.beta.ppf(0.025, k, n - k + 1)) if k > 0 else 0.0
    hi = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return k / n, lo, hi


def _params(v) -> dict:
    if isinstance(v, dict):
        return v
    return json.loads(v) if isinstance(v, str) and v else {}


def map_axes(d: pd.DataFrame) -> list[str]:
    """The instance parameters that take two or more values in one map experiment, sorted."""
    ps = pd.DataFrame([_params(v) for v in d["instance_params"]])
    return sorted(c for c in ps.columns if ps[c].nunique(dropna=True) >= 2)


def instance_rows(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, instance, method) of a map: certified cost, ratio interval, saving, miss."""
    rows = []
    runs = d[d["experiment"].astype(str).str.startswith(MAP_PREFIX) & d["solver"].isin(MAP_METHODS)]
    ok = feasible_mask(runs)
    for exp, g in runs.groupby("experiment", sort=True):
        axes = map_axes(g)
        for inst, gi in g.groupby("instance", sort=True):
            params = _params(gi["instance_params"].iloc[0])
            ref = refs.loc[inst] if inst in refs.index else None
            base = gi[(gi["solver"] == BASELINE) & ok.loc[gi.index]]
            c_base = float(base["cost"].min()) if len(base) else math.nan
            miss = pd.to_numeric(base.get("x_exp_plan_misses", pd.Series(dtype=float)), errors="coerce").dropna()
            for solver, gs in gi.groupby("solver"):
                feas = gs[ok.loc[gs.index]]
                cost = float(feas["cost"].min()) if len(feas) else math.nan
                proven = ref is not None and bool(ref["proven"])
                lo = float(ref["ref_lo"]) if ref is not None else math.nan
                rows.append({
                    "experiment": exp, "instance": inst, "seed": int(gi["instance_seed"].iloc[0]),
                    "x_axis": axes[0] if axes else "", "y_axis": axes[1] if len(axes) > 1 else "",
                    "x": params.get(axes[0]) if axes else None, "y": params.get(axes[1]) if len(axes) > 1 else None,
                    "solver": solver, "feasible": bool(len(feas)), "cost": cost, "proven": proven,
                    "ratio": cost / float(ref["ref_hi"]) if proven else math.nan,
                    "ratio_upper": cost / lo if not proven and lo > 0 else math.nan,
                    "saving": 1.0 - cost / c_base if c_base > 0 else math.nan,
                    "miss": float(miss.iloc[0]) if solver == BASELINE and len(miss) else math.nan,
                })
    return pd.DataFrame(rows)


def map_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, x, y, solver): ratio and saving with intervals over seeds, best-exp's miss share."""
    out = []
    if rows.empty:
        return pd.DataFrame()
    for (exp, x, y, solver), g in rows.groupby(["experiment", "x", "y", "solver"], sort=True, dropna=False):
        r, r_lo, r_hi, n_proven = mean_ci(g["ratio"])
        s, s_lo, s_hi, n = mean_ci(g["saving"])
        m = g["miss"].dropna()
        share, m_lo, m_hi = share_ci(int(m.sum()), len(m))
        out.append({"experiment": exp, "x_axis": g["x_axis"].iloc[0], "x": x, "y_axis": g["y_axis"].iloc[0], "y": y,
                    "solver": solver, "seeds": g["seed"].nunique(), "feasible": int(g["feasible"].sum()),
                    "proven_refs": n_proven, "ratio": r, "ratio_lo": r_lo, "ratio_hi": r_hi,
                    "ratio_upper_max": float(g["ratio_upper"].max()) if g["ratio_upper"].notna().any() else math.nan,
                    "saving": s, "saving_lo": s_lo, "saving_hi": s_hi, "saving_max": float(g["saving"].max()),
                    "miss_share": share, "miss_lo": m_lo, "miss_hi": m_hi})
    return pd.DataFrame(out)


def findings(rows: pd.DataFrame, cells: pd.DataFrame) -> dict:
    """The largest saving over best-exp: per cell (mean over seeds) and per instance, and the 27 % question."""
    planners = cells[cells["solver"].isin(PLANNERS)].dropna(subset=["saving"]) if len(cells) else cells
    if planners is None or planners.empty:
        return {}
    best = planners.loc[planners["saving"].idxmax()]
    worst = planners.loc[planners["saving"].idxmin()]
    inst = rows[rows["solver"].isin(PLANNERS)].dropna(subset=["saving"])
    top = inst.loc[inst["saving"].idxmax()]
    base = cells[cells["solver"] == BASELINE]
    miss = rows[(rows["solver"] == BASELINE)]["miss"].dropna()
    return {
        "cell_saving": float(best["saving"]), "cell_saving_lo": float(best["saving_lo"]),
        "cell_saving_hi": float(best["saving_hi"]), "cell_solver": str(best["solver"]),
        "cell_experiment": str(best["experiment"]), "cell_where": f"{best['x_axis']} = {best['x']:g}, "
                                                                   f"{best['y_axis']} = {best['y']:g}",
        "worst_cell_saving": float(worst["saving"]), "worst_cell_solver": str(worst["solver"]),
        "worst_cell_where": f"{worst['experiment']}: {worst['x_axis']} = {worst['x']:g}, {worst['y_axis']} = {worst['y']:g}",
        "instance_saving": float(top["saving"]), "instance": str(top["instance"]), "instance_solver": str(top["solver"]),
        "cells": int(planners[["experiment", "x", "y"]].drop_duplicates().shape[0]),
        "cells_saving": int((planners.groupby(["experiment", "x", "y"])["saving"].max() > 1e-9).sum()),
        "reaches_paper_cell": bool((planners["saving"] >= PAPER_SAVING).any()),
        "reaches_paper_instance": bool((inst["saving"] >= PAPER_SAVING).any()),
        "bestexp_ratio_max": float(base["ratio"].max()) if len(base) else math.nan,
        "miss_share": float(miss.mean()) if len(miss) else math.nan, "miss_runs": int(len(miss)),
        "bestexp_plans": int((rows["solver"] == BASELINE).sum()),
        "bestexp_plans_infeasible": int(((rows["solver"] == BASELINE) & ~rows["feasible"]).sum()),
    }


def findings_text(f: dict) -> list[str]:
    """The findings block as sentences (every number from :func:`findings`)."""
    if not f:
        return ["No map runs (experiments `map-*` with best-exp and depl or depl-plus) in this store."]
    inst27 = ("at least one instance's saving does" if f["reaches_paper_instance"]
              else "nor does any single instance's")
    return [
        f"Largest saving over best-exp found, mean over seeds of a cell: {100 * f['cell_saving']:.1f} % "
        f"(95 % interval {100 * f['cell_saving_lo']:.1f} to {100 * f['cell_saving_hi']:.1f} %) by {f['cell_solver']} "
        f"in {f['cell_experiment']} at {f['cell_where']}.",
        f"Largest on one instance: {100 * f['instance_saving']:.1f} % by {f['instance_solver']} on {f['instance']}. "
        f"A saving shows in {f['cells_saving']} of {f['cells']} cells. The other way round: the lowest cell mean "
        f"is {100 * f['worst_cell_saving']:.1f} % ({f['worst_cell_solver']}, {f['worst_cell_where']}; negative: "
        "best-exp is cheaper there).",
        ("The paper's 27 %: a cell's mean saving reaches it." if f["reaches_paper_cell"] else
         f"The paper's 27 %: no cell's mean saving reaches it; {inst27}."),
        f"best-exp's cost is at most {f['bestexp_ratio_max']:.3f} x the proven optimum (cell means); its "
        f"expectation plan (the cheapest plan whose expected loss meets the target) misses the quantile target, "
        f"certified, on {100 * f['miss_share']:.0f} % of {f['miss_runs']} runs, while {f['bestexp_plans_infeasible']} "
        f"of the {f['bestexp_plans']} plans it returns miss it: the certification step, not the expectation, is what "
        "makes best-exp's plans feasible.",
    ]


def size_rows(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """The size experiments' ratios (that experiment's runs only) with the moving size as column ``size``."""
    from deplbench.benchmarks.report.ratios import heuristic_ratios

    exp = d.drop_duplicates("instance").set_index("instance")
    out = []
    for name in sorted(d["experiment"].dropna().astype(str).unique()):
        if not name.startswith(SIZE_PREFIX) or name[len(SIZE_PREFIX):] not in SIZE_AXES:
            continue
        col = SIZE_AXES[name[len(SIZE_PREFIX):]]
        runs = d[(d["experiment"] == name) & d["solver"].isin(PLANNERS)]
        g = heuristic_ratios(runs, refs)
        if g.empty:
            continue
        g["experiment"], g["axis"] = name, col
        g["size"] = exp.loc[g["instance"], col].to_numpy(float)
        out.append(g)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def trend(x, y) -> dict:
    """Least squares y = a + b ln x with the 95 % t-interval of b (nan with fewer than 3 points or 2 x's)."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.unique(x).size < 2:
        return {"n": int(x.size), "a": math.nan, "b": math.nan, "b_lo": math.nan, "b_hi": math.nan}
    res = stats.linregress(np.log(x), y)
    half = float(stats.t.ppf(0.975, x.size - 2) * res.stderr)
    return {"n": int(x.size), "a": float(res.intercept), "b": float(res.slope), "b_lo": float(res.slope - half),
            "b_hi": float(res.slope + half)}


def size_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, solver): ratio range on proven references, bounds elsewhere, the trend in ln(size)."""
    out = []
    if rows.empty:
        return pd.DataFrame()
    for (name, solver), g in rows.groupby(["experiment", "solver"], sort=True):
        f = g[g["feasible"]]
        p = f[f["proven"]]
        t = trend(p["size"], p["ratio_lo"])
        if not np.isfinite(t["b"]):
            verdict = "too few proven points"
        elif np.ptp(p["ratio_lo"].to_numpy(float)) <= 1e-12:
            verdict = f"constant ({p['ratio_lo'].iloc[0]:.4f} at every size)"
        elif not np.isfinite(t["b_lo"]):
            verdict = "no interval (too few points)"
        else:
            verdict = ("no trend (interval of b holds 0)" if t["b_lo"] <= 0 <= t["b_hi"] else
                       "grows" if t["b_lo"] > 0 else "falls")
        out.append({"experiment": name, "solver": solver, "sizes": ", ".join(f"{v:g}" for v in sorted(g["size"].unique())),
                    "proven": len(p), "bounds": int((~f["proven"]).sum()), "no_plan": int((~g["feasible"]).sum()),
                    "mean_ratio": float(p["ratio_lo"].mean()) if len(p) else math.nan,
                    "max_ratio": float(p["ratio_lo"].max()) if len(p) else math.nan,
                    "max_ratio_upper_bound": float(f.loc[~f["proven"], "ratio_hi"].max()) if (~f["proven"]).any()
                    else math.nan, "trend_b_per_ln_size": t["b"], "b_lo": t["b_lo"], "b_hi": t["b_hi"],
                    "verdict": verdict})
    return pd.DataFrame(out)
