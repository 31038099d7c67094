"""Competitive ratios of the heuristics against the reference values (proven optima or intervals)."""

from __future__ import annotations

import math

import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask
from deplbench.benchmarks.report.references import ratio_interval

RATIO_KEYS = ("p_eta", "p_eps")  # the parameters Property 3 speaks of


def stated_bound(eta: float, eps: float) -> float:
    """The paper's Property 3 ratio (1/eta)(1 + eps): below 1, so impossible (MODEL.md 7.4)."""
    return (1.0 + eps) / eta


def heuristic_ratios(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per heuristic run with ``eta``/``eps`` on an instance with a reference: the ratio interval.

    Columns: solver, instance, family, eta, eps, feasible, planned (the run has a plan at all),
    proven, ratio_lo, ratio_hi, reason (why there is no plan).
    """
    cols = ["solver", "instance", "family", "eta", "eps", "feasible", "planned", "proven", "ratio_lo", "ratio_hi",
            "reason"]
    if not set(RATIO_KEYS) <= set(d.columns):
        return pd.DataFrame(columns=cols)
    has = d[list(RATIO_KEYS)].notna().all(axis=1)
    g = d[(d["solver_kind"] == "heuristic") & has & d["instance"].isin(refs.index[refs["ref_hi"].notna()])]
    ok = feasible_mask(g)
    rows = []
    for (_, r), fine in zip(g.iterrows(), ok, strict=True):
        ref = refs.loc[r["instance"]]
        lo, hi = ratio_interval(float(r["cost"]), ref["ref_lo"], ref["ref_hi"]) if fine else (math.nan,) * 2
        rows.append({"solver": r["solver"], "instance": r["instance"], "family": r["family"],
                     "eta": float(r["p_eta"]), "eps": float(r["p_eps"]), "feasible": bool(fine),
                     "planned": not pd.isna(r["cost"]), "proven": bool(ref["proven"]), "ratio_lo": lo,
                     "ratio_hi": hi, "reason": r.get("reason")})
    return pd.DataFrame(rows, columns=cols)


def ratio_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per (eta, eps) of one method: measured cost ratio (mean, max; both ends) beside the stated bound."""
    out = []
    for (eta, eps), g in ratios.groupby(["eta", "eps"], sort=True):
        f = g[g["feasible"]]
        stated = stated_bound(float(eta), float(eps))
        out.append({
            "eta": eta, "eps": eps, "instances": g["instance"].nunique(),
            "infeasible_plans": int((g["planned"] & ~g["feasible"]).sum()), "gave_up": int((~g["planned"]).sum()),
            "proven_refs": int(f["proven"].sum()),
            "mean_ratio": float(f["ratio_lo"].mean()) if len(f) else math.nan,
            "max_ratio": float(f["ratio_lo"].max()) if len(f) else math.nan,
            "max_ratio_upper": float(f["ratio_hi"].max()) if len(f) else math.nan,
            "stated_(1+eps)/eta": stated,
            "within_stated": int((f["ratio_lo"] <= stated).sum()),
        })
    return pd.DataFrame(out)
