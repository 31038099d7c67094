"""Term lattices of degenerate laws: point masses and laws far narrower than the lattice.

A point mass (a constant penalty) or a truncated law of a tiny window has a core of
(almost) zero width: ``term_pmf`` takes it either as one mass (a core within one lattice
step) or, scaled up by a large coefficient, through a table of a step CDF. Both must keep
the per-term inequalities of docs/evaluator.md at every lattice point, against the law's
exact CDF, and whole brackets must meet the plain construction's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.instances.evaluator import lattice, lattice_batch
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.evaluator.plain_quantile import plain_bracket
from deplbench.instances.evaluator.quantile import _bracket
from deplbench.instances.laws.distributions import _penalty_dist, constant_dist
from deplbench.instances.laws.noise import noise_dist

LAWS = {
    "point 0": constant_dist(0.0),
    "point 7.5": constant_dist(7.5),
    "point -3": constant_dist(-3.0),
    "point 1e3": constant_dist(1e3),
    "window 1e-9": _penalty_dist("normal", 1.0, 1.0 + 1e-9, None, 0.0, 1.0, None),
    "window 1e-7 in the tail": _penalty_dist("normal", 8.0, 8.0000001, None, 0.0, 1.0, None),
    "scale 1e-8": _penalty_dist("normal", 0.0, 1.0, None, 0.0, 1e-8, None),
}


def _le(dist, coef: float, x: np.ndarray) -> np.ndarray:
    """P(coef Z <= x), exactly (a point mass's step included)."""
    if dist.is_constant:
        return (coef * dist.value <= x).astype(float)
    return dist.cdf(x / coef) if coef > 0 else dist.sf(x / coef)


@pytest.mark.parametrize("name", list(LAWS))
@pytest.mark.parametrize("coef", [-1e3, -1.0, 0.37, 1.0, 1e3])
@pytest.mark.parametrize("h", [1e-4, 0.05])
def test_degenerate_term_lattice_bounds_the_term_cdf(name, coef, h):
    """G(x) <= P(T <= x), P(T <= x - s) <= G(x) + beta at every lattice point, and below/above it."""
    d = LAWS[name]
    lattice.clear_tables()
    j0, pmf, beta, err, s = lattice.term_pmf(d, coef, h)
    assert np.all(np.isfinite(pmf)) and np.all(pmf >= 0)
    assert math.isfinite(s) and s >= h and 0 <= beta < 1e-6
    assert pmf.sum() + beta == pytest.approx(1.0, abs=1e-9)
    x = (j0 + np.arange(len(pmf))) * h
    G = np.cumsum(pmf)
    # points between lattice points and beyond both ends read the last lattice point's G
    xs = np.concatenate((x, x + 0.5 * h, [x[0] - h, x[0] - 10 * h, x[-1] + 7 * h]))
    j = np.floor(np.round(xs / h, 6)).astype(np.int64) - j0
    Gx = np.where(j < 0, 0.0, G[np.clip(j, 0, len(G) - 1)])
    assert np.all(Gx <= _le(d, coef, xs) + err + 1e-13)
    assert np.all(_le(d, coef, xs - s) <= Gx + beta + err + 1e-13)


@pytest.mark.parametrize("name", list(LAWS))
def test_brackets_with_degenerate_terms_meet_the_plain_construction(name):
    """A degenerate term beside two noise factors: the bracket is finite and overlaps the plain one.

    The plain construction has no lattice for a point mass (its trimmed pmf is empty), so a
    constant is folded into the offset of its reference: the same loss, exactly.
    """
    z = noise_dist("gamma", 1.0, 0.05)
    d = LAWS[name]
    terms = LossTerms(3.0, (z, d, z), (-1.0, 1.0, -0.5))
    ref = LossTerms(3.0 + d.value, (z, z), (-1.0, -0.5)) if d.is_constant else terms
    lattice.clear_tables()
    lattice_batch.clear()  # the bracket builds the degenerate term in a batch
    for w in (1e-2, 1e-3):
        br = _bracket(terms, 0.95, w)
        lo, hi = plain_bracket(ref, 0.95, w)
        assert math.isfinite(br.lo) and math.isfinite(br.hi) and br.hi - br.lo <= 1.01 * w
        assert br.lo <= hi and lo <= br.hi
