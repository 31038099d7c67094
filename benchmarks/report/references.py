"""Reference values per instance: a proven optimum, or an interval [best bound, best certified cost]."""

from __future__ import annotations

import math

import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask


def references(d: pd.DataFrame) -> pd.DataFrame:
    """Per instance: the reference cost interval ``[lo, hi]`` and whether it is a proven optimum.

    Proven: the best evaluator-certified cost among exact methods with status ``optimal``
    (else the family's ``known_optimum``). Otherwise ``hi`` is the best certified feasible cost of
    any run and ``lo`` the best proven lower bound of an exact method (NaN if none).
    """
    rows = []
    for name, g in d.groupby("instance", sort=True):
        feas = g[feasible_mask(g)]
        exact = feas[(feas["solver_kind"] == "exact") & (feas["status"] == "optimal")]
        known = pd.to_numeric(g["known_optimum"], errors="coerce").dropna()
        best = feas["cost"].min() if len(feas) else math.nan
        if len(exact):
            v = float(exact["cost"].min())
            rows.append((name, v, v, True, "exact"))
        elif len(known):
            v = float(known.iloc[0])
            rows.append((name, v, v, True, "known"))
        else:
            bounds = pd.to_numeric(g.loc[g["solver_kind"] == "exact", "bound"], errors="coerce").dropna()
            lo = float(bounds.max()) if len(bounds) else math.nan
            hi = float(best) if not pd.isna(best) else math.nan
            if not math.isnan(lo) and not math.isnan(hi):
                lo = min(lo, hi)
            rows.append((name, lo, hi, False, "best known"))
    return pd.DataFrame(rows, columns=["instance", "ref_lo", "ref_hi", "proven", "ref_source"]).set_index(
        "instance")


def ratio_interval(cost: float, lo: float, hi: float) -> tuple[float, float]:
    """Interval of cost / optimum when the optimum lies in [lo, hi] (upper end inf without a bound)."""
    if math.isnan(cost) or math.isnan(hi) or hi <= 0:
        return math.nan, math.nan
    upper = cost / lo if not math.isnan(lo) and lo > 0 else math.inf
    return cost / hi, upper
