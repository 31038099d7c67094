"""Certified bracket [lo, hi] of the omega-quantile of a sum of independent terms.

Method (see docs/evaluator.md for the proof):

1. Every term T_i = coef_i Z_i is discretised on the common lattice {j h}: the mass of
   each cell (x_{j-1}, x_j] is put at its upper end x_j, so the discrete Y_i^up >= T_i
   and Y_i^up - T_i < h. The tails beyond far quantiles (1e-13) are dropped and their
   mass is added to a budget ``beta``.
2. The lattice variables are convolved (FFT or direct, Huffman order); after each
   convolution the outer tails below 1e-16 are dropped into ``beta``. The L1
   round-off of every convolution is bounded (Higham's FFT error analysis, safety
   factor 5) and accumulated into ``err``.
3. With F the computed CDF of Y^up = sum Y_i^up and n the number of terms:
   F(x) - err <= P(l <= x) <= F(x + n h) + beta + err,
   so hi = the first lattice point with F >= omega + err and
   lo = (first lattice point with F + beta + err >= omega) - n h.

The width is about (n + 1) h; h is chosen from the requested width.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import signal

from deplbench.instances.loss import LossTerms

EPS = np.finfo(float).eps
TAIL = 1e-10  # mass dropped in each tail of each term (into beta, which only widens lo)
TRIM = 1e-16  # mass dropped in each tail after each convolution
MAX_POINTS = 1 << 21  # lattice points per term, at most


@dataclass(frozen=True)
class Bracket:
    """The certified bracket and how it was obtained."""

    lo: float
    hi: float
    h: float  # lattice step
    n_terms: int
    n_points: int  # length of the final distribution
    tail_mass: float  # beta: mass dropped from tails
    round_off: float  # err: bound on the L1 round-off of the computed distribution

    @property
    def width(self) -> float:
        return self.hi - self.lo


@lru_cache(maxsize=1024)
def _core(dist) -> tuple[float, float]:
    """The core [ppf(TAIL), isf(TAIL)] of a law, clipped to its support (cached per law)."""
    return max(dist.lower, float(dist.ppf(TAIL))), min(dist.upper, float(dist.isf(TAIL)))


@lru_cache(maxsize=4096)
def _term_pmf(dist, coef: float, h: float) -> tuple[int, np.ndarray, float]:
    """Lattice pmf of coef * Z rounded up to multiples of h: (start index, masses, dropped mass).

    Memoised (a pure function of its arguments; heuristics certify many plans that share
    terms), so the returned masses are read-only.
    """
    zlo, zhi = _core(dist)
    tlo, thi = sorted((coef * zlo, coef * zhi))
    j0 = math.floor(tlo / h)
    j1 = max(math.ceil(thi / h), j0 + 1)
    x = np.arange(j0, j1 + 1) * h
    if coef > 0:
        cells, below, above = dist.cell_masses(x / coef)  # P(x_{j-1} < T <= x_j)
    else:
        cells, above, below = dist.cell_masses(x[::-1] / coef)
        cells = cells[::-1]
    pmf = np.concatenate(([0.0], cells))
    pmf.setflags(write=False)
    return j0, pmf, below + above


def _trim(start: int, pmf: np.ndarray) -> tuple[int, np.ndarray, float]:
    c = np.cumsum(pmf)
    total = c[-1]
    i0 = int(np.searchsorted(c, TRIM, side="right"))
    i1 = int(np.searchsorted(c, total - TRIM, side="left")) + 1
    i1 = max(i1, i0 + 1)
    dropped = float(c[i0 - 1] if i0 > 0 else 0.0) + float(total - c[min(i1, len(c)) - 1])
    return start + i0, pmf[i0:i1], dropped


def _convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    n = len(a) + len(b) - 1
    if min(len(a), len(b)) <= 64 or len(a) * len(b) < 200_000:
        out = np.convolve(a, b)
        err = min(len(a), len(b)) * 2 * EPS * a.sum() * b.sum() * 1.01
    else:
        out = signal.fftconvolve(a, b)
        gamma = 5 * math.ceil(math.log2(n)) * EPS
        err = math.sqrt(n) * (3 * gamma + EPS) + n * EPS
    np.maximum(out, 0.0, out=out)  # clipping moves entries towards the exact (non-negative) values
    return out, err


def quantile_bracket(terms: LossTerms, omega: float, width: float) -> Bracket:
    """Certified bracket of the omega-quantile of ``terms`` aiming at ``width``.

    Memoised: a pure function of its arguments, so a plan certified twice (by a heuristic,
    then by the registry's re-check) is computed once.

    Parameters
    ----------
    terms : LossTerms
    omega : float
        Quantile level in (0, 1).
    width : float
        Requested width hi - lo (achieved up to the tail and round-off budget).
    """
    try:
        return _cached_bracket(terms, float(omega), float(width))
    except TypeError:  # unhashable terms (arrays inside): compute without the cache
        return _bracket(terms, float(omega), float(width))


@lru_cache(maxsize=1024)
def _cached_bracket(terms: LossTerms, omega: float, width: float) -> Bracket:
    return _bracket(terms, omega, width)


def _lattice(terms: LossTerms, width: float) -> tuple[int, np.ndarray, float, float, float]:
    """Memoised :func:`_lattice_of` (computed directly for unhashable terms)."""
    try:
        return _cached_lattice(terms, width)
    except TypeError:
        return _lattice_of(terms, width)


@lru_cache(maxsize=256)
def _cached_lattice(terms: LossTerms, width: float) -> tuple[int, np.ndarray, float, float, float]:
    return _lattice_of(terms, width)


def _lattice_of(terms: LossTerms, width: float) -> tuple[int, np.ndarray, float, float, float]:
    """(start, pmf, h, beta, err) of Y^up = sum of the terms rounded up to the lattice of step h.

    ``beta`` is the dropped tail mass, ``err`` the round-off bound of the convolutions; the
    pmf is read-only (memoised: the bracket and the floored mean of a plan share it).
    """
    n = len(terms.dists)
    h = width / (n + 1)
    # keep every term's lattice below MAX_POINTS (coarser h, wider bracket, reported)
    spans = [abs(c) * (_core(d)[1] - _core(d)[0]) for d, c in zip(terms.dists, terms.coefs, strict=True)]
    h = max(h, max(spans) / MAX_POINTS)
    beta = 0.0
    err = 0.0
    heap: list[tuple[int, int, int, np.ndarray]] = []
    for i, (d, c) in enumerate(zip(terms.dists, terms.coefs, strict=True)):
        j0, pmf, dropped = _term_pmf(d, c, h)
        beta += dropped
        err += 4 * EPS * len(pmf)
        heapq.heappush(heap, (len(pmf), i, j0, pmf))
    tie = n
    while len(heap) > 1:
        _, _, sa, a = heapq.heappop(heap)
        _, _, sb, b = heapq.heappop(heap)
        out, e = _convolve(a, b)
        err += e
        start, out, dropped = _trim(sa + sb, out)
        beta += dropped
        tie += 1
        heapq.heappush(heap, (len(out), tie, start, out))
    _, _, start, pmf = heap[0]
    pmf.setflags(write=False)
    return start, pmf, h, beta, err


def _bracket(terms: LossTerms, omega: float, width: float) -> Bracket:
    """The computation behind :func:`quantile_bracket`."""
    n = len(terms.dists)
    if n == 0:
        return Bracket(terms.offset, terms.offset, 0.0, 0, 1, 0.0, 0.0)
    start, pmf, h, beta, err = _lattice(terms, width)
    cdf = np.cumsum(pmf)
    err += len(cdf) * EPS  # summation round-off of the cumulative sum
    j_hi = int(np.searchsorted(cdf, omega + err, side="left"))
    hi = terms.offset + (start + j_hi) * h if j_hi < len(cdf) else math.inf
    need = omega - beta - err
    if need <= 0:
        lo = -math.inf
    else:
        j_lo = int(np.searchsorted(cdf, need, side="left"))
        j_lo = min(j_lo, len(cdf) - 1)
        lo = terms.offset + (start + j_lo - n) * h
    return Bracket(lo, hi, h, n, len(pmf), beta, err)


def floored_mean(terms: LossTerms, floor: float, width: float) -> float:
    """E[max(floor, l)] = E[l] + E[(floor - l)^+] (MODEL.md section 4, loss floor).

    E[l] is exact; the correction is computed on the lattice of :func:`quantile_bracket`
    (the same one for the same ``width``): with l <= Y^up < l + n h, E[(floor - Y^up)^+] is
    below the true correction by less than n h (about ``width``) plus the dropped tail mass
    times the span; it is 0 when the lattice never reaches below the floor.
    """
    n = len(terms.dists)
    if n == 0:
        return max(floor, terms.offset)
    start, pmf, h, _, _ = _lattice(terms, float(width))
    y = terms.offset + (start + np.arange(len(pmf))) * h
    below = y < floor
    return terms.mean + float(np.sum((floor - y[below]) * pmf[below]))


def violation_bracket(terms: LossTerms, target: float, width: float) -> tuple[float, float]:
    """Certified bracket of ``P(l > target)`` (the bounds of the quantile bracket, read at a point).

    With F the lattice CDF of the upper sum: ``F(x) - err <= P(l <= x) <= F(x + n h) + beta + err``.
    """
    n = len(terms.dists)
    if n == 0:
        v = float(terms.offset > target)
        return v, v
    start, pmf, h, beta, err = _lattice(terms, width)
    cdf = np.cumsum(pmf)
    err += len(cdf) * EPS  # summation round-off of the cumulative sum

    def F(x: float) -> float:
        j = math.floor((x - terms.offset) / h) - start  # last lattice point <= x
        return 0.0 if j < 0 else float(cdf[min(j, len(cdf) - 1)])

    lo = 1.0 - min(1.0, F(target + n * h) + beta + err)
    hi = 1.0 - max(0.0, F(target) - err)
    return max(lo, 0.0), min(hi, 1.0)
