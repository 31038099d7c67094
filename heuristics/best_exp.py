"""The ``best-exp`` baseline: DepL's three stages driven by the *expected* loss.

Inspired by Malandrino et al. (INFOCOM 2023), the state of the art the paper
compares with: stage 2 uses the expected loss, which is exactly additive (gain
g a_m(k) E[X_m] per epoch, E[P] per switch), with an expected-loss target. To meet
the quantile constraint like every strategy, the expected-loss target is lowered
(bisection over the same single DP) until the plan's certified quantile meets the
real target, and the cheapest certified plan is returned.
"""

from __future__ import annotations

from deplbench.heuristics.depl import DEPL_IMPORTS, DEPL_PARAMS, DEPL_TEST_PARAMS
from deplbench.registry import register_solver
from deplbench.results import SolveResult


@register_solver("best-exp", kind="heuristic", params=DEPL_PARAMS, test_params=DEPL_TEST_PARAMS,
                 imports=DEPL_IMPORTS,
                 description="best-exp: DepL's stages on the expected loss, target lowered until certified")
def solve_best_exp(instance, *, eta: int = 200, eps: float = 0.05, time_limit: float = 60.0, seed: int = 0,
                   threads: int = 1) -> SolveResult:
    """Expected-loss baseline (``eta`` buckets per resource, stage-3 accuracy ``eps``); deterministic."""
    from deplbench.heuristics.pipeline import run_pipeline

    return run_pipeline(instance, method="best-exp", eta=eta, eps=eps, time_limit=time_limit)
