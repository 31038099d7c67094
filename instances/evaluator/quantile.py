"""Certified bracket [lo, hi] of the omega-quantile of a sum of independent terms.

Method (see docs/evaluator.md for the proof):

1. Every term T_i = coef_i Z_i is rounded up onto the common lattice {j h} from a cached
   CDF table of Z_i (:mod:`deplbench.instances.evaluator.lattice`): a lattice CDF G_i with
   G_i(x) <= P(T_i <= x) <= G_i(x + s_i) + b_i, slack s_i = h + |coef_i| d_i <= 1.125 h.
2. The lattice vectors are convolved (real FFT or direct, Huffman order); after each
   convolution the lower tail below 1e-9 is lumped at its upper end and the upper tail
   below 1e-16 dropped, the moved mass going to ``beta``. The L1 round-off of every
   convolution is bounded (Higham's FFT error analysis, safety factor 5) into ``err``.
3. With F the computed CDF and s = sum s_i:
   F(x) - err <= P(l <= x) <= F(x + s) + beta + err,
   so hi = the first lattice point with F >= omega + err and
   lo = (first lattice point with F + beta + err >= omega) - s.

The width is about h + s; h is chosen from the requested width. Sums of many terms (at least
``smooth.MIN_TERMS``) first try the histogram bracket of :mod:`deplbench.instances.evaluator.smooth`,
whose per-term error is second order in h, at a 5-10 times coarser lattice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.fft import next_fast_len

from deplbench.instances.evaluator import smooth
from deplbench.instances.evaluator.lattice import (
    GRID_FRACTION,
    core,
    lump_trim,
    merge_smallest,
)
from deplbench.instances.evaluator.lattice_batch import cached_pmfs, compiled
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.numeric import SHORT, convolve, irfft, rfft

EPS = np.finfo(float).eps
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
    slack: float = 0.0  # s: bound on the total rounding (upper sum minus the loss, on the core)
    kolmogorov: float = 0.0  # E: the larger budget of the histogram terms (0: the lattice bracket)

    @property
    def width(self) -> float:
        return self.hi - self.lo


def _raw_convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """The convolution of ``a`` and ``b`` (a fresh C-ordered array, not clipped) and its L1 round-off bound."""
    n = len(a) + len(b) - 1
    if min(len(a), len(b)) <= SHORT:  # direct, BLAS-free: the same bits on every CPU
        return convolve(a, b), min(len(a), len(b)) * 2 * EPS * 1.02  # both have mass <= 1 (up to round-off)
    N = next_fast_len(n, real=True)
    return irfft(rfft(a, N) * rfft(b, N), N)[:n], smooth.fft_error(N)


def _convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    out, err = _raw_convolve(a, b)
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


Lattice = tuple[int, np.ndarray, float, float, float, float]  # start, pmf, h, beta, err, slack


def _lattice(terms: LossTerms, width: float) -> Lattice:
    """Memoised :func:`_lattice_of` (computed directly for unhashable terms)."""
    try:
        return _cached_lattice(terms, width)
    except TypeError:
        return _lattice_of(terms, width)


@lru_cache(maxsize=256)
def _cached_lattice(terms: LossTerms, width: float) -> Lattice:
    return _lattice_of(terms, width)


def lattice_step(terms: LossTerms, width: float) -> float:
    """The step ``h`` for a requested ``width``: ``h = width / (n + 1 + GRID_FRACTION n)``.

    Every slack is ``h + |c| d <= (1 + GRID_FRACTION) h`` (:mod:`.lattice`), so the width
    ``h + s`` is at most the request; ``h`` depends on the number of terms only, so the term
    lattices of plans of the same length are shared (memoised). Every term's lattice is kept
    below ``MAX_POINTS`` (coarser ``h``, wider bracket, reported).
    """
    n = len(terms.dists)
    spans = [abs(c) * (core(d)[1] - core(d)[0]) for d, c in zip(terms.dists, terms.coefs, strict=True)]
    return max(width / (n + 1 + GRID_FRACTION * n), max(spans) / MAX_POINTS)


def _combine(sa: int, a: np.ndarray, sb: int, b: np.ndarray):
    """The sum of two lattice pmfs, its tails lumped and trimmed (for :func:`merge_smallest`)."""
    jit = compiled()  # the clip and the trim compiled, once imported (lattice_batch)
    if jit is None:
        out, e = _convolve(a, b)
        start, out, moved, e2 = lump_trim(sa + sb, out)
    else:
        out, e = _raw_convolve(a, b)
        start, out, moved, e2 = jit.clip_lump_trim(sa + sb, out)
    return start, out, moved, (e, e2)


def _lattice_of(terms: LossTerms, width: float) -> Lattice:
    """(start, pmf, h, beta, err, slack) of the sum of the terms rounded up to the lattice of step h.

    ``beta`` is the dropped tail mass, ``err`` the round-off bound of the convolutions,
    ``slack`` the sum of the terms' rounding bounds; the pmf is read-only (memoised: the
    bracket and the floored mean of a plan share it).
    """
    n = len(terms.dists)
    h = lattice_step(terms, width)
    beta = 0.0
    err = 0.0
    slack = 0.0
    pmfs = []
    for j0, pmf, b, e, s in cached_pmfs(list(zip(terms.dists, terms.coefs, strict=True)), h):
        beta += b
        err += e
        slack += s
        pmfs.append((j0, pmf))

    start, pmf, beta, err = merge_smallest(pmfs, _combine, beta, err)
    pmf.setflags(write=False)
    return start, pmf, h, beta, err, slack * (1 + 4 * n * EPS)


def _smooth_at(terms: LossTerms, omega: float, h: float, hist: list[bool]) -> Bracket | None:
    """The bracket with the terms flagged in ``hist`` as histograms (:mod:`.smooth`), step ``h``."""
    pmfs, beta, err, shift, E_lo, E_up, k = smooth.term_parts(terms, h, hist)
    if k == 0:
        return None
    start, pmf, beta, err = smooth.merge_levels(pmfs, beta, err)
    cdf = np.cumsum(pmf)
    err += (len(cdf) + 2 * k + 2) * EPS  # the cumulative sum, then a k-term dot product per point
    K = smooth.irwin_hall(k)
    r = K.shape[1]
    up = smooth.crossing(cdf, pmf, K, omega + E_lo + err)
    hi = math.inf if up is None else terms.offset + (start + up[0] + up[1] / r) * h
    need = omega - E_up - beta - err
    shift *= 1 + 4 * len(terms.dists) * EPS
    if need <= 0:
        lo = -math.inf
    else:
        down = smooth.crossing(cdf, pmf, K, need)  # the point before it has H < need
        j = start + len(pmf) + k if down is None else start + down[0] + (down[1] - 1) / r
        lo = terms.offset + j * h - shift
    return Bracket(float(lo), float(hi), h, len(terms.dists), len(pmf), beta, err, shift, max(E_lo, E_up))


def _smooth_bracket(terms: LossTerms, omega: float, width: float) -> Bracket | None:
    """The histogram bracket of :mod:`.smooth` if it reaches ``width`` (two retries at finer steps)."""
    h, hist = smooth.plan_step(terms, omega, width)
    for _ in range(3):
        if h < smooth.GAIN * lattice_step(terms, width):  # not worth it: the lattice bracket is almost as coarse
            return None
        br = _smooth_at(terms, omega, h, hist)
        if br is None or not (math.isfinite(br.lo) and math.isfinite(br.hi)):
            return None
        if br.width <= width:
            return br
        h = smooth.quantised(h * smooth.AIM * width / br.width)
    return None


def _bracket(terms: LossTerms, omega: float, width: float) -> Bracket:
    """The computation behind :func:`quantile_bracket`."""
    n = len(terms.dists)
    if n == 0:
        return Bracket(terms.offset, terms.offset, 0.0, 0, 1, 0.0, 0.0)
    if n >= smooth.MIN_TERMS:
        br = _smooth_bracket(terms, omega, width)
        if br is not None:
            return br
    start, pmf, h, beta, err, slack = _lattice(terms, width)
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
        lo = float(terms.offset + (start + j_lo) * h - slack)
    return Bracket(lo, hi, h, n, len(pmf), beta, err, slack)


def floored_mean(terms: LossTerms, floor: float, width: float) -> float:
    """E[max(floor, l)] = E[l] + E[(floor - l)^+] (MODEL.md section 4, loss floor).

    E[l] is exact; the correction is computed on the lattice of :func:`quantile_bracket`
    (the same one for the same ``width``): with l <= Y^up < l + s (the slack), E[(floor - Y^up)^+]
    is below the true correction by less than s (about ``width``) plus the dropped tail mass
    times the span; it is 0 when the lattice never reaches below the floor.
    """
    n = len(terms.dists)
    if n == 0:
        return max(floor, terms.offset)
    start, pmf, h, _, _, _ = _lattice(terms, float(width))
    y = terms.offset + (start + np.arange(len(pmf))) * h
    below = y < floor
    return terms.mean + float(np.sum((floor - y[below]) * pmf[below]))


def violation_bracket(terms: LossTerms, target: float, width: float) -> tuple[float, float]:
    """Certified bracket of ``P(l > target)`` (the bounds of the quantile bracket, read at a point).

    With F the lattice CDF of the upper sum: ``F(x) - err <= P(l <= x) <= F(x + s) + beta + err``.
    """
    n = len(terms.dists)
    if n == 0:
        v = float(terms.offset > target)
        return v, v
    start, pmf, h, beta, err, slack = _lattice(terms, width)
    cdf = np.cumsum(pmf)
    err += len(cdf) * EPS  # summation round-off of the cumulative sum

    def F(x: float) -> float:
        j = math.floor((x - terms.offset) / h) - start  # last lattice point <= x
        return 0.0 if j < 0 else float(cdf[min(j, len(cdf) - 1)])

    lo = 1.0 - min(1.0, F(target + slack) + beta + err)
    hi = 1.0 - max(0.0, F(target) - err)
    return max(lo, 0.0), min(hi, 1.0)
