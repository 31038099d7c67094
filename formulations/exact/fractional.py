"""The fractional knapsack of a region key, per allocation multiplier, compiled.

:meth:`deplbench.formulations.exact.region.RegionBound._support` bounds the least Lagrangian
cost of the count vectors of a support that meet a separable condition by a fractional
knapsack: the increments ``d_e`` of the condition, each costing ``unit[e, l]`` (one more epoch
of its model at multiplier ``l``), taken in decreasing ``d / unit`` until they reach ``rest``.
With numpy this was a dozen calls on ``(E, L)`` arrays of a few hundred cells, asked hundreds of
thousands of times in a long search. This loop does the same IEEE operations per multiplier:
the same ratios, a stable sort of their negatives (numpy's ``argsort(kind="stable")`` order),
the same running sums in the same order, so the keys are the same bits
(``tests/test_region_fractional.py`` compares it with the numpy statement).

Compiled when imported (eager signature, cached on disk by numba), as DepL's loops are; it is
imported with ``exact``'s entry module, before the method's clock starts. Imports numpy, numba and the suite's compile options
(``deplbench.numeric.JIT``).
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.numeric import JIT

__all__ = ["fractional"]


@numba.njit("float64[::1](float64[::1], int64[::1], float64[:, ::1], float64)", **JIT)
def fractional(d, who, phi, rest):  # pragma: no cover - compiled
    """Per multiplier ``l``, the least cost ``sum unit`` of increments reaching ``rest``, the last fractional.

    Parameters
    ----------
    d : float64[E]
        The increments (``E >= 1``).
    who : int64[E]
        The model of each increment (a row of ``phi``).
    phi : float64[M, L]
        ``phi[m, l]``: the cost of one more epoch of model ``m`` at multiplier ``l``.
    rest : float
        What the increments must add up to (``> 0``; when they cannot, the last is taken whole).
    """
    E, L = d.shape[0], phi.shape[1]
    out = np.empty(L)
    unit = np.empty(E)
    key = np.empty(E)
    inf = np.inf
    for col in range(L):
        for e in range(E):
            u = phi[who[e], col]
            unit[e] = u
            if u > 0:
                key[e] = -(d[e] / u)
            else:
                key[e] = -inf if d[e] > 0 else -0.0
        order = np.argsort(key, kind="mergesort")
        cd = 0.0
        cu = 0.0
        prev_d = 0.0
        prev_u = 0.0
        last = E - 1
        for i in range(E):
            o = order[i]
            prev_d, prev_u = cd, cu
            cd = d[o] if i == 0 else cd + d[o]  # cumsum's first entry is the value itself
            cu = unit[o] if i == 0 else cu + unit[o]
            if cd >= rest:
                last = i
                break
        o = order[last]
        dl = d[o]
        frac = 1.0
        if dl > 0:
            frac = min(max((rest - prev_d) / dl, 0.0), 1.0)
        out[col] = prev_u + frac * unit[o]
    return out
