"""Lifted noise laws for the cover conditions of ``exact`` (docs/exact-proofs.md, Lemma 12 (c)).

A noise factor ``X >= 0`` is rounded up to a fine grid (:class:`Rounded`: ``X' >= X`` pointwise,
its CDF a table lookup) and bounded on a cell of directions by a non-decreasing function of
``X'`` (:func:`lifted`), so a cell's bound on ``v . X`` is a sum of independent laws.
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.instances.laws.distributions import Dist

FLAT = 0.05  # slope below the pivot of a small coordinate's law, relative to its upper weight


class Rounded:
    """``X' = `` the least point ``>= X`` of a uniform grid (``X' >= X`` pointwise), tabulated once.

    ``P(X' <= x) = F(x_i)`` and ``P(X' > x) = S(x_i)`` with ``x_i`` the largest grid point
    ``<= x``: lifted laws of ``X'`` need table lookups only (no special function per bracket).
    Below the grid ``X' = x_0``; above it ``X' = +inf`` (mass ``S(x_last)``, kept as a tail).
    """

    def __init__(self, d: Dist, points: int = 1 << 15):
        lo = max(float(d.ppf(1e-13)), d.lower, 0.0)
        hi = float(d.isf(1e-13))
        self.x0, self.step = lo, max((hi - lo) / (points - 1), 1e-12 * max(1.0, abs(lo)))
        xs = lo + self.step * np.arange(points)
        self.xs = xs
        self.F = np.asarray(d.cdf(xs), dtype=float)
        self.S = np.asarray(d.sf(xs), dtype=float)
        self.ppf, self.isf, self.median = d.ppf, d.isf, float(d.median)
        self.mean, self.var = d.mean, d.var

    def index(self, x) -> np.ndarray:
        """Index of the largest grid point ``<= x`` (``-1`` below the grid).

        The same integers as ``searchsorted(xs, x, side="right") - 1``, computed from the uniform
        grid: a guess by division, then moved while it is on the wrong side of ``x`` (the
        division's round-off is a step at most; the loop makes the answer exact whatever it is).
        """
        x = np.asarray(x, dtype=float)
        n = len(self.xs)
        g = np.clip(np.floor((x - self.x0) / self.step), -1, n - 1)
        i = np.where(np.isnan(g), n - 1, g).astype(np.intp)  # NaN sorts last, as in searchsorted
        while True:  # move down while xs[i] > x, up while xs[i + 1] <= x
            down = (i >= 0) & (self.xs[np.maximum(i, 0)] > x)
            up = (i < n - 1) & (self.xs[np.minimum(i + 1, n - 1)] <= x)
            if not (down.any() or up.any()):
                return i
            i = i - down + up

    def cdf(self, x) -> np.ndarray:
        i = self.index(x)
        return np.where(i >= 0, self.F[np.maximum(i, 0)], 0.0)

    def sf(self, x) -> np.ndarray:
        i = self.index(x)
        return np.where(i >= 0, self.S[np.maximum(i, 0)], 1.0)

    def up(self, x) -> np.ndarray:
        """``x`` rounded up to the grid (``+inf`` above it)."""
        j = np.searchsorted(self.xs, np.asarray(x, dtype=float), side="left")
        return np.where(j < len(self.xs), self.xs[np.minimum(j, len(self.xs) - 1)], np.inf)


def lifted(d: Rounded, a: float, e: float, c: float) -> Dist:
    """The law of ``f(X')`` with ``f(x) = a x + e |x - c|`` (``a > e``: slopes ``a - e`` and ``a + e``)
    or, for a small coordinate (``a <= e``), ``f(x) = FLAT (a + e) x`` below ``c`` and
    ``FLAT (a + e) c + (a + e) (x - c)`` above: at least ``(a + e) (x - c)^+`` on ``x >= 0`` and
    strictly increasing (the brackets need laws without atoms). ``X' >= X >= 0`` (:class:`Rounded`),
    so ``f(X') >= f(X)`` pointwise; ``mean`` and ``var`` only steer the brackets.
    """
    if a > e:
        y0, s1, s2 = a * c, a - e, a + e
    else:  # f(x) = FLAT (a + e) x below c (>= 0), then (a + e) (x - c) above it: no atom at 0
        y0, s1, s2 = FLAT * (a + e) * c, FLAT * (a + e), a + e

    def f(x):
        x = np.asarray(x, dtype=float)
        return np.where(x < c, y0 + s1 * (x - c), y0 + s2 * (x - c))

    def finv(y):
        y = np.asarray(y, dtype=float)
        return np.where(y < y0, c + (y - y0) / s1, c + (y - y0) / s2)

    mean = float(f(d.mean)) + e * math.sqrt(max(d.var, 0.0))
    return Dist("lifted", lambda y: d.cdf(finv(y)), lambda y: d.sf(finv(y)), lambda q: f(d.up(d.ppf(q))),
                lambda q: f(d.up(d.isf(q))), mean, s2 * s2 * d.var, float(f(d.x0)), math.inf,
                float(f(d.up(d.median))), tabulate=False)  # one cell's law: read, not tabulated
