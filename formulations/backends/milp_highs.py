"""``milp-highs``: the SAA MILP written algebraically in Pyomo (:mod:`.pyomo_model`), solved by HiGHS.

Solved through ``pyomo.contrib.solver``'s ``highs`` interface; Pyomo is imported when the method
runs, so listing the method imports no modelling layer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from deplbench.formulations.saa.method import (
    SAA_IMPORTS,
    SAA_OUTPUTS,
    SAA_PARAMS,
    SAA_TEST_PARAMS,
    saa_method,
)
from deplbench.registry import register_solver
from deplbench.results import Status, map_status

if TYPE_CHECKING:
    from deplbench.formulations.saa.contract import SubResult
    from deplbench.formulations.saa.model import SubsetData

#: Pyomo's writer passes a model to HiGHS in about 0.4 times its build (S = 5000: 1.42 s after a
#: 3.44 s build); with less time left than this share of the build, the solve is not started
PASS_SHARE = 0.5

#: Pyomo termination condition (``pyomo.contrib.solver``'s ``TerminationCondition``), by name ->
#: Status (a condition not listed is ``unknown``, e.g. ``locallyInfeasible``, ``objectiveLimit``).
STATUS_MAP = {
    # HiGHS stopped within the requested gaps (rel_gap = mip_gap): optimal at mip_gap
    "convergenceCriteriaSatisfied": Status.OPTIMAL,
    "provenInfeasible": Status.INFEASIBLE,
    "maxTimeLimit": Status.TIMEOUT,
    # limits the backend does not set, and a stop from outside: stopped, the optimum unproven
    "iterationLimit": Status.TIMEOUT, "interrupted": Status.TIMEOUT,
    "error": Status.ERROR,
    # the SAA MILP's objective, a cost, is at least 0: no true answer, a failure (and
    # infeasibleOrUnbounded is no proof of infeasibility)
    "unbounded": Status.ERROR, "infeasibleOrUnbounded": Status.ERROR,
    "emptyModel": Status.ERROR, "licensingProblems": Status.ERROR,
}


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = False) -> SubResult:
    """Build the Pyomo model of one dataset selection and solve it with HiGHS (``start`` is unused: no MIP start)."""
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.solvers.highs import Highs

    from deplbench.formulations.backends.pyomo_model import build_pyomo, decode_pyomo
    from deplbench.formulations.highs import match_scheduler, silence_banner, workaround_options
    from deplbench.formulations.saa.common import SubResult
    from deplbench.formulations.saa.data import PastDeadline
    from deplbench.formulations.saa.model import FEAS_TOL

    t0 = time.perf_counter()
    try:
        mdl = build_pyomo(data, formulation, margin, t0 + time_limit)
    except PastDeadline:  # the model is not complete: no solve
        return SubResult(Status.TIMEOUT, build_s=time.perf_counter() - t0,
                         message="time limit reached while building the Pyomo model")
    t1 = time.perf_counter()
    if time_limit - (t1 - t0) < PASS_SHARE * (t1 - t0):  # Pyomo's writer would run past the limit
        return SubResult(Status.TIMEOUT, build_s=t1 - t0, n_vars=mdl.nvariables(), n_cons=mdl.nconstraints(),
                         message="time limit: no time left to pass the Pyomo model to HiGHS")
    match_scheduler(threads)  # appsi's HiGHS runs on this thread's scheduler (deplbench.formulations.highs)
    silence_banner()  # Pyomo's interface makes its highspy.Highs at solve time: the banner is spent first
    opt = Highs()
    res = opt.solve(mdl, time_limit=max(time_limit - (t1 - t0), 1e-3), rel_gap=mip_gap,
                    abs_gap=0.0 if mip_gap == 0 else 1e-6, threads=threads,
                    load_solutions=False, raise_exception_on_nonoptimal_result=False,
                    solver_options={"random_seed": int(seed), "primal_feasibility_tolerance": FEAS_TOL,
                                    "mip_feasibility_tolerance": FEAS_TOL,
                                    # highspy 1.16 SIGSEGV in the RENS sub-MIP presolve: RENS off from 1.15 on (none under 1.14)
                                    **workaround_options()})
    t2 = time.perf_counter()
    highs_s = float(getattr(res.timing_info, "highs_time", t2 - t1))
    tc = res.termination_condition
    plan = obj = None
    if res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible):
        res.solution_loader.load_vars()
        plan = decode_pyomo(data, mdl, formulation)
        obj = res.incumbent_objective
    status = map_status(STATUS_MAP, tc.name)
    nodes = getattr(res.extra_info, "mip_node_count", None)
    n_vars = mdl.nvariables()
    return SubResult(status, plan, obj, res.objective_bound, int(nodes) if nodes is not None else None,
                     build_s=(t1 - t0) + max(t2 - t1 - highs_s, 0.0), solve_s=highs_s,
                     n_vars=n_vars, n_cons=mdl.nconstraints(),
                     message="" if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT) else (
                         f"HiGHS via Pyomo: {tc.name}"))


solve_highs_pyomo = register_solver("milp-highs", kind="saa", params=SAA_PARAMS, test_params=SAA_TEST_PARAMS, outputs=SAA_OUTPUTS,
                                    imports=(*SAA_IMPORTS, "deplbench.formulations.backends.pyomo_model",
                                             "pyomo.contrib.solver.solvers.highs", "pyomo.core.expr.ndarray"),
                                    backend=solve_subset, description=(
    "SAA MILP built in Pyomo, solved by HiGHS (pyomo.contrib.solver)"))(saa_method(solve_subset))
