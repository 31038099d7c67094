"""Root LP bound of the SAA MILP as built (``extra["root_bound"]``, ``["root_gap"]``).

The LP relaxation of :func:`~deplbench.formulations.saa.model.build`'s aggregated model of one
dataset selection, with the strengthening of the run (big-M, fixed rows, cuts, objective and
mixing rows), solved by HiGHS. Every backend writes the same rows, so this is the root bound
before any solver-specific presolve or cuts; ``root_gap`` compares it with the returned plan's
cost. About 0.1 s at S = 1000 on the random family (counted in the run's wall time, reported
as ``root_s``).
"""

from __future__ import annotations

import math
import time

import highspy

from deplbench.formulations.highs import new_highs
from deplbench.formulations.saa.io import to_highs_lp
from deplbench.formulations.saa.model import SubsetData, build


def lp_bound(data: SubsetData, time_limit: float) -> float | None:
    """LP-relaxation optimum of one selection's aggregated model (+inf: LP infeasible; None: not solved).

    ``time_limit`` counts the build of the model too (at 20,000 scenarios about 0.4 s).
    """
    t0 = time.perf_counter()
    lp = to_highs_lp(build(data, "aggregated"))
    lp.integrality_ = []
    h = new_highs(threads=1)
    left = time_limit - (time.perf_counter() - t0)
    if left <= 1e-2:
        return None
    h.setOptionValue("time_limit", float(left))
    h.passModel(lp)
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kOptimal:
        return float(h.getInfo().objective_function_value)
    if st == highspy.HighsModelStatus.kInfeasible:
        return math.inf
    return None


def root_gap(objective: float | None, bound: float | None) -> float | None:
    """``(objective - bound) / |objective|`` (>= 0), or None without both."""
    if objective is None or bound is None or not math.isfinite(bound):
        return None
    return max(0.0, (objective - bound) / max(abs(objective), 1e-9))


__all__ = ["lp_bound", "root_gap"]
