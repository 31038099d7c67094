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
    is pointwise no smaller (X >= 0, P >= 0), hence refuted too.

    Entries sit in blocks of ``BLOCK`` with each block's bounding box (the largest ``c`` and the
    least ``n`` of its entries), so a query scans only the blocks whose box could hold a
    dominating entry: the answer is the plain scan's over every entry kept, at a fraction of its
    cost, which lets the store keep up to ``cap`` entries (2026-12-05: 4096 before, when a
    refutation forgotten cost seed 6 of the m5e40 tier a third more brackets). The arrays grow by
    doubling from ``BLOCK * 64`` entries; once ``cap`` are kept, the oldest block is emptied
    whole for the next ones (a ring of blocks).
    """

    BLOCK = 64

    def __init__(self, M: int, P: int, cap: int = 1 << 17):
        self.M, self.P = M, P
        self.cap = max(self.BLOCK, cap - cap % self.BLOCK)
        self.i = 0  # entries added so far
        self._alloc(min(self.cap, self.BLOCK * 64))

    def _alloc(self, size: int) -> None:
        """Arrays of ``size`` entries (one row per coordinate: contiguous scans), the old ones copied."""
        old = getattr(self, "c", None)
        c = np.full((self.M, size), -np.inf)
        n = np.full((max(self.P, 1), size), _EMPTY_N, dtype=np.int32)
        bc = np.full((self.M, size // self.BLOCK), -np.inf)
        bn = np.full((max(self.P, 1), size // self.BLOCK), _EMPTY_N, dtype=np.int32)
        if old is not None:
            k = old.shape[1]
            c[:, :k], n[:, :k] = self.c, self.n
            bc[:, :k // self.BLOCK], bn[:, :k // self.BLOCK] = self.bc, self.bn
        self.c, self.n, self.bc, self.bn = c, n, bc, bn

    def dominated(self, c: np.ndarray, n: np.ndarray) -> bool:
        """Some stored entry has every ``c' >= c`` and every ``n' <= n`` (one compiled scan of the blocks)."""
        k = min(self.i, self.cap)
        if k == 0:
            return False
        return bool(_dominated(self.c, self.n, self.bc, self.bn, np.asarray(c, dtype=float),
                               np.asarray(n, dtype=np.int32), k, self.P, self.BLOCK))

    def add(self, c: np.ndarray, n: np.ndarray) -> None:
        j = self.i % self.cap
        if j >= self.c.shape[1]:
            self._alloc(min(2 * self.c.shape[1], self.cap))
        b = j // self.BLOCK
        if j % self.BLOCK == 0 and self.i >= self.cap:  # the ring reaches the oldest block: empty it whole
            self.c[:, j: j + self.BLOCK] = -np.inf
            self.n[:, j: j + self.BLOCK] = _EMPTY_N
            self.bc[:, b] = -np.inf
            self.bn[:, b] = _EMPTY_N
        self.c[:, j] = c
        np.maximum(self.bc[:, b], self.c[:, j], out=self.bc[:, b])
        if self.P:
            self.n[:, j] = n
            np.minimum(self.bn[:, b], self.n[:, j], out=self.bn[:, b])
        self.i += 1


_EMPTY_N = np.iinfo(np.int32).max  # the switch counts of an empty slot: dominate nothing


@numba.njit("boolean(float64[:, ::1], int32[:, ::1], float64[:, ::1], int32[:, ::1], float64[::1], int32[::1], "
            "int64, int64, int64)", **JIT)
def _dominated(cs, ns, bc, bn, c, n, k, P, B):  # pragma: no cover - compiled
    """Some slot ``j < k`` with ``cs[:, j] >= c`` and (``P > 0``) ``ns[:P, j] <= n``: plain comparisons,
    so the same answer as the numpy statement (NaN compares false in both). A block whose box
    (largest ``c``, least ``n``) fails the test holds no such slot and is skipped; the newest
    blocks first (a search's refutations dominate its next prefixes most often)."""
    M = len(c)
    for b in range((k + B - 1) // B - 1, -1, -1):
        ok = True
        for m in range(M):
            if not bc[m, b] >= c[m]:
                ok = False
                break
        if ok:
            for p in range(P):
                if not bn[p, b] <= n[p]:
                    ok = False
                    break
        if not ok:
            continue
        for j in range(b * B, min(k, (b + 1) * B)):
            hit = True
            for m in range(M):
                if not cs[m, j] >= c[m]:
                    hit = False
                    break
            if hit:
                for p in range(P):
                    if not ns[p, j] <= n[p]:
                        hit = False
                        break
            if hit:
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
