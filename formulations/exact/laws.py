"""Penalty laws for the ``exact`` bounds (docs/exact-proofs.md).

* :func:`min_law`: the law with CDF ``max_i F_i``, stochastically below every one of its laws
  (Lemma 3), with certified moment bounds.

The store of refuted relaxations is :mod:`deplbench.formulations.exact.labels`.
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.exact.knobs import MOMENT_CELLS
from deplbench.instances.laws.distributions import Dist, constant_dist


def _tighter_moments(sf, dists: list[Dist], mean: float, m2: float, cells: int = MOMENT_CELLS) -> tuple[float, float]:
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
