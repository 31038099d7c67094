"""The index tables of the report's site, as MIPLIB's: one row per method (kind, runs, solved, mean
ratio, time) and one row per instance (family, size, reference, status, best method)."""

from __future__ import annotations

import math

import pandas as pd

from deplbench.benchmarks.harness.frame import TIE_RTOL, feasible_mask, shifted_geomean
from deplbench.benchmarks.report.comparison import per_instance


def methods_index(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per method: kind, runs, instances, solved, no plan (``unknown``), errors, mean cost / proven
    optimum (over the instances with one where it has a certified plan) and shifted geometric mean time."""
    proven = refs.index[refs["proven"].astype(bool)] if len(refs) else pd.Index([])
    pi = per_instance(d)
    rows = []
    for m, g in d.groupby("method", sort=True):
        p = pi[pi["method"] == m]
        on = p[p["instance"].isin(proven) & p["cost"].notna()]
        ratio = (on["cost"].to_numpy(float) / refs.loc[on["instance"], "ref_hi"].to_numpy(float)) if len(on) else []
        rows.append({
            "method": m, "kind": g["solver_kind"].dropna().iloc[0] if g["solver_kind"].notna().any() else "",
            "runs": len(g), "instances": p["instance"].nunique(), "solved": int(p["solved"].sum()),
            "gave_up": int(((g["harness_status"] == "ok") & (g["status"] == "unknown")).sum()),
            "errors": int((g["harness_status"].isin(["error", "memory"]) | (g["status"] == "error")).sum()),
            "mean_ratio": float(pd.Series(ratio).mean()) if len(ratio) else math.nan,
            "sgm_time_s": shifted_geomean(p["ttime"]),
        })
    return pd.DataFrame(rows)


def instances_index(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per instance: family, size (models x clusters x max epochs), reference cost and its status,
    the cheapest method(s) (ties joined), the runs on it and how many have no certified plan."""
    rows = []
    for inst, g in d.groupby("instance", sort=True):
        first = g.iloc[0]
        size = "x".join(str(int(v)) if pd.notna(v) else "?" for v in (first["n_models"], first["n_clusters"],
                                                                      first["max_epochs"]))
        feas = g[feasible_mask(g)]
        best = feas["cost"].min() if len(feas) else math.nan
        who = sorted(set(feas.loc[feas["cost"] <= best * (1 + TIE_RTOL), "method"])) if len(feas) else []
        if inst in refs.index:
            ref = refs.loc[inst]
            status = "optimal" if bool(ref["proven"]) else "best known" if pd.notna(ref["ref_hi"]) else "open"
            value = float(ref["ref_hi"])
        else:
            status, value = "open", math.nan
        rows.append({"instance": inst, "family": first["family"], "size": size, "reference": value,
                     "ref_kind": status, "best_method": ", ".join(who) or None, "runs": len(g),
                     "unsolved": int((~g["solved"].astype(bool)).sum())})
    return pd.DataFrame(rows)
