"""Lifted noise laws for the cover conditions of ``exact`` (docs/exact-proofs.md, Lemma 12 (c)).

A noise factor ``X >= 0`` is rounded up to a fine grid (:class:`Rounded`: ``X' >= X`` pointwise,
its CDF a table lookup) and bounded on a cell of directions by a non-decreasing function of
``X'`` (:func:`lifted`), so a cell's bound on ``v . X`` is a sum of independent laws.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from deplbench.formulations.exact.knobs import LIFT_FLAT, ROUNDED_POINTS, ROUNDED_QUANTILES
from deplbench.instances.laws.distributions import Dist
from deplbench.numeric import JIT


class Rounded:
    """``X' = `` the least point ``>= X`` of a uniform grid (``X' >= X`` pointwise), tabulated once.

    ``P(X' <= x) = F(x_i)`` and ``P(X' > x) = S(x_i)`` with ``x_i`` the largest grid point
    ``<= x``: lifted laws of ``X'`` need table lookups only (no special function per bracket).
    Below the grid ``X' = x_0``; above it ``X' = +inf`` (mass ``S(x_last)``, kept as a tail).
    """

    def __init__(self, d: Dist, points: int = ROUNDED_POINTS):
        lo = max(float(d.ppf(1e-13)), d.lower, 0.0)
        hi = float(d.isf(1e-13))
        self.x0, self.step = lo, max((hi - lo) / (points - 1), 1e-12 * max(1.0, abs(lo)))
        xs = lo + self.step * np.arange(points)
        self.xs = xs
        self.F = np.ascontiguousarray(d.cdf(xs), dtype=float)
        self.S = np.ascontiguousarray(d.sf(xs), dtype=float)
        self._ppf, self._isf, self.median = d.ppf, d.isf, float(d.median)
        self.mean, self.var = d.mean, d.var
        self._quantiles: dict[tuple[float, bool], object] = {}  # (level, upper) -> the law's quantile

    def ppf(self, q):
        """The law's quantile at ``q`` (remembered per scalar level: every cell's lifted law asks its
        core, ``ppf(TAIL)`` and ``isf(TAIL)``, of the same law)."""
        return self._quantile(q, False)

    def isf(self, q):
        """The law's upper quantile at ``q`` (remembered per scalar level, as :meth:`ppf`)."""
        return self._quantile(q, True)

    def _quantile(self, q, upper: bool):
        if np.ndim(q) != 0:
            return (self._isf if upper else self._ppf)(q)
        key = (float(q), upper)
        out = self._quantiles.get(key)
        if out is None:
            if len(self._quantiles) >= ROUNDED_QUANTILES:  # levels are few (the core's two): a bound all the same
                self._quantiles.clear()
            out = self._quantiles[key] = (self._isf if upper else self._ppf)(q)
        return out

    def index(self, x) -> np.ndarray:
        """Index of the largest grid point ``<= x`` (``-1`` below the grid, ``n - 1`` for NaN).

        The same integers as ``searchsorted(xs, x, side="right") - 1`` (:func:`_index`)."""
        x = np.asarray(x, dtype=float)
        return _indices(np.ascontiguousarray(x.ravel()), self.x0, self.step, self.xs).reshape(x.shape)

    def cdf(self, x) -> np.ndarray:
        return self.read(x, self.F, 0.0)

    def sf(self, x) -> np.ndarray:
        return self.read(x, self.S, 1.0)

    def read(self, x, table: np.ndarray, below: float, lift: tuple[float, float, float, float] | None = None) -> np.ndarray:
        """``table`` at the grid index of each ``x`` (``below`` under the grid); with ``lift = (y0, c,
        s1, s2)`` at that of ``finv(x)`` (:func:`lifted`): one compiled loop, the same values as
        ``np.where(i >= 0, table[max(i, 0)], below)`` with ``i = self.index(finv(x))``."""
        x = np.asarray(x, dtype=float)
        y0, c, s1, s2 = (0.0, 0.0, 1.0, 1.0) if lift is None else lift
        out = _read(np.ascontiguousarray(x.ravel()), self.x0, self.step, self.xs, table, below,
                    lift is not None, y0, c, s1, s2)
        return out.reshape(x.shape)

    def up(self, x) -> np.ndarray:
        """``x`` rounded up to the grid (``+inf`` above it)."""
        j = np.searchsorted(self.xs, np.asarray(x, dtype=float), side="left")
        return np.where(j < len(self.xs), self.xs[np.minimum(j, len(self.xs) - 1)], np.inf)


