"""The built-in findings of every store: the cheapest and the fastest method, and each heuristic's
cost ratio to the proven optimum (mean, max and a bootstrap interval), with their evidence."""

from __future__ import annotations

import math

import pandas as pd

from deplbench.benchmarks.harness.frame import TIE_RTOL, feasible_mask, shifted_geomean
from deplbench.benchmarks.report.comparison import per_instance
from deplbench.benchmarks.report.findings import Finding, bootstrap_mean, register_finding
from deplbench.benchmarks.report.sections import ReportContext


def common_instances(d: pd.DataFrame) -> list[str]:
    """The instances every method of the store ran on (the ground of a fair comparison)."""
    per = d.groupby("instance")["method"].nunique()
    return sorted(per.index[per == d["method"].nunique()].astype(str))


def _ground(d: pd.DataFrame, who: str = "method") -> tuple[pd.DataFrame, str]:
    """The runs compared and how they were chosen: the common instances, else every instance."""
    common = common_instances(d)
    if common:
        g = d[d["instance"].isin(common)]
        return g, f"{len(common)} instances every {who} ran on, {len(g)} runs"
    return d, f"all {d['instance'].nunique()} instances ({len(d)} runs; no instance has every {who})"


@register_finding("cheapest", order=10)
def cheapest(ctx: ReportContext) -> list[Finding]:
    """The method(s) with the best certified cost on the most instances, overall and among heuristics."""
    d = ctx.runs
    if d.empty or not d["method"].notna().any():
        return []
    out = []
    for label, keep in (("Cheapest method", None), ("Cheapest heuristic", "heuristic")):
        sub = d if keep is None else d[d["solver_kind"] == keep]
        if sub.empty:
            continue
        g, where = _ground(sub, "method" if keep is None else keep)
        p = per_instance(g)
        best = p.groupby("instance")["cost"].min()
        p = p.assign(win=p["cost"] <= p["instance"].map(best) * (1 + TIE_RTOL))
        wins = p.groupby("method")["win"].sum().sort_values(ascending=False, kind="stable")
        n = p["instance"].nunique()
        top = wins[wins == wins.iloc[0]]
        rest = wins[wins < wins.iloc[0]]
        nxt = f"; next {rest.index[0]} on {int(rest.iloc[0])}" if len(rest) else ""
        out.append(Finding(label, f"{' and '.join(top.index)}, cheapest on {int(top.iloc[0])} of {n} instances{nxt}",
                           f"{where}; ties count", section="comparison"))
    return out


@register_finding("fastest", order=20)
def fastest(ctx: ReportContext) -> list[Finding]:
    """The method with the smallest shifted geometric mean of time (unsolved charged the limit)."""
    d = ctx.runs
    if d.empty or not d["method"].notna().any():
        return []
    g, where = _ground(d)
    pi = per_instance(g)
    sgm = pi.groupby("method")["ttime"].apply(shifted_geomean).sort_values(kind="stable")
    solved = pi.groupby("method")["solved"].sum()
    n = pi["instance"].nunique()
    m = sgm.index[0]
    nxt = f"; next {sgm.index[1]} at {sgm.iloc[1]:.3g} s" if len(sgm) > 1 else ""
    return [Finding("Fastest method", f"{m}, {sgm.iloc[0]:.3g} s, solves {int(solved[m])} of {n}{nxt}",
                    f"{where}; shifted geometric mean of time, unsolved charged the limit",
                    section="comparison")]


def heuristic_ratios(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per heuristic method and instance with a proven optimum: cost / optimum (NaN: no certified plan).

    Columns: method, instance, runs, ratio (the cheapest certified plan of its runs), reason.
    """
    proven = refs.index[refs["proven"].astype(bool)]
    h = d[(d["solver_kind"] == "heuristic") & d["instance"].isin(proven)]
    feas = feasible_mask(h)
    rows = []
    for (m, inst), g in h.assign(fc=h["cost"].where(feas)).groupby(["method", "instance"], sort=True):
        cost = g["fc"].min()
        why = "; ".join(sorted(set(g["reason"].dropna().astype(str)))) if "reason" in g else ""
        rows.append({"method": m, "instance": inst, "runs": len(g),
                     "ratio": float(cost) / float(refs.loc[inst, "ref_hi"]) if pd.notna(cost) else math.nan,
                     "status": ",".join(sorted(set(g["status"].dropna().astype(str)))), "reason": why})
    return pd.DataFrame(rows, columns=["method", "instance", "runs", "ratio", "status", "reason"])


def ratio_text(r: pd.Series) -> str:
    """``mean 1.061 [1.031, 1.094], max 1.231`` of a series of ratios (NaN: no plan, left out)."""
    v = r.dropna()
    if v.empty:
        return "no certified plan"
    lo, hi = bootstrap_mean(v.tolist())
    ci = f" [{lo:.3f}, {hi:.3f}]" if not math.isnan(lo) else " (one instance: no interval)"
    return f"mean {v.mean():.3f}{ci}, max {v.max():.3f}"


#: the caption of the ratio table (one row per heuristic)
RATIO_TABLE = ("Each heuristic's certified cost / proven optimum (95% percentile bootstrap interval of the mean; "
               "runs without a certified plan left out, named)")


@register_finding("heuristic-ratios", order=30)
def ratios(ctx: ReportContext) -> list[Finding]:
    """Each heuristic's certified cost over the proven optimum, on every instance that has one."""
    tab = heuristic_ratios(ctx.runs, ctx.refs)
    out = []
    for m, g in tab.groupby("method", sort=True):
        gone = g[g["ratio"].isna()]
        v = g["ratio"].dropna()
        lo, hi = bootstrap_mean(v.tolist())
        optimal = int((v <= 1 + 1e-6).sum())
        miss = ", ".join(f"{i} ({s})" for i, s in zip(gone["instance"], gone["status"], strict=True))
        out.append(Finding(f"{m}: cost / proven optimum", ratio_text(g["ratio"]) + f"; optimal on {optimal}",
                           f"{len(g)} instances with a proven optimum, {int(g['runs'].sum())} runs"
                           + (f"; no certified plan on {miss}" if miss else ""), section="ratio", table=RATIO_TABLE,
                           columns={"method": m, "instances": len(g), "runs": int(g["runs"].sum()),
                                    "ratio_mean": float(v.mean()) if len(v) else math.nan, "ratio_ci_lo": lo,
                                    "ratio_ci_hi": hi, "ratio_max": float(v.max()) if len(v) else math.nan,
                                    "optimal_on": optimal, "no_plan": miss or None}))
    return out
