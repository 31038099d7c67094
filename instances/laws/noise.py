"""The noise laws of the improvement factor X (MODEL.md section 4), one table keyed by family.

Every use of a law goes through :data:`NOISE_LAWS`: the evaluator's distribution (cdf, sf,
quantiles, sampling), the log-Laplace transform of DepL's surrogate (stage 2) and the scipy law
that calibration fits. Adding a law is one entry here (and its name in the schema's list).
All laws are parameterised by mean and variance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import special, stats

from deplbench.instances.laws.distributions import Dist, constant_dist

Array = np.ndarray
_GH_X, _GH_W = np.polynomial.hermite.hermgauss(80)
_GL_X, _GL_W = np.polynomial.legendre.leggauss(96)


@dataclass(frozen=True)
class NoiseLaw:
    """One family: its distribution, its log-Laplace transform and (if fittable) its scipy law."""

    name: str
    dist: Callable[[float, float], Dist]
    log_laplace: Callable[[Array, float, float], Array]  # log E exp(-s X), s >= 0
    scipy: Callable[[float, float], Any] | None = None  # frozen scipy law (calibration)
    scipy_family: Any = None  # scipy's unfrozen family (ML fit with loc 0)


def quadrature_log_laplace(dist: Dist, s: Array) -> Array:
    """log E exp(-s X) by Gauss-Legendre quadrature in the probability scale (any law)."""
    x = np.maximum(dist.from_uniform((_GL_X + 1) / 2), 0.0)
    return special.logsumexp(-np.outer(s, x), b=_GL_W / 2, axis=1)


def legendre_nodes() -> tuple[Array, Array]:
    """The Gauss-Legendre nodes and weights the transforms use (shared by penalty transforms)."""
    return _GL_X, _GL_W


# ---- inverse gamma: alpha = 2 + mean^2/var, beta = mean (alpha - 1) ------------------------------

def _ig_shape(mean: float, var: float) -> tuple[float, float]:
    a = 2.0 + mean * mean / var
    return a, mean * (a - 1.0)


def _ig_dist(mean: float, var: float) -> Dist:
    a, b = _ig_shape(mean, var)

    def cdf(x):
        x = np.asarray(x, dtype=float)
        return np.where(x > 0, special.gammaincc(a, b / np.where(x > 0, x, 1.0)), 0.0)

    def sf(x):
        x = np.asarray(x, dtype=float)
        return np.where(x > 0, special.gammainc(a, b / np.where(x > 0, x, 1.0)), 1.0)

    ppf = lambda q: b / special.gammainccinv(a, q)  # noqa: E731
    isf = lambda q: b / special.gammaincinv(a, q)  # noqa: E731
    samp = lambda rng, size: b / rng.standard_gamma(a, size)  # noqa: E731
    lc = a * math.log(b) - special.gammaln(a)

    def pdf(x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, x, 1.0)
        with np.errstate(over="ignore"):
            return np.where(x > 0, np.exp(lc - (a + 1) * np.log(y) - b / y), 0.0)

    mode = b / (a + 1)
    return Dist("invgamma", cdf, sf, ppf, isf, mean, var, 0.0, math.inf, float(ppf(0.5)), sampler=samp,
                pdf=pdf, mode=mode, peak=float(pdf(mode)))


def _ig_log_laplace(s: Array, mean: float, var: float) -> Array:
    # E e^{-sX} = 2 (b s)^{a/2} K_a(2 sqrt(b s)) / Gamma(a)
    a, b = _ig_shape(mean, var)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # near-constant laws: b s overflows
        z = 2.0 * np.sqrt(b * np.maximum(s, 1e-300))
        out = (math.log(2.0) + 0.5 * a * np.log(b * np.maximum(s, 1e-300)) + np.log(special.kve(a, z)) - z
               - special.gammaln(a))
    bad = ~np.isfinite(out)
    if np.any(bad):  # Bessel overflow for tiny arguments: integrate numerically instead
        out[bad] = quadrature_log_laplace(_ig_dist(mean, var), s[bad])
    return np.where(s > 0, out, 0.0)


def _ig_scipy(mean: float, var: float):
    a, b = _ig_shape(mean, var)
    return stats.invgamma(a, scale=b)


# ---- gamma: shape = mean^2/var, scale = var/mean ----------------------------------------------------

def _gamma_dist(mean: float, var: float) -> Dist:
    k, th = mean * mean / var, var / mean
    cdf = lambda x: special.gammainc(k, np.maximum(np.asarray(x, float), 0.0) / th)  # noqa: E731
    sf = lambda x: special.gammaincc(k, np.maximum(np.asarray(x, float), 0.0) / th)  # noqa: E731
    ppf = lambda q: th * special.gammaincinv(k, q)  # noqa: E731
    isf = lambda q: th * special.gammainccinv(k, q)  # noqa: E731
    samp = lambda rng, size: th * rng.standard_gamma(k, size)  # noqa: E731
    lc = -special.gammaln(k) - k * math.log(th)

    def pdf(x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, x, 1.0)
        with np.errstate(over="ignore"):
            return np.where(x > 0, np.exp(lc + (k - 1) * np.log(y) - y / th), 0.0)

    # shape < 1: unbounded at 0; shape 1: 1/th at 0+ (the supremum, not the value pdf(0) = 0)
    mode = (k - 1) * th if k > 1 else 0.0
    peak = float(pdf(mode)) if k > 1 else (1 / th if k == 1 else math.inf)
    return Dist("gamma", cdf, sf, ppf, isf, mean, var, 0.0, math.inf, float(ppf(0.5)), sampler=samp,
                pdf=pdf, mode=mode, peak=peak)


def _gamma_log_laplace(s: Array, mean: float, var: float) -> Array:
    return -(mean * mean / var) * np.log1p(s * var / mean)


# ---- lognormal: s^2 = ln(1 + var/mean^2), mu = ln(mean) - s^2/2 --------------------------------------

def _ln_shape(mean: float, var: float) -> tuple[float, float]:
    s = math.sqrt(math.log1p(var / (mean * mean)))
    return math.log(mean) - s * s / 2, s


def _ln_dist(mean: float, var: float) -> Dist:
    mu, s = _ln_shape(mean, var)

    def z(x):
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            return (np.log(np.maximum(x, 0.0)) - mu) / s

    cdf = lambda x: special.ndtr(z(x))  # noqa: E731
    sf = lambda x: special.ndtr(-z(x))  # noqa: E731
    ppf = lambda q: np.exp(mu + s * special.ndtri(q))  # noqa: E731
    isf = lambda q: np.exp(mu - s * special.ndtri(q))  # noqa: E731
    samp = lambda rng, size: rng.lognormal(mu, s, size)  # noqa: E731
    lc = -math.log(s * math.sqrt(2 * math.pi))

    def pdf(x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, x, 1.0)
        return np.where(x > 0, np.exp(lc - np.log(y) - 0.5 * ((np.log(y) - mu) / s) ** 2), 0.0)

    mode = math.exp(mu - s * s)
    return Dist("lognormal", cdf, sf, ppf, isf, mean, var, 0.0, math.inf, math.exp(mu), sampler=samp,
                pdf=pdf, mode=mode, peak=float(pdf(mode)))


def _ln_log_laplace(s: Array, mean: float, var: float) -> Array:
    mu, sig = _ln_shape(mean, var)  # Gauss-Hermite in the log scale
    x = np.exp(mu + sig * math.sqrt(2.0) * _GH_X)
    return special.logsumexp(-np.outer(s, x), b=_GH_W / math.sqrt(math.pi), axis=1).reshape(np.shape(s))


def _ln_scipy(mean: float, var: float):
    mu, s = _ln_shape(mean, var)
    return stats.lognorm(s, scale=math.exp(mu))


# ---- normal and constant ---------------------------------------------------------------------------

def _normal_dist(mean: float, var: float) -> Dist:
    sd = math.sqrt(var)
    cdf = lambda x: special.ndtr((np.asarray(x, float) - mean) / sd)  # noqa: E731
    sf = lambda x: special.ndtr((mean - np.asarray(x, float)) / sd)  # noqa: E731
    ppf = lambda q: mean + sd * special.ndtri(q)  # noqa: E731
    isf = lambda q: mean - sd * special.ndtri(q)  # noqa: E731
    samp = lambda rng, size: rng.normal(mean, sd, size)  # noqa: E731
    pdf = lambda x: np.exp(-0.5 * ((np.asarray(x, float) - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))  # noqa: E731
    return Dist("normal", cdf, sf, ppf, isf, mean, var, -math.inf, math.inf, mean, sampler=samp,
                pdf=pdf, mode=mean, peak=float(pdf(mean)))


NOISE_LAWS: dict[str, NoiseLaw] = {
    "invgamma": NoiseLaw("invgamma", _ig_dist, _ig_log_laplace, _ig_scipy, stats.invgamma),
    "gamma": NoiseLaw("gamma", _gamma_dist, _gamma_log_laplace,
                      lambda m, v: stats.gamma(m * m / v, scale=v / m), stats.gamma),
    "lognormal": NoiseLaw("lognormal", _ln_dist, _ln_log_laplace, _ln_scipy, stats.lognorm),
    "normal": NoiseLaw("normal", _normal_dist, lambda s, m, v: -s * m + 0.5 * s * s * v),
    "constant": NoiseLaw("constant", lambda m, v: constant_dist(m), lambda s, m, v: -s * m),
}
#: the laws calibration can fit (positive support, a scipy family with loc 0)
FITTABLE = tuple(n for n, law in NOISE_LAWS.items() if law.scipy_family is not None)


def law(family: str, var: float | None = None) -> NoiseLaw:
    """The law of ``family``; a zero (or absent) variance is the constant law whatever the family."""
    if not var:
        return NOISE_LAWS["constant"]
    try:
        return NOISE_LAWS[family]
    except KeyError:
        raise ValueError(f"unknown noise family {family!r}") from None


@lru_cache(maxsize=256)
def noise_dist(family: str, mean: float, var: float | None) -> Dist:
    """The improvement-factor distribution parameterised by mean and variance (one table: :data:`NOISE_LAWS`)."""
    return law(family, var).dist(mean, var or 0.0)


def model_noise(model) -> Dist:
    """The improvement-factor law of a :class:`~deplbench.instances.schema.Model`."""
    n = model.noise
    return noise_dist(n.family, n.mean, n.var)