def lifted(d: Rounded, a: float, e: float, c: float) -> Dist:
    """The law of ``f(X')`` with ``f(x) = a x + e |x - c|`` (``a > e``: slopes ``a - e`` and ``a + e``)
    or, for a small coordinate (``a <= e``), ``f(x) = LIFT_FLAT (a + e) x`` below ``c`` and
    ``LIFT_FLAT (a + e) c + (a + e) (x - c)`` above: at least ``(a + e) (x - c)^+`` on ``x >= 0`` and
    strictly increasing (the brackets need laws without atoms). ``X' >= X >= 0`` (:class:`Rounded`),
    so ``f(X') >= f(X)`` pointwise; ``mean`` and ``var`` only steer the brackets.
    """
    if a > e:
        y0, s1, s2 = a * c, a - e, a + e
    else:  # f(x) = LIFT_FLAT (a + e) x below c (>= 0), then (a + e) (x - c) above it: no atom at 0
        y0, s1, s2 = LIFT_FLAT * (a + e) * c, LIFT_FLAT * (a + e), a + e

    lift = (float(y0), float(c), float(s1), float(s2))

    def f(x):
        x = np.asarray(x, dtype=float)
        return np.where(x < c, y0 + s1 * (x - c), y0 + s2 * (x - c))

    mean = float(f(d.mean)) + e * math.sqrt(max(d.var, 0.0))
    return Dist("lifted", lambda y: d.read(y, d.F, 0.0, lift), lambda y: d.read(y, d.S, 1.0, lift),
                lambda q: f(d.up(d.ppf(q))),
                lambda q: f(d.up(d.isf(q))), mean, s2 * s2 * d.var, float(f(d.x0)), math.inf,
                float(f(d.up(d.median))), tabulate=False)  # one cell's law: read, not tabulated


@numba.njit("int64(float64, float64, float64, float64[::1])", **JIT)
def _index(x, x0, step, xs):  # pragma: no cover - compiled
    """Index of the largest ``xs[i] <= x`` on the uniform grid ``xs`` (``-1`` below it; NaN sorts last,
    as in ``searchsorted(xs, x, side="right") - 1``): a guess by division, then moved while it is
    on the wrong side of ``x`` (the division's round-off is a step at most; the loop makes the
    answer exact whatever it is)."""
    n = len(xs)
    g = np.floor((x - x0) / step)
    if np.isnan(g):
        return n - 1
    i = np.int64(min(max(g, -1.0), float(n - 1)))
    while True:
        if i >= 0 and xs[i] > x:
            i -= 1
        elif i < n - 1 and xs[i + 1] <= x:
            i += 1
        else:
            return i


@numba.njit("int64[::1](float64[::1], float64, float64, float64[::1])", **JIT)
def _indices(x, x0, step, xs):  # pragma: no cover - compiled
    out = np.empty(len(x), dtype=np.int64)
    for k in range(len(x)):
        out[k] = _index(x[k], x0, step, xs)
    return out


@numba.njit("float64[::1](float64[::1], float64, float64, float64[::1], float64[::1], float64, boolean, "
            "float64, float64, float64, float64)", **JIT)
def _read(x, x0, step, xs, table, below, lift, y0, c, s1, s2):  # pragma: no cover - compiled
    """``table`` at :func:`_index` of each ``x`` (with ``lift``: of ``finv(x)``, the inverse of
    :func:`lifted`'s ``f``, the same operations as its ``np.where``), ``below`` under the grid."""
    out = np.empty(len(x))
    for k in range(len(x)):
        v = x[k]
        if lift:
            v = c + (v - y0) / s1 if v < y0 else c + (v - y0) / s2
        i = _index(v, x0, step, xs)
        out[k] = table[i] if i >= 0 else below
    return out
