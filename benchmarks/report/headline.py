"""The paper reproduction's headline table: per network x noise mode x target, the optimum and each method.

Which methods appear, and at which parameters, is data (:data:`HEADLINE_METHODS`), not code:
adding a method to the headline is one entry.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks.harness.frame import feasible_mask

#: (column prefix, solver, preferred parameters, columns, shown when absent from the store).
#: Preferred parameters fall back to the closest value present (in log scale), flagged.
HEADLINE_METHODS: tuple[tuple[str, str, dict[str, float], tuple[str, ...], bool], ...] = (
    ("depl", "depl", {"eta": 200.0, "eps": 0.05}, ("cost", "ratio", "q_hi", "time_s"), True),
    ("bestexp", "best-exp", {}, ("cost", "ratio", "q_hi", "time_s"), True),
    ("deplplus", "depl-plus", {"eta": 200.0, "eps": 0.05}, ("cost", "ratio"), False),
)


def pick_variant(g: pd.DataFrame, solver: str, prefer: dict[str, float]) -> tuple[pd.DataFrame, dict[str, float]]:
    """Rows of ``solver`` at the preferred parameters, else at the closest values present.

    Returns the rows and the parameters that differ from the preferred ones (for a flag).
    """
    g = g[g["solver"] == solver]
    moved: dict[str, float] = {}
    for key, want in prefer.items():
        col = f"p_{key}"
        if g.empty or col not in g.columns:
            continue
        vals = pd.to_numeric(g[col], errors="coerce")
        if not (vals == want).any() and vals.notna().any():
            dist = (np.log(vals.where(vals > 0)) - math.log(want)).abs()
            best = float(vals[dist.idxmin()])
            moved[key] = best
            want = best
        g = g[vals == want]
    return g, moved


def summary(g: pd.DataFrame) -> dict[str, Any]:
    """Certified figures of a method's runs on one instance (median over repetitions).

    ``note`` says why there is nothing to certify (no run, or no plan and the run's status) or,
    for plans the evaluator rejects, which violations it found.
    """
    out = {"cost": math.nan, "time_s": math.nan, "q_hi": math.nan, "note": ""}
    if g.empty:
        return out
    out["time_s"] = float(g["runtime_s"].median())
    planned = g[g["cost"].notna()]
    if planned.empty:
        status = ",".join(sorted(set(g["status"].dropna().astype(str)) | set(g["harness_status"].dropna()) - {"ok"}))
        why = sorted(set(g["reason"].dropna().astype(str))) if "reason" in g else []
        return out | {"note": f"no plan ({status or 'unknown'}{': ' + why[0] if why else ''})"}
    feas = feasible_mask(planned)
    viol = sorted({v for s in planned.loc[~feas, "violations"].dropna() for v in str(s).split(",") if v})
    return out | {"cost": float(planned["cost"].median()), "q_hi": float(planned["q_hi"].median()),
                  "note": f"infeasible ({','.join(viol) or 'not certified'})" if not feas.all() else ""}


def headline(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Paper reproduction per network x noise mode x target: the optimum and every headline method.

    ``attrs["methods"]`` maps each column prefix to the method label its runs carry (``depl[eta=25]``).
    """
    p = d[d["network"].notna()]
    shown = [m for m in HEADLINE_METHODS if m[4] or (p["solver"] == m[1]).any()]
    rows = []
    labels: dict[str, list[str]] = {}
    for (net, mode, target, inst), g in p.groupby(["network", "noise_mode", "target", "instance"], sort=True):
        ref = refs.loc[inst] if inst in refs.index else None
        opt_rows = g[(g["solver_kind"] == "exact") & (g["status"] == "optimal") & feasible_mask(g)]
        opt = float(ref["ref_hi"]) if ref is not None else math.nan
        row: dict[str, Any] = {"network": net, "noise_mode": mode, "target": target, "optimum": opt,
                               "opt_time_s": float(opt_rows["runtime_s"].median()) if len(opt_rows) else math.nan}
        flags = []
        for prefix, solver, prefer, cols, _ in shown:
            rows_m, moved = pick_variant(g, solver, prefer)
            labels.setdefault(prefix, []).extend(rows_m["method"].dropna().astype(str))
            s = summary(rows_m)
            s["ratio"] = s["cost"] / opt if opt else math.nan
            row.update({f"{prefix}_{c}": s[c] for c in cols})
            if s["note"]:  # empty when the method has no run here
                flags.append(f"{solver} {s['note']}")
            flags += [f"{solver} at {k}={v:g}" for k, v in moved.items()]
        if ref is not None and not ref["proven"]:
            lo = float(ref["ref_lo"])
            gap = f", certified gap {(opt - lo) / opt:.1%} to bound {lo:.6g}" if math.isfinite(lo) and opt else ""
            flags.append(f"optimum not proven: best known cost{gap}")
        rows.append(row | {"flags": "; ".join(flags)})
    out = pd.DataFrame(rows)
    # the method each prefix shows (its most frequent label), so that charts name it as every page does
    out.attrs["methods"] = {k: pd.Series(v).mode().iloc[0] for k, v in labels.items() if v}
    return out
