"""``milp-highs-direct``: the SAA MILP as sparse matrices passed to highspy (``passModel``).

The matrices come from :func:`deplbench.formulations.saa.model.build`; no modelling
layer is involved, which is what makes this build fast (see ``benchmarks/perf/milp.py``).
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

if TYPE_CHECKING:
    import highspy

    from deplbench.formulations.saa.common import SubResult
    from deplbench.formulations.saa.model import SubsetData

#: HiGHS model status, by name (``HighsModelStatus.name``) -> Status (a code not listed is ``unknown``).
#: kOptimal: also stopped at the requested gap (mip_rel_gap = mip_gap), optimal at mip_gap.
#: kInterrupt, kIterationLimit, kSolutionLimit: a stop from outside or a limit the backend does not
#: set; like kTimeLimit, the run stopped with the optimum unproven (the plan, if any, is the
#: incumbent). kUnbounded, kUnboundedOrInfeasible: the SAA MILP's objective, a cost, is at least 0,
#: so neither is a true answer (and the second proves no infeasibility): an error.
STATUS_MAP = {
    "kOptimal": Status.OPTIMAL, "kInfeasible": Status.INFEASIBLE,
    "kTimeLimit": Status.TIMEOUT, "kInterrupt": Status.TIMEOUT, "kIterationLimit": Status.TIMEOUT,
    "kSolutionLimit": Status.TIMEOUT, "kMemoryLimit": Status.MEMOUT,
    "kLoadError": Status.ERROR, "kModelError": Status.ERROR, "kPresolveError": Status.ERROR,
    "kSolveError": Status.ERROR, "kPostsolveError": Status.ERROR, "kUnbounded": Status.ERROR,
    "kUnboundedOrInfeasible": Status.ERROR, "kModelEmpty": Status.ERROR,
}


def run_highs(h: highspy.Highs) -> tuple[Status, np.ndarray | None, float | None, float | None, int | None]:
    """Run and read back (status, x, objective, bound, nodes)."""
    import highspy

    h.run()
    ms = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value) if has_x else None
    obj = info.objective_function_value if has_x else None
    bound = info.mip_dual_bound if np.isfinite(info.mip_dual_bound) else None
    nodes = int(info.mip_node_count)
    return map_status(STATUS_MAP, ms.name), x, obj, bound, nodes


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = True) -> SubResult:
    """Build the matrices of one dataset selection and solve them with highspy.

    With ``start``, the plan of :func:`~deplbench.formulations.saa.common.mip_start` is
    passed as a MIP start (``setSolution``); its time counts as solve time.
    """

    from deplbench.formulations.highs import new_highs
    from deplbench.formulations.saa.common import SubResult, mip_start
    from deplbench.formulations.saa.io import configure, set_start, to_highs_lp
    from deplbench.formulations.saa.model import build

    t0 = time.perf_counter()
    model = build(data, formulation, margin=margin)
    h = new_highs(threads)  # the process's first Highs without HiGHS 1.16's banner on stdout
    configure(h, time_limit=time_limit - (time.perf_counter() - t0), mip_gap=mip_gap,
              threads=threads, seed=seed)
    h.passModel(to_highs_lp(model))
    t1 = time.perf_counter()
    x0 = mip_start(model, t1 + 0.25 * max(time_limit - (t1 - t0), 0.0)) if start else None
    set_start(h, x0)
    # the limit counts the build and the start plan: HiGHS gets what they left
    h.setOptionValue("time_limit", float(max(time_limit - (time.perf_counter() - t0), 1e-3)))
    status, x, obj, bound, nodes = run_highs(h)
    t2 = time.perf_counter()
    plan = model.decode(x) if x is not None else None
    msg = "" if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT) else (
        f"HiGHS: {h.modelStatusToString(h.getModelStatus())}")
    return SubResult(status, plan, obj, bound, nodes, build_s=t1 - t0, solve_s=t2 - t1,
                     n_vars=model.n_vars, n_cons=model.n_cons, message=msg)


solve_highs_direct = register_solver("milp-highs-direct", kind="saa", params=SAA_PARAMS, test_params=SAA_TEST_PARAMS, outputs=SAA_OUTPUTS, imports=SAA_IMPORTS,
                                     backend=solve_subset, description=(
    "SAA MILP as sparse matrices, solved by highspy directly"))(saa_method(solve_subset))
