"""What every SAA method declares: its parameters, outputs and test parameters, and its entry.

Light on purpose (no numpy, scipy or solver library): a backend module declares itself with these
and ``deplbench solvers`` lists it without importing the SAA machinery, which
:func:`saa_method` imports when the method runs.

May import: ``deplbench.params``, ``deplbench.results``. Imported by: the backends, ``saa.common``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deplbench.params import Param
from deplbench.results import SolveResult

if TYPE_CHECKING:
    from deplbench.formulations.saa.contract import BackendSolve, SubResult

#: The parameters every SAA MILP backend declares (docs/formulations.md; defaults: the best
#: rung of benchmarks/perf/saa_ladder.py).
SAA_PARAMS = (
    Param("scenarios", int, 200, "scenarios S of the sample-average approximation", low=1, high=100_000),
    Param("formulation", str, "aggregated", "MILP formulation", choices=("aggregated", "time_indexed")),
    Param("mip_gap", float, 1e-4, "relative MIP gap at which the solver stops", low=0.0, high=1.0),
    Param("cuts", str, "mixing", "valid inequalities: none, quantile cuts, or quantile cuts plus the "
          "objective cut and mixing rows", choices=("none", "quantile", "mixing")),
    Param("bigm", str, "quantile", "scenario big-M: worst case, or quantile (valid for SAA-feasible plans)",
          choices=("worst", "quantile")),
    Param("fixing", str, "on", "fix scenarios every SAA-feasible plan satisfies (with bigm=quantile)",
          choices=("on", "off")),
    Param("start", bool, True, "pass an enumerated MIP start"),
    Param("root_gap", bool, True, "report the LP relaxation bound of the built model (root_bound, root_gap)"),
)
SAA_DEFAULTS = {p.name: p.default for p in SAA_PARAMS}
SAA_TEST_PARAMS = {"scenarios": 20, "time_limit": 30.0}
#: what every SAA method imports when it runs (the machinery, HiGHS for the root LP, the start plan's
#: DepL with its declared imports): imported before the method's clock starts
#: (``register_solver(imports=...)``); a backend adds its library
SAA_IMPORTS = ("deplbench.formulations.saa.common", "deplbench.formulations.saa.io", "deplbench.formulations.saa.cuts",
               "deplbench.formulations.saa.root", "deplbench.formulations.saa.start",
               "deplbench.formulations.saa.strength", "deplbench.heuristics.depl", "deplbench.heuristics.pipeline",
               "deplbench.instances.evaluator.lattice_jit", "highspy")
#: numeric outputs of every SAA method (``extra``; the store's ``x_<name>`` columns)
SAA_OUTPUTS = {
    "bound_quantile": "(allowed+1)-th largest single-scenario cost bound: a lower bound on the SAA optimum",
    "bound_count": "least exact allocation cost over the count vectors that can be SAA-feasible",
    "n_fixed": "scenarios fixed as satisfied (quantile big-M <= 0)",
    "mixing_rows": "objective cut and mixing rows added",
    "strength_s": "seconds of the count-vector relaxation (bounds, big-M)",
    "prep_s": "seconds of sampling, cut sets and strengthening",
    "n_vars": "columns, summed over selections", "n_cons": "rows, summed over selections",
    "root_bound": "LP relaxation bound of the built model (least over selections)",
    "root_gap": "(objective - root_bound) / objective: the root gap of the formulation as built",
    "root_s": "seconds of the root LP relaxation (root_gap=true)",
    "blocks": "cyclic per_run switch graphs: sequences of at most this many blocks enumerated exactly",
}


def saa_method(solve_subset: BackendSolve) -> Callable[..., SolveResult]:
    """The registered entry point of an SAA backend, given its ``solve_subset``.

    The method binds the solver settings (``mip_gap``, ``threads``, ``seed``, ``start``) and hands
    :func:`~deplbench.formulations.saa.common.run_saa` the resulting
    :class:`~deplbench.formulations.saa.contract.SolveSubset`.
    """

    def method(instance, *, scenarios: int, formulation: str, mip_gap: float, time_limit: float,
               seed: int, threads: int, cuts="mixing", bigm: str = "quantile", fixing: str = "on",
               start: bool = True, root_gap: bool = True) -> SolveResult:
        def sub(data, **kw) -> SubResult:  # a SolveSubset: run_saa passes formulation, margin, time_limit
            return solve_subset(data, mip_gap=mip_gap, threads=threads, seed=seed, start=start, **kw)

        from deplbench.formulations.saa.common import run_saa

        return run_saa(instance, sub, scenarios=scenarios, seed=seed, formulation=formulation,
                       time_limit=time_limit, cuts=cuts, bigm=bigm, fixing=fixing, root=root_gap)

    return method
