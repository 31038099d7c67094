"""``milp-scip-bc``: SCIP (PySCIPOpt) branch-and-cut with the chance constraint enforced lazily.

The decomposition of Luedtke (2014): the master holds the deterministic rows of
:func:`~deplbench.formulations.saa.model.build` (model sequence, options, budget, fixed
scenario rows, objective cut, mixing rows) and the binaries ``v`` with ``sum v <= allowed``;
the scenario rows that carry a ``v`` are **not** in it. A constraint handler

* checks every candidate solution (``conscheck``): a scenario with ``v_s = 0`` whose loss
  exceeds the target makes it infeasible;
* enforces integral LP and pseudo solutions (``consenfolp``, ``consenfops``) by adding the
  violated scenario rows ``loss_s <= target + M_s v_s`` (quantile big-M: the single-element
  star inequality of the loss direction of scenario s);
* separates fractional LP solutions (``conssepalp``): violated scenario rows, and the most
  violated star inequality of the cost mixing set (Luedtke, Ahmed and Nemhauser 2010;
  :func:`~deplbench.formulations.saa.strength.star_cut`).

Lazy rows are invisible to presolve, so SCIP's dual reductions are switched off
(``misc/allowstrongdualreds``, ``misc/allowweakdualreds``); primal presolve stays valid.
PySCIPOpt's SCIP coexists with highspy 1.14 and OR-Tools in one process
(``tests/test_imports.py``).
"""

from __future__ import annotations

import time

import numpy as np
from pyscipopt import SCIP_RESULT, Conshdlr, Model, quicksum

from deplbench.formulations.saa.common import (
    SAA_OUTPUTS,
    SAA_PARAMS,
    SAA_TEST_PARAMS,
    SubResult,
    mip_start,
    saa_method,
)
from deplbench.formulations.saa.model import FEAS_TOL, SaaModel, SubsetData, build
from deplbench.formulations.saa.strength import star_cut
from deplbench.registry import register_solver
from deplbench.results import Status, map_status

#: a lazy row counts as violated above this (the registry's test of a scenario is 1e-9)
VIOL_TOL = 1e-9
#: most rows added per separation or enforcement round
MAX_ROWS = 50
#: SCIP status -> Status (gaplimit: stopped at mip_gap, as the other backends call optimal)
STATUS_MAP = {"optimal": Status.OPTIMAL, "gaplimit": Status.OPTIMAL, "infeasible": Status.INFEASIBLE,
              "timelimit": Status.TIMEOUT, "userinterrupt": Status.TIMEOUT, "nodelimit": Status.TIMEOUT,
              "memlimit": Status.MEMOUT, "unbounded": Status.ERROR, "inforunbd": Status.ERROR}


class LazyScenarios(Conshdlr):
    """Checks, enforces and separates the scenario rows kept out of the master (see module doc)."""

    def __init__(self, model: SaaModel, xs: list, lazy: np.ndarray) -> None:
        super().__init__()
        self.m = model
        self.xs = xs
        self.rows = model.A[model.scen_rows[lazy]].tocsr()
        self.rhs = model.row_ub[model.scen_rows[lazy]]
        self.v = model.v[lazy]
        self.vcoef = np.asarray(self.rows[np.arange(len(lazy)), self.v]).ravel()  # -M_s
        self.added = np.zeros(len(lazy), dtype=bool)
        self.cuts = 0

    def _x(self, sol) -> np.ndarray:
        return np.array([self.model.getSolVal(sol, x) for x in self.xs])

    def _violated(self, x: np.ndarray, with_v: bool) -> np.ndarray:
        """Indices of lazy rows violated at x (``with_v``: the big-M row; else the plain loss)."""
        act = self.rows @ x
        if not with_v:
            act = act - self.vcoef * x[self.v]
            return np.flatnonzero((act > self.rhs + VIOL_TOL) & (x[self.v] < 0.5))
        return np.flatnonzero(act > self.rhs + VIOL_TOL)

    def _add(self, idx: np.ndarray) -> int:
        n = 0
        for i in idx[:MAX_ROWS]:
            sl = slice(self.rows.indptr[i], self.rows.indptr[i + 1])
            expr = quicksum(float(a) * self.xs[j] for j, a in zip(self.rows.indices[sl], self.rows.data[sl],
                                                                   strict=True))
            self.model.addCons(expr <= float(self.rhs[i]), name=f"lazy{i}", removable=False)
            self.added[i] = True
            n += 1
        self.cuts += n
        return n

    def _star(self, x: np.ndarray) -> int:
        if self.m.data.mixing is None:
            return 0
        h, psi = self.m.data.mixing
        y = float(self.m.c @ x)
        cut = star_cut(h, psi, x[self.m.v], y)
        if cut is None:
            return 0
        nz = np.flatnonzero(self.m.c)
        expr = quicksum(float(self.m.c[j]) * self.xs[j] for j in nz) + quicksum(
            float(a) * self.xs[self.m.v[s]] for s, a in zip(cut.scen, cut.coef, strict=True))
        self.model.addCons(expr >= cut.rhs * (1 - 1e-7), name="star", removable=True)
        self.cuts += 1
        return 1

    def conscheck(self, constraints, solution, checkintegrality, checklprows, printreason, completely):
        bad = self._violated(self._x(solution), with_v=False)
        return {"result": SCIP_RESULT.INFEASIBLE if len(bad) else SCIP_RESULT.FEASIBLE}

    def _enforce(self):
        x = self._x(None)
        bad = self._violated(x, with_v=True)
        bad = bad[~self.added[bad]]
        if len(bad):
            self._add(bad)
            return {"result": SCIP_RESULT.CONSADDED}
        if len(self._violated(x, with_v=False)):  # an added row is violated: LP not resolved yet
            return {"result": SCIP_RESULT.INFEASIBLE}
        return {"result": SCIP_RESULT.FEASIBLE}

    def consenfolp(self, constraints, nusefulconss, solinfeasible):
        return self._enforce()

    def consenfops(self, constraints, nusefulconss, solinfeasible, objinfeasible):
        return self._enforce()

    def conssepalp(self, constraints, nusefulconss):
        x = self._x(None)
        bad = self._violated(x, with_v=True)
        bad = bad[~self.added[bad]]
        n = self._add(bad) + self._star(x)
        return {"result": SCIP_RESULT.CONSADDED if n else SCIP_RESULT.DIDNOTFIND}

    def conslock(self, constraint, locktype, nlockspos, nlocksneg):
        pass


