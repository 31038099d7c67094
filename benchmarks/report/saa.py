"""Report section: SAA plans, their statistical bounds and the exact certification side by side.

For every SAA method, instance and sample size S in the store (the runs of different seeds
are independent replications):

* **root gap** (``x_root_gap``: the LP relaxation of the model as built against the plan's
  cost), proven optima for the sample, time;
* **violation**: the out-of-sample rate of the plan and its one-sided 95% Clopper-Pearson upper
  bound (``oos_rate``, ``oos_cp_upper``, from draws independent of the SAA sample) beside the
  evaluator's exact certification (``feasible``: certified quantile bracket ``q_hi`` <= target);
* **replication lower bound** on the true optimum (Luedtke and Ahmed 2008; Pagnoncelli, Ahmed
  and Shapiro 2009; :func:`deplbench.formulations.saa.bounds.replication_lower_bound`): the
  L-th smallest of the R replication values at confidence 0.95, each value the SAA optimum
  (or the solver's bound if not proven; a run without either gives -inf), risk level equal to
  the instance's eps; beside the best certified cost of the same runs (an upper bound) and the
  exact reference where the store has one (an exact method's proven optimum).

``deplbench saa-bounds`` computes the same bounds for one instance outside a store.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.benchmarks.report.sections import ReportContext, Section, register_section

CONFIDENCE = 0.95


def _eps(ctx: ReportContext, name: str) -> float:
    try:
        return 1.0 - float(ctx.instances(name).loss.quantile)
    except Exception:  # noqa: BLE001 - an instance not stored: no eps, no bound
        return math.nan


def _value(r: pd.Series) -> float:
    """Replication value of one run: its SAA optimum, else its bound (<= the optimum), else -inf."""
    if r["status"] == "optimal" and pd.notna(r["objective"]):
        return float(r["objective"])
    if r["status"] == "infeasible":
        return math.inf
    b = pd.to_numeric(pd.Series([r.get("bound")]), errors="coerce").iloc[0]
    return float(b) if pd.notna(b) else -math.inf


def saa_table(ctx: ReportContext) -> pd.DataFrame:
    """One row per (method, instance, S): the figures of the module docstring."""
    from deplbench.formulations.saa.bounds import replication_lower_bound

    d = ctx.runs[ctx.runs["solver_kind"] == "saa"]
    scen = pd.to_numeric(d.get("p_scenarios", pd.Series(np.nan, index=d.index)), errors="coerce")
    d = d.assign(S=scen)
    refs = ctx.refs
    rows = []
    for (method, inst, S), g in d.groupby(["method", "instance", "S"], sort=True):
        eps = _eps(ctx, inst)
        N = int(S)
        allowed = N - math.ceil((1.0 - eps) * N - 1e-9) if math.isfinite(eps) else None
        L = lb = rho = None
        if allowed is not None:
            L, lb, rho = replication_lower_bound([_value(r) for _, r in g.iterrows()], N, allowed, eps, CONFIDENCE)
        feas = g["feasible"].astype("boolean").fillna(False).astype(bool)
        cert = g.loc[feas, "cost"]
        rg = pd.to_numeric(g.get("x_root_gap", pd.Series(np.nan, index=g.index)), errors="coerce")
        ref = refs.loc[inst] if inst in refs.index else None
        rows.append({
            "method": method, "instance": inst, "S": N, "R": len(g),
            "optimal": int((g["status"] == "optimal").sum()),
            "root_gap": rg.mean() if rg.notna().any() else np.nan,
            "runtime_s": pd.to_numeric(g["runtime_s"], errors="coerce").mean(),
            "eps": eps,
            "oos_rate": pd.to_numeric(g["oos_rate"], errors="coerce").mean(),
            "oos_cp95_max": pd.to_numeric(g["oos_cp_upper"], errors="coerce").max(),
            "certified": f"{int(feas.sum())}/{len(g)}",
            "lb_rank": L, "lower_bound": lb, "rho": rho,
            "best_certified": float(cert.min()) if len(cert) else np.nan,
            "exact_optimum": float(ref["ref_lo"]) if ref is not None and bool(ref["proven"]) else np.nan,
        })
    return pd.DataFrame(rows)


@register_section("saa-bounds", order=60, title="SAA: statistical bounds and exact certification",
                  needs=("solver_kind",))
def saa_bounds_section(ctx: ReportContext) -> Section | None:
    t = saa_table(ctx) if (ctx.runs["solver_kind"] == "saa").any() else pd.DataFrame()
    if t.empty:
        return None
    sec = Section("SAA: statistical bounds and exact certification")
    sec.p("Per SAA method, instance and sample size S; the R runs (seeds) are independent replications. "
          "`optimal`: proven optimal for its sample; `root_gap`: mean LP-relaxation gap of the model as built. "
          "Violation: `oos_rate` (mean out-of-sample violation rate of the plans) and `oos_cp95_max` (largest "
          "one-sided 95% Clopper-Pearson upper bound, independent draws) against `eps`, beside `certified` "
          "(plans the evaluator's exact quantile bracket proves feasible). Optimum: `lower_bound` is the "
          f"replication lower bound at confidence {CONFIDENCE:g} (the `lb_rank`-th smallest replication value; "
          "risk level eps; `rho` = P(a true optimal plan is feasible for one replication); empty when R is "
          "too small for that confidence), `best_certified` the cheapest certified plan of these runs (an "
          "upper bound), `exact_optimum` an exact method's proven optimum where the store has one.")
    return sec.table("Statistical bounds beside the exact certification", t)


__all__ = ["saa_bounds_section", "saa_table"]
