"""Tables of the report, computed from the run rows of the result store (pure pandas).

Every figure here uses the evaluator's certified columns (``cost``, ``feasible``,
``q_hi``), never a solver's own objective. See ``docs/report.md`` for the definitions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.store import RUN_COLUMNS

SHIFT_S = 10.0  # shift of the shifted geometric mean of time (Mittelmann)
TIE_RTOL = 1e-6  # costs this close count as a tie (both win)
PAPER_ETA = 200.0  # the paper's reported eta
PAPER_EPS = 0.05


@dataclass
class Section:
    """One report section: an ordered list of blocks ``(kind, payload...)``.

    Kinds: ``("p", text)``, ``("table", caption, DataFrame)``, ``("fig", caption, png_path)``.
    """

    title: str
    blocks: list[tuple] = field(default_factory=list)

    def p(self, text: str) -> Section:
        self.blocks.append(("p", text))
        return self

    def table(self, caption: str, df: pd.DataFrame) -> Section:
        self.blocks.append(("table", caption, df))
        return self

    def fig(self, caption: str, path) -> Section:
        self.blocks.append(("fig", caption, path))
        return self


# ---- preparation ---------------------------------------------------------------------------

def ensure_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Add any store column the frame lacks (as missing values), so that old stores still report."""
    out = df.copy()
    for c in RUN_COLUMNS:
        if c not in out.columns:
            out[c] = np.nan
    return out


