"""The plain certified bracket of the first evaluator, kept for instance generation.

Generated instances derive their loss target from a certified quantile of a reference
plan (``random`` and the families built on it, ``calibrated``). The evaluator's bracket
has since become faster (:mod:`deplbench.instances.evaluator.lattice`: tabulated CDFs, lumped tails)
and its figures moved within the bracket width; generating with that bracket would change
every generated instance. This module keeps the plain construction bit for bit (one CDF
call per lattice point, slack ``h`` per term, ``h = width / (n + 1)``, tails dropped), so
generated instances stay identical. It is as rigorous as the evaluator's bracket (the same
proof, docs/evaluator.md, with ``d = 0``), and the tests compare the two.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import signal

from deplbench.instances.evaluator.lattice import merge_smallest
from deplbench.instances.evaluator.loss import LossTerms, loss_terms
from deplbench.instances.semantics import data_effect
from deplbench.numeric import SHORT, convolve

EPS = np.finfo(float).eps
TAIL = 1e-10  # mass dropped in each tail of each term
TRIM = 1e-16  # mass dropped in each tail after each convolution
MAX_POINTS = 1 << 21  # lattice points per term, at most
DEFAULT_RTOL = 5e-4  # the evaluator's default width, relative to loss.initial


@lru_cache(maxsize=256)
def _core(dist) -> tuple[float, float]:
    return max(dist.lower, float(dist.ppf(TAIL))), min(dist.upper, float(dist.isf(TAIL)))


def _term_pmf(dist, coef: float, h: float) -> tuple[int, np.ndarray, float]:
    """Lattice pmf of coef * Z rounded up to multiples of h: (start index, masses, dropped mass)."""
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
    return j0, np.concatenate(([0.0], cells)), below + above


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
    if min(len(a), len(b)) <= SHORT:  # direct, BLAS-free: the same bits on every CPU
        out = convolve(a, b)
        err = min(len(a), len(b)) * 2 * EPS * a.sum() * b.sum() * 1.01
    else:
        out = signal.fftconvolve(a, b)
        gamma = 5 * math.ceil(math.log2(n)) * EPS
        err = math.sqrt(n) * (3 * gamma + EPS) + n * EPS
    np.maximum(out, 0.0, out=out)
    return out, err


@lru_cache(maxsize=1024)
def plain_step(terms: LossTerms, width: float) -> float:
    """The lattice step of :func:`plain_bracket` (``terms`` has at least one term)."""
    spans = [abs(c) * (_core(d)[1] - _core(d)[0]) for d, c in zip(terms.dists, terms.coefs, strict=True)]
    return max(width / (len(terms.dists) + 1), max(spans) / MAX_POINTS)


def plain_bracket(terms: LossTerms, omega: float, width: float) -> tuple[float, float]:
    """Certified bracket ``(lo, hi)`` of the omega-quantile of ``terms`` (the plain construction, memoised)."""
    n = len(terms.dists)
    if n == 0:
        return terms.offset, terms.offset
    h = plain_step(terms, width)
    beta = err = 0.0
    pmfs = []
    for d, c in zip(terms.dists, terms.coefs, strict=True):
        j0, pmf, dropped = _term_pmf(d, c, h)
        beta += dropped
        err += 4 * EPS * len(pmf)
        pmfs.append((j0, pmf))

    def combine(sa, a, sb, b):
        out, e = _convolve(a, b)
        start, out, dropped = _trim(sa + sb, out)
        return start, out, dropped, (e,)

    start, pmf, beta, err = merge_smallest(pmfs, combine, beta, err)
    cdf = np.cumsum(pmf)
    err += len(cdf) * EPS
    j_hi = int(np.searchsorted(cdf, omega + err, side="left"))
    hi = terms.offset + (start + j_hi) * h if j_hi < len(cdf) else math.inf
    need = omega - beta - err
    if need <= 0:
        return -math.inf, hi
    j_lo = min(int(np.searchsorted(cdf, need, side="left")), len(cdf) - 1)
    return terms.offset + (start + j_lo - n) * h, hi


def plain_hi(instance, plan, rtol: float = DEFAULT_RTOL) -> float:
    """Certified upper end of the plan's loss quantile at width ``rtol * loss.initial`` (plain construction)."""
    terms = loss_terms(instance, plan.models(), data_effect(instance, plan.datasets).g)
    return plain_bracket(terms, instance.loss.quantile, rtol * instance.loss.initial)[1]
