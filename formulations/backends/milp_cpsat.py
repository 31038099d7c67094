"""``milp-cpsat``: the SAA model in OR-Tools CP-SAT, with enforcement literals and integer scaling.

The rows come from :func:`deplbench.formulations.saa.model.build` (without the per-run
aggregation, whose column is continuous). Differences from the MILP:

* a scenario row holds only if its violation literal is false
  (``OnlyEnforceIf(v[s].Not())``): no big-M;
* CP-SAT needs integers, so the loss rows are multiplied by ``LOSS_SCALE`` and the
  time row by ``TIME_SCALE`` and rounded *conservatively*: every coefficient up
  (ceil: loss improvements shrink, penalties and times grow; all columns are >= 0)
  and the right-hand side down (floor: target and budget shrink). Every plan of the
  scaled model therefore satisfies the true SAA. Costs are multiplied by
  ``COST_SCALE`` and rounded to nearest.
* A value counts as exact when it is within ``SNAP`` (scaled units, i.e. float noise)
  of an integer. If any value is not exact, the scaled model may exclude true SAA
  plans: a proven optimum is then reported as ``feasible`` and a proven
  infeasibility as unknown (never ``optimal`` / ``infeasible``).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from deplbench.formulations.saa.method import (
    SAA_IMPORTS,
    SAA_OUTPUTS,
    SAA_PARAMS,
    SAA_TEST_PARAMS,
    saa_method,
)
from deplbench.registry import register_solver
from deplbench.results import Status, map_status

if TYPE_CHECKING:  # OR-Tools and the SAA machinery are imported when the method runs
    from ortools.sat.python import cp_model

    from deplbench.formulations.saa.contract import SubResult
    from deplbench.formulations.saa.model import SaaModel, SubsetData

LOSS_SCALE = 1e6
TIME_SCALE = 1e6
COST_SCALE = 1e6
SNAP = 1e-6


#: CP-SAT status, by name (``CpSolver.status_name``) -> Status (a code not listed is ``unknown``).
#: Proven statuses hold for the scaled model; :func:`solve_subset` downgrades them when the
#: scaling is not exact.
STATUS_MAP = {
    # also when the gap limits stopped the search (relative_gap_limit = mip_gap): CP-SAT then
    # reports OPTIMAL, as the MIP solvers do at their mip_gap
    "OPTIMAL": Status.OPTIMAL,
    # CP-SAT's FEASIBLE: a search limit (here max_time_in_seconds) stopped it with an incumbent
    # before it proved optimality, so the selection's optimum is unproven: a stop, not a claim
    "FEASIBLE": Status.TIMEOUT,
    "INFEASIBLE": Status.INFEASIBLE,
    # CP-SAT's UNKNOWN: a search limit stopped it before it found a solution or proved anything
    "UNKNOWN": Status.TIMEOUT,
    "MODEL_INVALID": Status.ERROR,
}


def conservative(values: np.ndarray, scale: float, up: bool) -> tuple[np.ndarray, bool]:
    """Scale and round (``up``: ceil, else floor) unless within SNAP of an integer; also exactness."""
    x = np.asarray(values, dtype=float) * scale
    r = np.rint(x)
    near = np.abs(x - r) <= SNAP * np.maximum(1.0, np.abs(x) * 1e-9)
    out = np.where(near, r, np.ceil(x) if up else np.floor(x))
    return out.astype(np.int64), bool(near.all())


def to_cpsat(model: SaaModel, hint: np.ndarray | None = None,
             deadline: float = math.inf) -> tuple[cp_model.CpModel, list, bool]:
    """The scaled CP-SAT model, its variables (in column order) and whether the scaling is exact.

    ``hint`` (a column vector of ``model``, e.g. :func:`~deplbench.formulations.saa.common.mip_start`) becomes a
    complete solution hint; its ``v`` are recomputed on the *scaled* scenario rows (a plan at
    the target may round into a violation), so the hint is a solution of the scaled model
    whenever at most ``allowed`` of those rows are violated. Past ``deadline`` (checked every
    ``saa.data.ROWS_PER_CHECK`` rows; at S = 20,000 the rows take seconds) it raises
    :class:`~deplbench.formulations.saa.data.PastDeadline`.
    """
    from ortools.sat.python import cp_model

    from deplbench.formulations.saa.data import ROWS_PER_CHECK, check_deadline

    cp = cp_model.CpModel()
    xs = []
    for j in range(model.n_vars):
        lo, hi = model.lb[j], model.ub[j]
        if not (math.isfinite(lo) and math.isfinite(hi)) or not (model.integer[j] or (lo, hi) == (0.0, 1.0)):
            raise ValueError(f"column {j} is not integer with finite bounds")
        xs.append(cp.new_int_var(int(lo), int(hi), f"x{j}"))  # the continuous w are exact ANDs: 0/1
    exact = True
    scen_of_row = {int(r): s for s, r in enumerate(model.scen_rows) if r >= 0}
    cut_rows = set(model.cut_rows.tolist())
    obj_rows = set(model.obj_rows.tolist())
    A = model.A.tocsr()
    for i in range(model.n_cons):
        if i % ROWS_PER_CHECK == 0:
            check_deadline(deadline)
        sl = slice(A.indptr[i], A.indptr[i + 1])
        cols, vals = A.indices[sl], A.data[sl]
        lo, hi = model.row_lb[i], model.row_ub[i]
        lit = None
        if i in scen_of_row:
            v = model.v[scen_of_row[i]]
            keep = cols != v
            cols, vals = cols[keep], vals[keep]
            lit = xs[v]
            scale = LOSS_SCALE
        elif i in cut_rows:
            scale = LOSS_SCALE  # rounded like the scenario rows it is derived from: still implied
        elif i == model.time_row:
            scale = TIME_SCALE
        elif i in obj_rows:
            # a valid ">=" row on cost and v (columns >= 0): coefficients up and the right-hand
            # side down keep it valid, so it neither loses a plan nor affects exactness
            coefs, _ = conservative(vals, COST_SCALE, up=True)
            (rhs,), _ = conservative([lo], COST_SCALE, up=False)
            expr = cp_model.LinearExpr.weighted_sum([xs[c] for c in cols], coefs.tolist())
            cp.add_linear_constraint(expr, int(rhs), cp_model.INT_MAX)
            continue
        else:
            scale = 1.0
        if scale != 1.0:
            if math.isfinite(lo):
                raise ValueError("only <= rows are scaled")
            coefs, ok1 = conservative(vals, scale, up=True)
            (rhs,), ok2 = conservative([hi], scale, up=False)
            exact &= ok1 and ok2
            lo_i, hi_i = cp_model.INT_MIN, int(rhs)
        else:
            coefs = np.rint(vals).astype(np.int64)
            if np.any(coefs != vals):
                raise ValueError(f"row {i} is not integral")
            lo_i = int(lo) if math.isfinite(lo) else cp_model.INT_MIN
            hi_i = int(hi) if math.isfinite(hi) else cp_model.INT_MAX
        expr = cp_model.LinearExpr.weighted_sum([xs[c] for c in cols], coefs.tolist())
        ct = cp.add_linear_constraint(expr, lo_i, hi_i)
        if lit is not None:
            ct.only_enforce_if(lit.Not())
            if hint is not None:
                hint[v] = float(np.rint(hint[cols]).astype(np.int64) @ coefs > hi_i)
    nz = np.flatnonzero(model.c)
    cost, ok = conservative(model.c[nz], COST_SCALE, up=True)
    exact &= ok
    cp.minimize(cp_model.LinearExpr.weighted_sum([xs[j] for j in nz], cost.tolist()))
    if hint is not None:
        for j, xv in enumerate(xs):
            cp.add_hint(xv, int(np.rint(hint[j])))
    return cp, xs, exact


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = True) -> SubResult:
    """Build one dataset selection's scaled CP-SAT model and solve it.

    With ``start``, the plan of :func:`~deplbench.formulations.saa.common.mip_start` is a
    complete solution hint (its time counts as build time).
    """
    from ortools.sat.python import cp_model

    from deplbench.formulations.saa.common import SubResult, mip_start
    from deplbench.formulations.saa.data import PastDeadline
    from deplbench.formulations.saa.model import build

    t0 = time.perf_counter()
    model = build(data, formulation, margin=margin, aggregate_runs=False)
    x0 = mip_start(model, t0 + 0.25 * max(time_limit, 0.0)) if start else None
    try:
        cp, xs, exact = to_cpsat(model, x0, t0 + time_limit)
    except PastDeadline:  # the model is not complete: no solve
        return SubResult(Status.TIMEOUT, build_s=time.perf_counter() - t0, n_vars=model.n_vars,
                         n_cons=model.n_cons, message="time limit reached while building the CP-SAT model")
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.max_time_in_seconds = max(time_limit - (time.perf_counter() - t0), 1e-3)
    prm.num_workers = int(threads)
    prm.random_seed = int(seed)
    prm.relative_gap_limit = float(mip_gap)
    prm.absolute_gap_limit = 0.0
    # the presolve rule that looks for common rectangles of the dense loss rows took the whole
    # 60 s on paper-mobilenet-per_run-t13 at S = 1000 ("Stopped after presolve"); without it
    # the complete hint is found in seconds
    prm.find_big_linear_overlap = False
    t1 = time.perf_counter()
    st = solver.solve(cp)
    t2 = time.perf_counter()
    plan = obj = None
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        x = np.array([solver.value(v) for v in xs], dtype=float)
        plan = model.decode(x)
        obj = float(model.c @ x)
    status = map_status(STATUS_MAP, solver.status_name(st))
    bound = solver.best_objective_bound / COST_SCALE if st != cp_model.INFEASIBLE else None
    msg = ""
    if not exact:
        bound = None  # a bound of the conservative model is no bound of the true SAA
        if status in (Status.OPTIMAL, Status.INFEASIBLE):
            msg = f"CP-SAT scaling not exact: {status} holds for the scaled model only"
            status = {Status.OPTIMAL: Status.FEASIBLE, Status.INFEASIBLE: Status.UNKNOWN}[status]
    if status in (Status.ERROR, Status.UNKNOWN) and not msg:
        msg = f"CP-SAT: {solver.status_name(st)}"
    return SubResult(status, plan, obj, bound, int(solver.num_branches), build_s=t1 - t0,
                     solve_s=t2 - t1, n_vars=model.n_vars, n_cons=model.n_cons, message=msg)


solve_cpsat = register_solver("milp-cpsat", kind="saa", params=SAA_PARAMS, test_params=SAA_TEST_PARAMS, outputs=SAA_OUTPUTS,
                              imports=(*SAA_IMPORTS, "ortools.sat.python.cp_model"), backend=solve_subset, description=(
    "SAA model in OR-Tools CP-SAT (enforcement literals, conservative integer scaling)"))(saa_method(solve_subset))
