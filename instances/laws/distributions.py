"""Noise (improvement factor X) and switch-penalty distributions (MODEL.md section 4).

Each is a :class:`Dist` with vectorised ``cdf``/``sf`` (both, so that tail cells keep
their precision), ``ppf``/``isf``, ``sample`` and ``mean``, built from
``scipy.special`` functions for speed. Penalties are truncated (renormalised) to
[low, high].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np
from scipy import integrate, special

Array = np.ndarray


@dataclass(frozen=True)
class Dist:
    """A univariate distribution with the operations the evaluator and samplers need.

    ``lower``/``upper`` are hard support bounds (``-inf``/``inf`` when unbounded).
    A constant has ``value`` set and no density.
    """

    name: str
    cdf: Callable[[Array], Array]
    sf: Callable[[Array], Array]
    ppf: Callable[[Array], Array]
    isf: Callable[[Array], Array]
    mean: float
    var: float
    lower: float = -math.inf
    upper: float = math.inf
    median: float = 0.0
    value: float | None = None
    sampler: Callable | None = None  # fast native sampler (rng, size) -> draws, when there is one
    #: density (0 off the support) of a *unimodal* law whose supremum over R is ``peak``, reached
    #: at ``mode`` (the density increases left of it and decreases right of it; continuous but
    #: at the support's ends): the smooth
    #: certifier's per-term bound (docs/evaluator.md) needs all three; None when unknown
    pdf: Callable[[Array], Array] | None = None
    mode: float | None = None
    peak: float | None = None
    #: False for a law built for a few brackets whose CDF is cheap (the cover conditions' lifted
    #: laws): the lattice reads it at the points a term needs instead of tabulating its whole core
    #: (the same numbers, :func:`deplbench.instances.evaluator.lattice.read`)
    tabulate: bool = True

    def __hash__(self) -> int:
        # the certifier's caches key on laws, several lookups per term: the hash of every field
        # (closures included) is computed once, the same value as the dataclass's own
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    def sample(self, rng: np.random.Generator, size) -> Array:
        """Draws by inversion of a uniform (so common random numbers are possible)."""
        if self.is_constant:
            return np.full(size, self.value)
        if self.sampler is not None:
            return self.sampler(rng, size)
        return self.from_uniform(rng.random(size))

    def from_uniform(self, u: Array) -> Array:
        """Map uniforms in [0, 1) to draws; upper half through ``isf`` to keep precision."""
        if self.is_constant:
            return np.full(np.shape(u), self.value)
        u = np.asarray(u, dtype=float)
        out = np.empty_like(u)
        lo = u < 0.5
        out[lo] = self.ppf(np.maximum(u[lo], 1e-300))
        out[~lo] = self.isf(np.maximum(1.0 - u[~lo], 1e-300))
        return np.clip(out, self.lower, self.upper)

    def cell_masses(self, z: Array) -> tuple[Array, float, float]:
        """Masses of the cells between consecutive increasing points ``z``, and of both tails.

        Returns ``(P(z_i < Z <= z_{i+1}) for each i, P(Z <= z_0), P(Z > z_-1))``.
        Each point's CDF is computed once, through ``cdf`` left of the median and ``sf``
        right of it, so tail cells keep their relative precision.
        """
        z = np.asarray(z, dtype=float)
        if self.is_constant:
            F = (z >= self.value).astype(float)
            return np.diff(F), float(F[0]), float(1.0 - F[-1])
        i = int(np.searchsorted(z, self.median))
        F = self.cdf(z[:i])  # left part: P(Z <= z)
        S = self.sf(z[i:])  # right part: P(Z > z)
        if i == 0:
            cells = -np.diff(S)
        elif i == len(z):
            cells = np.diff(F)
        else:
            cells = np.concatenate((np.diff(F), [(1.0 - F[-1] - S[0])], -np.diff(S)))
        below = float(F[0]) if i > 0 else float(1.0 - S[0])
        above = float(S[-1]) if i < len(z) else float(1.0 - F[-1])
        return np.maximum(cells, 0.0), below, above


def constant_dist(v: float, name: str = "constant") -> Dist:
    """The law of a constant ``v`` (cdf a step, every quantile ``v``)."""
    f = lambda x: (np.asarray(x) >= v).astype(float)  # noqa: E731
    g = lambda x: (np.asarray(x) < v).astype(float)  # noqa: E731
    c = lambda q: np.full(np.shape(q), v)  # noqa: E731
    return Dist(name, f, g, c, c, v, 0.0, v, v, v, value=v)


def _base(family: str, df: float | None, loc: float, scale: float):
    """Standardised base cdf, sf, ppf of a penalty's untruncated law."""
    if family == "t":
        return (lambda z: special.stdtr(df, z), lambda z: special.stdtr(df, -z),
                lambda q: special.stdtrit(df, q))
    return special.ndtr, (lambda z: special.ndtr(-z)), special.ndtri