def _fmt_param(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


def method_label(row: pd.Series) -> str:
    """Solver name plus the parameters that distinguish its variants (eta/eps, scenarios/formulation)."""
    parts = []
    for col, short in (("eta", "eta"), ("eps", "eps"), ("scenarios", "S"), ("formulation", "")):
        v = row.get(col)
        if v is not None and not pd.isna(v):
            parts.append(f"{short}={_fmt_param(v)}" if short else str(v))
    return f"{row['solver']}[{','.join(parts)}]" if parts else str(row["solver"])


def extra(row: pd.Series) -> dict[str, Any]:
    """The row's ``extra_json`` as a dict (empty when absent or unreadable)."""
    raw = row.get("extra_json")
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        out = json.loads(raw)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Add derived columns: ``method``, ``network``, ``timed_out``, ``solved`` and ``ttime``.

    ``solved``: the harness finished, the evaluator certifies the plan feasible, and an
    exact or SAA method also proved optimality (status ``optimal``). ``ttime``: the time
    used for means and profiles, the runtime when solved and the time limit otherwise
    (unsolved runs are charged the limit, as in Mittelmann's tables).
    """
    d = ensure_columns(df)
    if d.empty:
        for c in ("method", "network", "timed_out", "solved", "ttime"):
            d[c] = pd.Series(dtype=object)
        return d
    d["method"] = d.apply(method_label, axis=1)
    fam = d["family"].astype(str)
    d["network"] = np.where(fam.str.startswith("paper-"), fam.str.removeprefix("paper-"), None)
    d["timed_out"] = (d["harness_status"] == "timeout") | (d["status"] == "timeout")
    feas = d["feasible"].astype("boolean").fillna(False).astype(bool)
    needs_opt = d["solver_kind"].isin(["exact", "saa"])
    ok_status = np.where(needs_opt, d["status"] == "optimal", d["status"].isin(["optimal", "feasible"]))
    d["solved"] = (d["harness_status"] == "ok") & feas & ok_status
    limit = pd.to_numeric(d["time_limit"], errors="coerce")
    run = pd.to_numeric(d["runtime_s"], errors="coerce")
    fallback = run.fillna(pd.to_numeric(d["wall_s"], errors="coerce"))
    d["ttime"] = np.where(d["solved"], run, limit.fillna(fallback))
    return d


def shifted_geomean(x, shift: float = SHIFT_S) -> float:
    """exp(mean(ln(x + shift))) - shift; NaN for no values."""
    a = np.asarray(x, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(a + shift))) - shift)


# ---- references (optimum or interval) ------------------------------------------------------

def references(d: pd.DataFrame) -> pd.DataFrame:
    """Per instance: the reference cost interval ``[lo, hi]`` and whether it is a proven optimum.

    Proven: the best evaluator-certified cost among exact methods with status ``optimal``
    (else the family's ``known_optimum``). Otherwise ``hi`` is the best certified feasible cost of
    any run and ``lo`` the best proven lower bound of an exact method (NaN if none).
    """
    rows = []
    for name, g in d.groupby("instance", sort=True):
        feas = g[g["feasible"].astype("boolean").fillna(False).astype(bool)]
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


# ---- solver comparison -----------------------------------------------------------------------

def per_instance(d: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, instance): median ``ttime``, solved by a majority of repetitions, best cost."""
    feas = d["feasible"].astype("boolean").fillna(False).astype(bool)
    d = d.assign(fcost=d["cost"].where(feas))
    agg = d.groupby(["method", "instance"]).agg(
        ttime=("ttime", "median"), solved=("solved", "mean"), cost=("fcost", "min"))
    agg["solved"] = agg["solved"] >= 0.5
    return agg.reset_index()


def comparison_table(d: pd.DataFrame) -> pd.DataFrame:
    """Solver comparison over the instances of ``d`` (one experiment).

    Columns: runs, instances, solved, timeouts, errors, infeasible plans (evaluator), the
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


# ---- competitive ratio -----------------------------------------------------------------------

def stated_bound(eta: float, eps: float) -> float:
    """The paper's Property 3 ratio (1/eta)(1 + eps): below 1, so impossible (MODEL.md 7.4)."""
    return (1.0 + eps) / eta


def depl_ratios(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Per ``depl`` run with a certified-feasible plan on an instance with a reference: the ratio interval."""
    g = d[(d["solver"] == "depl") & d["instance"].isin(refs.index[refs["ref_hi"].notna()])]
    rows = []
    for _, r in g.iterrows():
        ref = refs.loc[r["instance"]]
        ok = bool(pd.notna(r["feasible"]) and r["feasible"])
        lo, hi = ratio_interval(float(r["cost"]), ref["ref_lo"], ref["ref_hi"]) if ok else (math.nan,) * 2
        rows.append({"instance": r["instance"], "family": r["family"], "eta": r["eta"], "eps": r["eps"],
                     "feasible": ok, "proven": bool(ref["proven"]), "ratio_lo": lo, "ratio_hi": hi})
    return pd.DataFrame(rows, columns=["instance", "family", "eta", "eps", "feasible", "proven",
                                       "ratio_lo", "ratio_hi"])


def ratio_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per (eta, eps): measured cost ratio (mean, max; lower and upper ends) beside the stated bound."""
    out = []
    for (eta, eps), g in ratios.groupby(["eta", "eps"], sort=True):
        f = g[g["feasible"]]
        stated = stated_bound(float(eta), float(eps))
        out.append({
            "eta": eta, "eps": eps, "instances": g["instance"].nunique(), "infeasible_plans": int((~g["feasible"]).sum()),
            "proven_refs": int(f["proven"].sum()),
            "mean_ratio": float(f["ratio_lo"].mean()) if len(f) else math.nan,
            "max_ratio": float(f["ratio_lo"].max()) if len(f) else math.nan,
            "max_ratio_upper": float(f["ratio_hi"].max()) if len(f) else math.nan,
            "stated_(1+eps)/eta": stated,
            "within_stated": int((f["ratio_lo"] <= stated).sum()),
        })
    return pd.DataFrame(out)


# ---- headline (paper reproduction) -------------------------------------------------------------

def pick_depl(g: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    """The ``depl`` rows at eta = 200 (else the largest eta), eps = 0.05 if present (else the smallest)."""
    g = g[g["solver"] == "depl"]
    if g.empty:
        return g, None
    etas = pd.to_numeric(g["eta"], errors="coerce")
    eta = PAPER_ETA if (etas == PAPER_ETA).any() else float(etas.max())
    g = g[etas == eta]
    eps = pd.to_numeric(g["eps"], errors="coerce")
    e = PAPER_EPS if (eps == PAPER_EPS).any() else eps.min()
    return g[eps == e] if not pd.isna(e) else g, eta


def _summary(g: pd.DataFrame) -> dict[str, Any]:
    """Certified figures of a method's runs on one instance (median over repetitions).

    ``note`` says why there is nothing to certify (no run, or no plan and the run's status) or,
    for plans the evaluator rejects, which violations it found.
    """
    out = {"cost": math.nan, "time": math.nan, "q_hi": math.nan, "note": ""}
    if g.empty:
        return out
    out["time"] = float(g["runtime_s"].median())
    planned = g[g["cost"].notna()]
    if planned.empty:
        status = ",".join(sorted(set(g["status"].dropna().astype(str)) | set(g["harness_status"].dropna()) - {"ok"}))
        return out | {"note": f"no plan ({status or 'unknown'})"}
    feas = planned["feasible"].astype("boolean").fillna(False).astype(bool)
    viol = sorted({v for s in planned.loc[~feas, "violations"].dropna() for v in str(s).split(",") if v})
    return out | {"cost": float(planned["cost"].median()), "q_hi": float(planned["q_hi"].median()),
                  "note": f"infeasible ({','.join(viol) or 'not certified'})" if not feas.all() else ""}


def headline(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Paper reproduction per network x noise mode x target: optimum, depl (eta 200) and best-exp."""
    p = d[d["network"].notna()]
    rows = []
    for (net, mode, target, inst), g in p.groupby(["network", "noise_mode", "target", "instance"], sort=True):
        ref = refs.loc[inst] if inst in refs.index else None
        opt_rows = g[(g["solver_kind"] == "exact") & (g["status"] == "optimal")
                     & g["feasible"].astype("boolean").fillna(False)]
        dg, eta = pick_depl(g)
        dep, bex = _summary(dg), _summary(g[g["solver"] == "best-exp"])
        plus = _summary(g[(g["solver"] == "depl-plus") & (pd.to_numeric(g["eta"], errors="coerce") == PAPER_ETA)])
        opt = float(ref["ref_hi"]) if ref is not None else math.nan
        flags = [f"{name} {s['note']}" for name, s in (("depl", dep), ("best-exp", bex)) if s["note"]]
        if (g["solver"] == "depl-plus").any() and plus["note"]:
            flags.append(f"depl-plus {plus['note']}")
        if ref is not None and not ref["proven"]:
            flags.append("optimum not proven: best known cost")
        if eta is not None and eta != PAPER_ETA:
            flags.append(f"depl at eta={eta:g}")
        rows.append({
            "network": net, "noise_mode": mode, "target": target, "optimum": opt,
            "opt_time_s": float(opt_rows["runtime_s"].median()) if len(opt_rows) else math.nan,
            "depl_cost": dep["cost"], "depl_ratio": dep["cost"] / opt if opt else math.nan,
            "depl_q_hi": dep["q_hi"], "depl_time_s": dep["time"],
            "bestexp_cost": bex["cost"], "bestexp_ratio": bex["cost"] / opt if opt else math.nan,
            "bestexp_q_hi": bex["q_hi"], "bestexp_time_s": bex["time"],
            # the variant beyond the paper (heuristics/depl_plus.py), when the store has it
            "deplplus_cost": plus["cost"], "deplplus_ratio": plus["cost"] / opt if opt else math.nan,
            "flags": "; ".join(flags),
        })
    out = pd.DataFrame(rows)
    if not (p["solver"] == "depl-plus").any():
        out = out.drop(columns=["deplplus_cost", "deplplus_ratio"], errors="ignore")
    return out


# ---- runtime scaling -------------------------------------------------------------------------

#: variable -> (store column, transform). Runtime is fitted against the transformed value.
SCALING_VARS: dict[str, tuple[str, Any]] = {
    "eta": ("eta", lambda x: x), "1/eps": ("eps", lambda x: 1.0 / x),
    "epochs": ("max_epochs", lambda x: x), "models": ("n_models", lambda x: x),
    "clusters": ("n_clusters", lambda x: x), "datasets": ("n_datasets", lambda x: x),
}
#: Property 2 as stated, O(|M|^2 K^2 / eta^4); the other variables have no stated exponent.
CLAIMED_EXPONENT = {"eta": "-4", "epochs": "2", "models": "2"}
#: MODEL.md section 7 items 3 and 7: layered DP O(|M|^2 K eta^2); knapsack FPTAS polynomial in 1/eps.
CORRECTED_EXPONENT = {"eta": "2", "epochs": "1", "models": "2", "1/eps": "polynomial (7.7)",
                      "clusters": "2^|N| with transfer costs (7.7)"}
_FACTORS = ("solver", "eta", "eps", "scenarios", "formulation", "max_epochs", "n_models",
            "n_clusters", "n_datasets", "n_options", "family", "noise_mode")


def scaling_series(d: pd.DataFrame) -> list[dict[str, Any]]:
    """One-factor-at-a-time series: per (solver, variable), the rows where only that variable moves.

    Rows are grouped by every other factor (solver, parameters, sizes); the group with the most
    distinct values of the variable (at least 3) is kept. Timeouts are censored at their limit,
    runs that failed otherwise are dropped. Returns dicts with the finished and censored points.
    """
    d = d[~(d["harness_status"].isin(["error", "memory"]) | (d["status"] == "error"))]
    out = []
    for var, (col, tf) in SCALING_VARS.items():
        others = [c for c in _FACTORS if c != col]
        x = pd.to_numeric(d[col], errors="coerce")
        sub = d[x.notna() & (x > 0)]
        if sub.empty:
            continue
        keys = sub[others].astype(str)
        for solver in sorted(sub["solver"].dropna().unique()):
            best = None
            for _, g in sub[sub["solver"] == solver].groupby(list(keys.columns.drop("solver")), dropna=False):
                n = g[col].nunique()
                if n >= 3 and (best is None or (n, len(g)) > (best[col].nunique(), len(best))):
                    best = g
            if best is None:
                continue
            xs = tf(pd.to_numeric(best[col]).to_numpy(float))
            t = pd.to_numeric(best["runtime_s"], errors="coerce").to_numpy(float)
            cens = best["timed_out"].to_numpy(bool)
            limit = pd.to_numeric(best["time_limit"], errors="coerce").to_numpy(float)
            cval = np.where(np.isnan(limit), t, limit)
            fin = ~cens & np.isfinite(t) & (t > 0)
            out.append({"solver": solver, "var": var, "x": xs[fin], "t": t[fin],
                        "cx": xs[cens], "ct": cval[cens]})
    return out


def loglog_fit(x: np.ndarray, t: np.ndarray) -> dict[str, float]:
    """Least squares ln t = a + b ln x with the 95% t-interval of the exponent b."""
    from scipy import stats

    n = len(x)
    if n < 3 or np.unique(x).size < 2:
        return {"n": n, "a": math.nan, "b": math.nan, "ci_lo": math.nan, "ci_hi": math.nan, "r2": math.nan}
    lx, lt = np.log(x), np.log(t)
    res = stats.linregress(lx, lt)
    half = float(stats.t.ppf(0.975, n - 2) * res.stderr) if n > 2 else math.nan
    return {"n": n, "a": float(res.intercept), "b": float(res.slope), "ci_lo": float(res.slope - half),
            "ci_hi": float(res.slope + half), "r2": float(res.rvalue ** 2)}


def scaling_table(series: list[dict[str, Any]]) -> pd.DataFrame:
    """Fitted exponents (95% CI) per series beside Property 2's claim and the corrected exponent."""
    rows = []
    for s in series:
        f = loglog_fit(s["x"], s["t"])
        rows.append({"solver": s["solver"], "variable": s["var"], "points": f["n"], "censored": len(s["cx"]),
                     "range": f"{np.min(np.r_[s['x'], s['cx']]):g}..{np.max(np.r_[s['x'], s['cx']]):g}",
                     "exponent": f["b"], "ci95_lo": f["ci_lo"], "ci95_hi": f["ci_hi"], "r2": f["r2"],
                     "claimed_P2": CLAIMED_EXPONENT.get(s["var"], "not stated"),
                     "corrected": CORRECTED_EXPONENT.get(s["var"], "not stated")})
    return pd.DataFrame(rows)
