"""``milp-scip``: the SAA MILP matrices solved by OR-Tools' bundled SCIP (pywraplp).

The matrices of :func:`deplbench.formulations.saa.model.build` are copied into an
``MPModelProto`` (one vectorised ``extend`` per row) and loaded with
``Solver.LoadModelFromProto``.

The template of docs/extending.md ("A MIP backend"): a ``solve_subset`` that conforms to
:class:`~deplbench.formulations.saa.contract.BackendSolve`, a ``STATUS_MAP`` of the solver's codes
by name, and one ``register_solver(..., backend=solve_subset)``.
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

if TYPE_CHECKING:  # OR-Tools and the SAA machinery are imported when the method runs
    from ortools.linear_solver import linear_solver_pb2

    from deplbench.formulations.saa.contract import SubResult
    from deplbench.formulations.saa.model import SaaModel, SubsetData

#: OR-Tools linear solver result, by its name in ``pywraplp.Solver`` -> Status (a code not listed
#: is ``unknown``). OR-Tools' SCIP interface (``scip_interface.cc``) derives its result from SCIP's
#: status; the entries that are not what their names say:
STATUS_MAP = {
    # SCIP's optimal, and its gaplimit: stopped at the requested mip_gap, which OR-Tools calls
    # OPTIMAL "to be consistent with the other solvers" (so do HiGHS and milp-scip-bc's map)
    "OPTIMAL": Status.OPTIMAL,
    # any other SCIP status with a solution: a limit (time, nodes, memory) or an interrupt stopped SCIP
    # with an incumbent, so the selection's optimum is unproven: a stop, not a feasible claim
    "FEASIBLE": Status.TIMEOUT,
    # also SCIP's inforunbd: the SAA MILP's objective, a cost, is at least 0, so it is infeasible
    "INFEASIBLE": Status.INFEASIBLE,
    # SCIP's timelimit (or totalnodelimit) without a solution
    "NOT_SOLVED": Status.TIMEOUT,
    # cannot be true of the SAA MILP (its objective is at least 0): a solver failure
    "UNBOUNDED": Status.ERROR,
    # any other SCIP status without a solution (memlimit, an interrupt...) or a SCIP error
    "ABNORMAL": Status.ERROR,
    "MODEL_INVALID": Status.ERROR,
}


def to_proto(model: SaaModel) -> linear_solver_pb2.MPModelProto:
    """The model as an ``MPModelProto`` (minimisation)."""
    from ortools.linear_solver import linear_solver_pb2

    proto = linear_solver_pb2.MPModelProto()
    for j in range(model.n_vars):
        var = proto.variable.add()
        var.lower_bound = float(model.lb[j])
        var.upper_bound = float(model.ub[j])
        var.objective_coefficient = float(model.c[j])
        var.is_integer = bool(model.integer[j])
    A = model.A.tocsr()
    for i in range(model.n_cons):
        ct = proto.constraint.add()
        ct.lower_bound = float(model.row_lb[i])
        ct.upper_bound = float(model.row_ub[i])
        sl = slice(A.indptr[i], A.indptr[i + 1])
        ct.var_index.extend(A.indices[sl].tolist())
        ct.coefficient.extend(A.data[sl].tolist())
    proto.objective_offset = model.offset
    return proto


def solve_subset(data: SubsetData, *, formulation: str, margin: float, time_limit: float,
                 mip_gap: float, threads: int, seed: int, start: bool = True) -> SubResult:
    """Build one dataset selection's matrices and solve them with SCIP.

    With ``start``, the plan of :func:`~deplbench.formulations.saa.common.mip_start` is
    passed as a hint (``SetHint``); its time counts as solve time.
    """
    from ortools.linear_solver import pywraplp

    from deplbench.formulations.saa.common import SubResult, mip_start
    from deplbench.formulations.saa.model import FEAS_TOL, build

    t0 = time.perf_counter()
    model = build(data, formulation, margin=margin)
    solver = pywraplp.Solver.CreateSolver("SCIP")
    if solver is None:
        return SubResult("error", message="OR-Tools was built without SCIP")
    err = solver.LoadModelFromProto(to_proto(model))
    if err:
        return SubResult("error", message=f"SCIP: {err}")
    left = time_limit - (time.perf_counter() - t0)
    solver.SetTimeLimit(int(max(left, 1e-3) * 1000))
    solver.SetNumThreads(int(threads))
    solver.SetSolverSpecificParametersAsString(
        f"randomization/randomseedshift = {int(seed)}\n"
        f"numerics/feastol = {FEAS_TOL}\n"
        f"limits/absgap = {0.0 if mip_gap == 0 else 1e-6}\n")
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, float(mip_gap))
    params.SetDoubleParam(params.PRIMAL_TOLERANCE, FEAS_TOL)
    t1 = time.perf_counter()
    x0 = mip_start(model, t1 + 0.25 * max(left, 0.0)) if start else None
    if x0 is not None:
        solver.SetHint(solver.variables(), [float(v) for v in x0])
    st = solver.Solve(params)
    t2 = time.perf_counter()
    has_x = st in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE)
    plan = obj = None
    if has_x:
        x = np.array([v.solution_value() for v in solver.variables()])
        plan = model.decode(x)
        obj = solver.Objective().Value()
    status = map_status(STATUS_MAP, next((n for n in STATUS_MAP if getattr(pywraplp.Solver, n) == st), None))
    bound = solver.Objective().BestBound() if st != pywraplp.Solver.INFEASIBLE else None
    if bound is not None and not np.isfinite(bound):
        bound = None
    return SubResult(status, plan, obj, bound, int(solver.nodes()), build_s=t1 - t0, solve_s=t2 - t1,
                     n_vars=model.n_vars, n_cons=model.n_cons,
                     message="" if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT) else (
                         f"SCIP: result status {st}"))


solve_scip = register_solver("milp-scip", kind="saa", params=SAA_PARAMS, test_params=SAA_TEST_PARAMS, outputs=SAA_OUTPUTS,
                             imports=(*SAA_IMPORTS, "ortools.linear_solver.pywraplp",
                                      "ortools.linear_solver.linear_solver_pb2"), backend=solve_subset, description=(
    "SAA MILP matrices solved by OR-Tools' bundled SCIP"))(saa_method(solve_subset))
