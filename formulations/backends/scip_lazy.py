"""The lazy scenario rows of ``milp-scip-bc``: SCIP's constraint handler and the master model (PySCIPOpt).

Imported by :mod:`~deplbench.formulations.backends.milp_scip_bc` when the method runs.
"""

from __future__ import annotations

import numpy as np
from pyscipopt import SCIP_RESULT, Conshdlr, Model, quicksum

from deplbench.formulations.saa.model import SaaModel
from deplbench.formulations.saa.strength import star_cut

#: a lazy row counts as violated above this (the registry's test of a scenario is 1e-9)
VIOL_TOL = 1e-9
#: most rows added per separation or enforcement round
MAX_ROWS = 50


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
