"""The ``depl-plus`` variant: DepL with a quantile-frontier surrogate in ``per_run`` mode.

Identical to ``depl`` (same stages, loop, bisection and certification) except in
``per_run`` mode, where stage 2 uses
:func:`deplbench.heuristics.models.perrun.frontier_surrogate` instead of the paper's
CGF surrogates: exact single-model quantiles plus a first-switch bonus that makes the
additive loss resource exact on the quantile frontier of two-model plans. This goes
beyond the paper's algorithm, hence its own name; ``depl`` stays the paper's method.
"""

from __future__ import annotations

from deplbench.heuristics.datasets import DATASET_MODES
from deplbench.heuristics.depl import DEPL_IMPORTS, DEPL_PARAMS, DEPL_TEST_PARAMS
from deplbench.params import Param
from deplbench.registry import register_solver
from deplbench.results import SolveResult

DEPL_PLUS_PARAMS = (*DEPL_PARAMS, Param(
    "datasets", str, "stage1", "dataset choice: stage 1's ranking (the paper) or a search judged by the plans found",
    choices=DATASET_MODES))


@register_solver("depl-plus", kind="heuristic", params=DEPL_PLUS_PARAMS, test_params=DEPL_TEST_PARAMS,
                 imports=DEPL_IMPORTS,
                 description="DepL with a quantile-frontier surrogate for per_run noise (beyond the paper)")
def solve_depl_plus(instance, *, eta: int = 200, eps: float = 0.05, datasets: str = "stage1",
                    time_limit: float = 60.0, seed: int = 0, threads: int = 1) -> SolveResult:
    """``depl`` with the frontier surrogate in ``per_run`` mode; deterministic.

    ``datasets``: ``stage1`` (the paper's dataset choice) or ``search`` (choices judged by the
    cost of the plan stages 2 and 3 find, :mod:`deplbench.heuristics.datasets.search`).
    """
    from deplbench.heuristics.pipeline import run_pipeline

    return run_pipeline(instance, method="depl-plus", eta=eta, eps=eps, time_limit=time_limit,
                        datasets=datasets)
