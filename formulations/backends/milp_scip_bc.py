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
(``tests/e2e/test_imports.py``).
"""

from __future__ import annotations

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

if TYPE_CHECKING:  # PySCIPOpt (backends.scip_lazy) and the SAA machinery are imported when the method runs
    from deplbench.formulations.saa.contract import SubResult
    from deplbench.formulations.saa.model import SubsetData

#: SCIP status (PySCIPOpt's ``getStatus()``) -> Status (a status not listed is ``unknown``)
STATUS_MAP = {
    "optimal": Status.OPTIMAL,
    # SCIP stopped at the requested relative gap (limits/gap = mip_gap): optimal at mip_gap, as the
    # other backends report it (HiGHS's kOptimal, OR-Tools' OPTIMAL for SCIP's gaplimit)
    "gaplimit": Status.OPTIMAL,
    "infeasible": Status.INFEASIBLE,
    "timelimit": Status.TIMEOUT,
    # SCIP caught a Ctrl-C itself (misc/catchctrlc) and returned: stopped like a limit, the plan (if
    # any) is the incumbent; the registry's ``interrupted`` is for a stop that reaches Python
    "userinterrupt": Status.TIMEOUT,
    # no node limit is set: a limit all the same (stopped, unproven)
    "nodelimit": Status.TIMEOUT,
    "memlimit": Status.MEMOUT,
    # the SAA MILP's objective, a cost, is at least 0: neither is a true answer, so a failure
    # (and inforunbd proves no infeasibility)
    "unbounded": Status.ERROR, "inforunbd": Status.ERROR,
}


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = True) -> SubResult:
    """Build the master of one dataset selection and solve it by branch-and-cut."""
    from deplbench.formulations.backends.scip_lazy import LazyScenarios, to_scip
    from deplbench.formulations.saa.common import SubResult, mip_start
    from deplbench.formulations.saa.model import FEAS_TOL, build

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
                                         "lazy_rows": "scenario rows added lazily"},
                                imports=(*SAA_IMPORTS, "deplbench.formulations.backends.scip_lazy"),
                                backend=solve_subset, description=(
    "SAA by SCIP (PySCIPOpt) branch-and-cut: scenario rows and mixing cuts added lazily"))(
    saa_method(solve_subset))
