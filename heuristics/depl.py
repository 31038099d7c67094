"""``depl``: the paper's heuristic, and the declarations the DepL family of methods shares.

Light on purpose: the pipeline (:mod:`deplbench.heuristics.pipeline`, which imports the evaluator)
is imported when the method runs, so ``deplbench solvers`` lists it without scipy.

May import: ``deplbench.params``, ``deplbench.registry``, ``deplbench.results``.
Imported by: the registry (by module name), ``depl_plus``, ``best_exp``, ``pipeline``.
"""

from __future__ import annotations

from deplbench.params import Param
from deplbench.registry import register_solver
from deplbench.results import SolveResult

DEPL_PARAMS = (
    Param("eta", int, 200, "buckets per resource of the expanded graph (stage 2)", low=1, high=100_000),
    Param("eps", float, 0.05, "accuracy of the stage-3 knapsack FPTAS", low=0.0, high=1.0, low_open=True),
)
DEPL_TEST_PARAMS = {"eta": 25, "eps": 0.1}
#: loaded before the method's clock starts (``register_solver(imports=...)``): the pipeline (its compiled
#: loops) and the evaluator's compiled term lattices (``lattice_jit``: the same bits, faster)
DEPL_IMPORTS = ("deplbench.heuristics.pipeline", "deplbench.instances.evaluator.lattice_jit")


@register_solver("depl", kind="heuristic", params=DEPL_PARAMS, test_params=DEPL_TEST_PARAMS,
                 imports=DEPL_IMPORTS,
                 description="DepL: dataset selection, expanded-graph model selection (CGF surrogate), MCKP FPTAS")
def solve_depl(instance, *, eta: int = 200, eps: float = 0.05, time_limit: float = 60.0, seed: int = 0,
               threads: int = 1) -> SolveResult:
    """DepL heuristic (``eta`` buckets per resource, stage-3 accuracy ``eps``); deterministic."""
    from deplbench.heuristics.pipeline import run_pipeline

    return run_pipeline(instance, method="depl", eta=eta, eps=eps, time_limit=time_limit)
