"""Solver comparison tables (Mittelmann's style): solved counts, shifted geometric means, wins, profiles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import TIE_RTOL, feasible_mask, shifted_geomean


def per_instance(d: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, instance): median ``ttime``, solved by a majority of repetitions, best cost."""
    feas = feasible_mask(d)
    d = d.assign(fcost=d["cost"].where(feas))
    agg = d.groupby(["method", "instance"]).agg(
        ttime=("ttime", "median"), solved=("solved", "mean"), cost=("fcost", "min"))
    agg["solved"] = agg["solved"] >= 0.5
    return agg.reset_index()


def comparison_table(d: pd.DataFrame) -> pd.DataFrame:
    """Solver comparison over the instances of ``d`` (one experiment).

    Columns: runs, instances, solved, timeouts, errors, gave up (status ``unknown``: no plan, no proof),
    infeasible plans (evaluator), the
    shifted geometric mean of per-instance time (shift 10 s), the solver's mean MIP gap, the
    median certified cost gap to the best known cost, wins (best cost; fastest solved) and, for
    SAA plans, the worst 95% Clopper-Pearson upper bound of the out-of-sample violation rate.
    """
    pi = per_instance(d)
    best_cost = pi.groupby("instance")["cost"].min()
    solved_t = pi[pi["solved"]].groupby("instance")["ttime"].min()
    out = []
    for m, g in d.groupby("method", sort=True):
        p = pi[pi["method"] == m]
        gap_best = (p["cost"] / p["instance"].map(best_cost) - 1.0).dropna()
        cost_win = p["cost"] <= p["instance"].map(best_cost) * (1 + TIE_RTOL)
        fast_win = p["solved"] & (p["ttime"] <= p["instance"].map(solved_t) * (1 + TIE_RTOL))
        plan_bad = g["feasible"].astype("boolean").eq(False).fillna(False)
        out.append({
            "method": m, "kind": g["solver_kind"].dropna().iloc[0] if g["solver_kind"].notna().any() else "",
            "runs": len(g), "instances": p["instance"].nunique(), "solved": int(p["solved"].sum()),
            "timeouts": int(g["timed_out"].sum()),
            "errors": int(((g["harness_status"].isin(["error", "memory"])) | (g["status"] == "error")).sum()),
            "gave_up": int(((g["harness_status"] == "ok") & (g["status"] == "unknown")).sum()),
            "infeasible_plans": int(plan_bad.sum()),
            "sgm_time_s": shifted_geomean(p["ttime"]),
            "mean_mip_gap": float(pd.to_numeric(g["gap"], errors="coerce").mean()),
            "median_cost_gap": float(gap_best.median()) if len(gap_best) else math.nan,
            "wins_cost": int(cost_win.sum()), "wins_time": int(fast_win.sum()),
            "max_oos_cp_upper": float(pd.to_numeric(g["oos_cp_upper"], errors="coerce").max()),
        })
    return pd.DataFrame(out)


def performance_ratios(d: pd.DataFrame) -> pd.DataFrame:
    """Dolan-More ratios t(p, s) / min_s t(p, s): instances x methods, inf where unsolved."""
    pi = per_instance(d)
    t = pi.assign(t=np.where(pi["solved"], pi["ttime"].clip(lower=1e-6), np.inf)).pivot(
        index="instance", columns="method", values="t")
    t = t.fillna(np.inf)
    best = t.min(axis=1)
    with np.errstate(invalid="ignore"):
        r = t.div(best.where(np.isfinite(best)), axis=0)
    return r.fillna(np.inf)
