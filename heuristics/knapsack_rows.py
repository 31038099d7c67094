"""The compiled row of DepL stage 3's knapsack DP (:func:`deplbench.heuristics.allocation._knapsack_dp`).

One item (an epoch) turns the least times of every rounded cost 0..C into the next: each cost c
takes the least of ``dp[c - units[o]] + time[o]`` over the usable options o (finite cost,
``units[o] <= c``), the first option on ties, as ``np.argmin`` over the candidate table did; a
cost no option reaches is inf with option 0 (the argmin of a row of inf). The same float64
additions, without the (cost, option) table numpy needed. Compiled when imported, like
:mod:`deplbench.heuristics.models.kernels`. Imports numpy, numba and the suite's compile
options (``deplbench.numeric.JIT``).
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.numeric import JIT


@numba.njit("void(float64[::1], float64[::1], int64[::1], float64[::1], float64[::1], int16[::1])", **JIT)
def knapsack_row(dp, cost, units, time, out, arg):  # pragma: no cover - compiled
    """out[c] = least dp[c - units[o]] + time[o] over the usable options, arg[c] = the first such o."""
    for c in range(out.shape[0]):
        best = np.inf
        first = 0
        for o in range(cost.shape[0]):
            u = units[o]
            if u <= c and np.isfinite(cost[o]):
                v = dp[c - u] + time[o]
                if v < best:
                    best = v
                    first = o
        out[c] = best
        arg[c] = first