def to_scip(model: SaaModel, lazy: np.ndarray) -> tuple[Model, list]:
    """The master problem: every row except the lazy scenario rows."""
    scip = Model()
    scip.hideOutput()
    xs = [scip.addVar(name=f"x{j}", vtype="I" if model.integer[j] else "C",
                      lb=None if not np.isfinite(model.lb[j]) else float(model.lb[j]),
                      ub=None if not np.isfinite(model.ub[j]) else float(model.ub[j]),
                      obj=float(model.c[j])) for j in range(model.n_vars)]
    skip = set(model.scen_rows[lazy].tolist())
    A = model.A.tocsr()
    for i in range(model.n_cons):
        if i in skip:
            continue
        sl = slice(A.indptr[i], A.indptr[i + 1])
        expr = quicksum(float(a) * xs[j] for j, a in zip(A.indices[sl], A.data[sl], strict=True))
        lo, hi = model.row_lb[i], model.row_ub[i]
        if np.isfinite(lo) and np.isfinite(hi):
            scip.addCons(expr == float(hi)) if lo == hi else (
                scip.addCons(expr >= float(lo)), scip.addCons(expr <= float(hi)))
        elif np.isfinite(hi):
            scip.addCons(expr <= float(hi))
        elif np.isfinite(lo):
            scip.addCons(expr >= float(lo))
    return scip, xs


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = True) -> SubResult:
    """Build the master of one dataset selection and solve it by branch-and-cut."""
    t0 = time.perf_counter()
    model = build(data, formulation, margin=margin)
    live = model.scen_rows >= 0
    lazy = np.flatnonzero(live & (model.ub[model.v] > 0))
    scip, xs = to_scip(model, lazy)
    hdlr = LazyScenarios(model, xs, lazy)
    scip.includeConshdlr(hdlr, "lazyscen", "scenario rows of the SAA, added lazily", sepapriority=1,
                         enfopriority=-1, chckpriority=-1, sepafreq=1, propfreq=-1, eagerfreq=-1,
                         maxprerounds=0, needscons=False)
    scip.setParam("misc/allowstrongdualreds", False)
    scip.setParam("misc/allowweakdualreds", False)
    scip.setParam("numerics/feastol", FEAS_TOL)
    scip.setParam("limits/gap", float(mip_gap))
    scip.setParam("limits/absgap", 0.0 if mip_gap == 0 else 1e-6)
    scip.setParam("randomization/randomseedshift", int(seed))
    scip.setParam("parallel/maxnthreads", int(threads))
    t1 = time.perf_counter()
    left = time_limit - (t1 - t0)
    x0 = mip_start(model, t1 + 0.25 * max(left, 0.0)) if start else None
    if x0 is not None:
        sol = scip.createSol()
        for var, val in zip(xs, x0, strict=True):
            scip.setSolVal(sol, var, float(val))
        scip.addSol(sol)
    scip.setParam("limits/time", float(max(time_limit - (time.perf_counter() - t0), 1e-3)))
    scip.optimize()
    t2 = time.perf_counter()
    st = scip.getStatus()
    plan = obj = None
    if scip.getNSols() > 0:
        best = scip.getBestSol()
        x = np.array([scip.getSolVal(best, v) for v in xs])
        plan = model.decode(x)
        obj = scip.getSolObjVal(best)
    status = map_status(STATUS_MAP, st)
    bound = scip.getDualbound() if status != Status.INFEASIBLE else None
    if bound is not None and not np.isfinite(bound):
        bound = None
    return SubResult(status, plan, obj, bound, int(scip.getNNodes()), build_s=t1 - t0, solve_s=t2 - t1,
                     n_vars=model.n_vars, n_cons=model.n_cons - len(lazy) + hdlr.cuts,
                     message="" if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT) else (
                         f"SCIP (PySCIPOpt): status {st}"),
                     extra={"cuts_added": hdlr.cuts, "lazy_rows": int(hdlr.added.sum())})


solve_scip_bc = register_solver("milp-scip-bc", kind="saa", params=SAA_PARAMS,
                                # the Python model build and callbacks are slower: more time, no start
                                test_params={**SAA_TEST_PARAMS, "time_limit": 120.0, "start": False},
                                outputs={**SAA_OUTPUTS, "cuts_added": "rows added by the constraint handler",
                                         "lazy_rows": "scenario rows added lazily"}, description=(
    "SAA by SCIP (PySCIPOpt) branch-and-cut: scenario rows and mixing cuts added lazily"))(
    saa_method(solve_subset))
