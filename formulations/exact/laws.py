"""Penalty laws and refutation labels for the ``exact`` bounds (docs/exact-proofs.md).

* :func:`min_law`: the law with CDF ``max_i F_i``, stochastically below every one of its laws
  (Lemma 3), with certified moment bounds;
* :class:`LabelStore`: refuted ``per_run`` relaxations, for the dominance of Lemma 4.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from deplbench.instances.laws.distributions import Dist, constant_dist
from deplbench.numeric import JIT


class LabelStore:
    """Refuted per_run relaxations ``l0 - sum_m c_m X_m + sum_p n_p P_p`` (penalties >= 0).

    A relaxation with coefficients ``c' <= c`` and switch counts ``n' >= n`` of a refuted one
    is pointwise no smaller (X >= 0, P >= 0), hence refuted too. Keeps the last ``cap`` entries.
    """

    def __init__(self, M: int, P: int, cap: int = 4096):
        self.P = P
        # one row per coordinate (column scans are contiguous and need no reduction)
        self.c = np.full((M, cap), -np.inf)
        self.n = np.full((max(P, 1), cap), np.iinfo(np.int64).max, dtype=np.int64)
        self.i = 0
        self.cap = cap

    def dominated(self, c: np.ndarray, n: np.ndarray) -> bool:
        """Some stored entry has every ``c' >= c`` and every ``n' <= n`` (one compiled scan)."""
        k = min(self.i, self.cap)
        if k == 0:
            return False
        return bool(_dominated(self.c, self.n, np.asarray(c, dtype=float), np.asarray(n, dtype=np.int64), k, self.P))

    def add(self, c: np.ndarray, n: np.ndarray) -> None:
        j = self.i % self.cap
        self.c[:, j] = c
        if self.P:
            self.n[:, j] = n
        self.i += 1


@numba.njit("boolean(float64[:, ::1], int64[:, ::1], float64[::1], int64[::1], int64, int64)", **JIT)
def _dominated(cs, ns, c, n, k, P):  # pragma: no cover - compiled
    """Some column ``j < k`` with ``cs[:, j] >= c`` and (``P > 0``) ``ns[:P, j] <= n``: plain comparisons,
    so the same answer as the numpy statement (NaN compares false in both)."""
    M = len(c)
    for j in range(k):
        ok = True
        for m in range(M):
            if not cs[m, j] >= c[m]:
                ok = False
                break
        if ok:
            for p in range(P):
                if not ns[p, j] <= n[p]:
                    ok = False
                    break
        if ok:
            return True
    return False


def _tighter_moments(sf, dists: list[Dist], mean: float, m2: float, cells: int = 4096) -> tuple[float, float]:
    """A lower bound on the mean and an upper bound on the second moment of the min law.

    On a bounded support ``[a, b]`` with ``a >= 0``: ``E P = a + int_a^b S`` and
    ``E P^2 = a^2 + int_a^b 2 x S(x) dx`` with ``S`` the survival function, non-increasing, so
    the Riemann sums with ``S`` at the right (left) ends of the cells bound them below (above).
    Returns the better of these and the given bounds.
    """
    a = min(d.lower for d in dists)
    b = max(d.upper for d in dists)
    if not (math.isfinite(a) and math.isfinite(b) and 0.0 <= a < b):
        return mean, m2
    x = np.linspace(a, b, cells + 1)
    S = np.clip(np.asarray(sf(x), dtype=float), 0.0, 1.0)
    dx = (b - a) / cells
    lo_mean = a + float(np.sum(S[1:])) * dx * (1 - 1e-9)
    hi_m2 = a * a + float(np.sum(2.0 * x[1:] * S[:-1])) * dx * (1 + 1e-9)
    return max(mean, lo_mean), min(m2, hi_m2)


def min_law(dists: list[Dist]) -> Dist:
    """The law with CDF max_i F_i: stochastically below every one of ``dists`` (quantile coupling).

    Its mean and variance are replaced by a lower bound (min of the means) and an upper bound
    (max of the second moments minus that bound squared), which keeps Cantelli's bound valid
    for non-negative laws.
    """
    if all(d.is_constant for d in dists):
        return constant_dist(min(d.value for d in dists))
    cdf = lambda x: np.max([np.asarray(d.cdf(x), float) for d in dists], axis=0)  # noqa: E731
    sf = lambda x: np.min([np.asarray(d.sf(x), float) for d in dists], axis=0)  # noqa: E731
    ppf = lambda q: np.min([np.asarray(d.ppf(q), float) for d in dists], axis=0)  # noqa: E731
    isf = lambda q: np.min([np.asarray(d.isf(q), float) for d in dists], axis=0)  # noqa: E731
    mean = min(d.mean for d in dists)
    m2 = max(d.var + d.mean ** 2 for d in dists)
    mean, m2 = _tighter_moments(sf, dists, mean, m2)
    lower = min(d.lower for d in dists)
    upper = max(d.upper for d in dists)
    return Dist("min-penalty", cdf, sf, ppf, isf, mean, max(m2 - mean * mean, 0.0), lower, upper,
                float(ppf(0.5)))