def penalty_base_mass(p) -> float:
    """Probability of [low, high] under the untruncated t or normal law of penalty ``p``."""
    cdf, sf, _ = _base(p.family, p.df, p.loc, p.scale)
    zl, zh = (p.low - p.loc) / p.scale, (p.high - p.loc) / p.scale
    if zl >= 0:
        return float(sf(zl) - sf(zh))
    return float(cdf(zh) - cdf(zl))


@lru_cache(maxsize=256)
def _penalty_dist(family: str, low: float, high: float, df, loc, scale, value) -> Dist:
    if family == "constant" or low == high:
        return constant_dist(value if family == "constant" else low, "constant")
    cdf0, sf0, ppf0 = _base(family, df, loc, scale)
    zl, zh = (low - loc) / scale, (high - loc) / scale
    Fl, Fh = float(cdf0(zl)), float(cdf0(zh))
    Sl, Sh = float(sf0(zl)), float(sf0(zh))
    right = zl >= 0  # whole window right of the centre: work with survival functions
    m = (Sl - Sh) if right else (Fh - Fl)

    def cdf(x):
        z = (np.clip(np.asarray(x, float), low, high) - loc) / scale
        return np.clip(((Sl - sf0(z)) if right else (cdf0(z) - Fl)) / m, 0.0, 1.0)

    def sf(x):
        z = (np.clip(np.asarray(x, float), low, high) - loc) / scale
        return np.clip(((sf0(z) - Sh) if right else (Fh - cdf0(z))) / m, 0.0, 1.0)

    def ppf(q):
        q = np.asarray(q, float)
        if right:
            z = -ppf0(np.clip(Sl - q * m, 1e-300, 1.0))  # sf^-1 of a symmetric law
        else:
            z = ppf0(np.clip(Fl + q * m, 1e-300, 1.0))
        return np.clip(loc + scale * z, low, high)

    def isf(q):
        return ppf(1.0 - np.asarray(q, float))

    # the scalar densities hoist their constants: ``a - b - c - d`` is ``((a - b) - c) - d``, so
    # ``lc - d`` with ``lc = a - b - c`` is the same float, at a third of the calls under ``quad``
    if family == "t":
        lc = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
        half = (df + 1) / 2
        vdens = lambda x: np.exp(lc - (df + 1) / 2 * np.log1p(((x - loc) / scale) ** 2 / df)) / scale  # noqa: E731
        dens = lambda x: math.exp(lc - half * math.log1p(((x - loc) / scale) ** 2 / df)) / scale  # noqa: E731
    else:
        norm = scale * math.sqrt(2 * math.pi)
        vdens = lambda x: np.exp(-0.5 * ((x - loc) / scale) ** 2) / (scale * math.sqrt(2 * math.pi))  # noqa: E731
        dens = lambda x: math.exp(-0.5 * ((x - loc) / scale) ** 2) / norm  # noqa: E731
    pts = [min(max(loc, low), high)]
    m1 = integrate.quad(lambda x: x * dens(x), low, high, points=pts, epsabs=1e-13, limit=200)[0] / m
    m2 = integrate.quad(lambda x: x * x * dens(x), low, high, points=pts, epsabs=1e-13, limit=200)[0] / m
    med = float(ppf(0.5))

    def pdf(x):  # the base density renormalised on [low, high] (both ends included), 0 outside
        x = np.asarray(x, float)
        inside = (x >= low) & (x <= high)
        return np.where(inside, vdens(np.clip(x, low, high)) / m, 0.0)

    mode = min(max(loc, low), high)  # base laws symmetric and unimodal about loc
    return Dist(f"truncated-{family}", cdf, sf, ppf, isf, m1, max(m2 - m1 * m1, 0.0), low, high, med,
                pdf=pdf, mode=mode, peak=float(pdf(mode)))


def penalty_dist(p) -> Dist:
    """The truncated penalty law of a :class:`~deplbench.instances.schema.Penalty`."""
    return _penalty_dist(p.family, p.low, p.high, p.df, p.loc, p.scale, p.value)
