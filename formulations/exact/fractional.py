"""The fractional knapsack of a region key, per allocation multiplier, compiled, and the loops around it.

:meth:`deplbench.formulations.exact.region.RegionBound._support` bounds the least Lagrangian
cost of the count vectors of a support that meet a separable condition by a fractional
knapsack: the increments ``d_e`` of the condition, each costing ``unit[e, l]`` (one more epoch
of its model at multiplier ``l``), taken in decreasing ``d / unit`` until they reach ``rest``.
With numpy this was a dozen calls on ``(E, L)`` arrays of a few hundred cells, asked hundreds of
thousands of times in a long search. This loop does the same IEEE operations per multiplier:
the same ratios, a stable sort of their negatives (numpy's ``argsort(kind="stable")`` order),
the same running sums in the same order, so the keys are the same bits
(``tests/formulations/exact/test_fractional.py`` compares it with the numpy statement).

:func:`support_knapsack` is the rest of ``_support`` around it (the support's total, its
increments, their pairwise sum, the one-model case, the margins) and :func:`lagrangian` the cost
``matvec(lo, phi) - lam T``, in the same operations and order as the numpy code they replaced
(``tests/formulations/test_exact_kernels.py`` keeps that code as the reference).

Compiled when imported (eager signature, cached on disk by numba), as DepL's loops are; it is
imported with ``exact``'s entry module, before the method's clock starts. Imports numpy, numba,
the suite's compile options (``deplbench.numeric.JIT``) and the evaluator's compiled pairwise sum
and binary search (``instances.evaluator.lattice_jit``).
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.instances.evaluator.lattice_jit import pairwise_sum, search_left
from deplbench.numeric import JIT

__all__ = ["fractional", "lagrangian", "support_knapsack"]

#: :func:`support_knapsack`'s outcomes: the condition holds at ``lo`` (the key is ``lo``'s cost), no
#: count vector of the support meets it, one free model (its increments in order), several (the knapsack)
MET, EMPTY, ONE, MANY = 0, 1, 2, 3


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


@numba.njit("Tuple((int64, float64, float64[::1]))(boolean, float64[:, :], float64[:, :], float64[:], float64[:, :], "
            "float64[:, :], float64[:, :], float64[:, :], int64[::1], int64[::1], int64[::1], int64, float64, float64, "
            "float64[:, ::1], float64[:])", **JIT)
def support_knapsack(placed, h, inc, beta, a, cum, sep, sep_inc, n, off, free, room, need, tol, phi,
                     base):  # pragma: no cover - compiled
    """:meth:`~deplbench.formulations.exact.region.RegionBound._support` after its bookkeeping: ``(outcome, sum_m h'_m(n_m), key per multiplier)``.

    ``h'`` is the condition's ``h`` (``placed`` false) or its placed form ``beta_m (cum_m(off_m + k) -
    cum_m(off_m)) + sep_m(k)`` (Lemma 8); the increments beyond ``n`` of the ``free`` models (``room``
    each) are laid end to end, as ``np.concatenate`` of ``_rows``' slices did. The same IEEE operations
    in the same order as that numpy code: the total added over the models in order, the increments'
    sum in numpy's pairwise order, the one-model case's running sums and binary search, the knapsack
    of :func:`fractional`, and the margins ``base + x (1 - 1e-9) - 1e-9``. The key is only meaningful
    for the outcomes ``ONE`` and ``MANY``.
    """
    M = len(n)
    L = phi.shape[1]
    total = 0.0
    for m in range(M):
        if placed:
            if n[m] > 0:
                total += beta[m] * (cum[m, off[m] + n[m]] - cum[m, off[m]]) + sep[m, n[m]]
        else:
            total += h[m, n[m]]
    out = np.empty(L)
    rest = need - total
    if rest <= 0:
        return MET, total, out
    F = len(free)
    if room == 0 or F == 0:
        return EMPTY, total, out
    E = F * room
    d = np.empty(E)
    who = np.empty(E, dtype=np.int64)
    for f in range(F):
        m = free[f]
        for i in range(room):
            if placed:
                d[f * room + i] = beta[m] * a[m, off[m] + n[m] + i] + sep_inc[m, n[m] + i]
            else:
                d[f * room + i] = inc[m, n[m] + i]
            who[f * room + i] = m
    if pairwise_sum(d, 0, E) < rest - tol:
        return EMPTY, total, out
    if F == 1:  # one model: its increments are already in greedy order
        cd = np.empty(E)
        run = 0.0
        for i in range(E):
            run = d[i] if i == 0 else run + d[i]
            cd[i] = run
        last = min(search_left(cd, rest), E - 1)
        prev = cd[last - 1] if last else 0.0
        frac = min(max((rest - prev) / d[last], 0.0), 1.0) if d[last] > 0 else 1.0
        steps = float(last) + frac
        m = free[0]
        for col in range(L):
            out[col] = base[col] + phi[m, col] * steps * (1 - 1e-9) - 1e-9
        return ONE, total, out
    extra = fractional(d, who, phi, rest)
    for col in range(L):
        out[col] = base[col] + extra[col] * (1 - 1e-9) - 1e-9
    return MANY, total, out


@numba.njit("float64[::1](int64[::1], float64[:, :], float64[:], float64)", **JIT)
def lagrangian(lo, phi, lam, limit):  # pragma: no cover - compiled
    """``matvec(lo, phi) - lam * limit``: the Lagrangian cost of the counts ``lo`` per multiplier, the
    products added over the models in order from 0.0, as :func:`deplbench.numeric.thin_matmul` does."""
    L = phi.shape[1]
    out = np.zeros(L)
    for m in range(len(lo)):
        x = float(lo[m])
        for col in range(L):
            out[col] += x * phi[m, col]
    for col in range(L):
        out[col] = out[col] - lam[col] * limit
    return out
