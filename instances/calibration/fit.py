"""Distribution fits for calibration: improvement-factor families and truncated-t penalties.

Noise families are fitted by maximum likelihood in MODEL.md's (mean, var)
parameterisation, so every fit can be written into an instance as it is (an
inverse gamma there has shape ``2 + mean^2/var > 2``, i.e. a finite variance).

Goodness of fit is reported twice: the naive Kolmogorov-Smirnov p-value against the
fitted law (too large, because the parameters were fitted on the same data: MODEL.md
section 7 item 6) and a parametric-bootstrap p-value (the KS statistic is recomputed
after refitting on samples drawn from the fitted law). Noise families use
:func:`scipy.stats.goodness_of_fit` (location fixed at 0); the truncated t, which
scipy does not provide, uses :func:`bootstrap_ks`, the same algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize, special, stats

from deplbench.instances.laws.noise import FITTABLE, NOISE_LAWS

NOISE_FAMILIES = FITTABLE
DF_BOUNDS = (0.5, 200.0)  # the truncated t's degrees of freedom are kept in this range
# an inverse gamma's shape is kept >= 2 + 1e-3 (var <= 1000 mean^2): heavy-tailed data
# would otherwise push it to 2, where the variance MODEL.md needs does not exist
MIN_LOG_EXCESS = math.log(1e-3)


def noise_frozen(family: str, mean: float, var: float):
    """The scipy law of ``family`` with MODEL.md's mean/variance parameterisation (instances.noise_laws)."""
    return NOISE_LAWS[family].scipy(mean, var)


def _mean_var(family: str, params) -> tuple[float, float]:
    """(mean, var) of a scipy fit with loc 0 (inf when the variance does not exist)."""
    d = NOISE_LAWS[family].scipy_family(*params[:-2], scale=params[-1])
    m, v = d.stats("mv")
    return float(m), float(v)


def fit_noise_ml(x: np.ndarray, family: str) -> tuple[float, float, float]:
    """Maximum-likelihood (mean, var, loglik) of ``family`` on positive data ``x``."""
    x = np.asarray(x, float)
    if family == "invgamma":
        # scipy's unconstrained fit may have shape <= 2 (no variance): optimise within a > 2
        m0, v0 = float(np.mean(x)), float(np.var(x)) or 1e-12

        def nll(th):
            a = 2.0 + math.exp(max(th[0], MIN_LOG_EXCESS))
            return -float(np.sum(stats.invgamma.logpdf(x, a, scale=math.exp(th[1]))))

        a0 = 2.0 + m0 * m0 / v0
        res = optimize.minimize(nll, [math.log(a0 - 2.0), math.log(m0 * (a0 - 1.0))],
                                method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10,
                                                               "maxiter": 4000})
        a, b = 2.0 + math.exp(max(res.x[0], MIN_LOG_EXCESS)), math.exp(res.x[1])
        mean, var = b / (a - 1.0), (b / (a - 1.0)) ** 2 / (a - 2.0)
    else:
        params = NOISE_LAWS[family].scipy_family.fit(x, floc=0)
        mean, var = _mean_var(family, params)
    ll = float(np.sum(noise_frozen(family, mean, var).logpdf(x)))
    return mean, var, ll


@dataclass(frozen=True)
class NoiseFit:
    """One family fitted to one sample of improvement factors."""

    family: str
    n: int
    mean: float
    var: float
    loglik: float
    ks_p: float  # naive: parameters fitted on the same data
    bootstrap_p: float | None  # parametric bootstrap (None when not computed)

    def to_dict(self) -> dict:
        return asdict(self)


def fit_noise(x: np.ndarray, family: str, n_mc: int = 0, seed: int = 0) -> NoiseFit:
    """Fit ``family`` to positive ``x`` and test it (bootstrap only when ``n_mc > 0``)."""
    x = np.asarray(x, float)
    mean, var, ll = fit_noise_ml(x, family)
    ks_p = float(stats.kstest(x, noise_frozen(family, mean, var).cdf).pvalue)
    boot = None
    if n_mc > 0:
        res = stats.goodness_of_fit(NOISE_LAWS[family].scipy_family, x, known_params={"loc": 0.0}, statistic="ks",
                                    n_mc_samples=n_mc, rng=np.random.default_rng(seed))
        boot = float(res.pvalue)
    return NoiseFit(family, len(x), mean, var, ll, ks_p, boot)


def fit_all_families(x: np.ndarray, n_mc: int = 0, seed: int = 0) -> dict[str, NoiseFit]:
    """Every family of :data:`NOISE_FAMILIES` fitted to ``x``; the best has the largest loglik."""
    return {f: fit_noise(x, f, n_mc, seed + i) for i, f in enumerate(NOISE_FAMILIES)}


def best_family(fits: dict[str, NoiseFit]) -> str:
    """The family with the largest likelihood (all have two parameters, so AIC agrees)."""
    return max(fits.values(), key=lambda f: f.loglik).family


# ---- truncated Student t (switch penalties) ----------------------------------------------------

def _t_logpdf(z: np.ndarray, df: float) -> np.ndarray:
    return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2 * np.log1p(z * z / df))


def _t_mass(df: float, loc: float, scale: float, low: float, high: float) -> float:
    zl, zh = (low - loc) / scale, (high - loc) / scale
    if zl >= 0:  # right of the centre: survival functions keep the precision
        return float(special.stdtr(df, -zl) - special.stdtr(df, -zh))
    return float(special.stdtr(df, zh) - special.stdtr(df, zl))


def truncated_t_cdf(x, df: float, loc: float, scale: float, low: float, high: float) -> np.ndarray:
    """CDF of a t(df, loc, scale) truncated (renormalised) to [low, high]."""
    z = (np.clip(np.asarray(x, float), low, high) - loc) / scale
    fl = special.stdtr(df, (low - loc) / scale)
    return np.clip((special.stdtr(df, z) - fl) / _t_mass(df, loc, scale, low, high), 0.0, 1.0)


def truncated_t_sample(rng: np.random.Generator, n: int, df: float, loc: float, scale: float,
                       low: float, high: float) -> np.ndarray:
    """Draws by inversion of the truncated CDF."""
    fl = special.stdtr(df, (low - loc) / scale)
    fh = special.stdtr(df, (high - loc) / scale)
    u = fl + rng.random(n) * (fh - fl)
    return np.clip(loc + scale * special.stdtrit(df, np.clip(u, 1e-300, 1 - 1e-16)), low, high)


def fit_truncated_t(x: np.ndarray, low: float, high: float,
                    df: float | None = None) -> tuple[float, float, float, float]:
    """Maximum-likelihood (df, loc, scale, loglik) of a t truncated to [low, high].

    ``df`` fixes the degrees of freedom; otherwise it is fitted within :data:`DF_BOUNDS`.
    """
    x = np.asarray(x, float)
    n = len(x)
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med))) * 1.4826 or float(np.std(x)) or 1e-3

    def unpack(th):
        d = df if df is not None else float(np.clip(math.exp(th[2]), *DF_BOUNDS))
        return d, th[0], math.exp(th[1])

    def nll(th):
        d, loc, scale = unpack(th)
        mass = _t_mass(d, loc, scale, low, high)
        if not mass > 1e-300 or not math.isfinite(scale):
            return math.inf
        return -(float(np.sum(_t_logpdf((x - loc) / scale, d))) - n * math.log(scale) - n * math.log(mass))

    best = None
    for d0 in ([df] if df is not None else [2.0, 5.0, 30.0]):  # df is weakly identified: restarts
        th0 = [med, math.log(mad)] + ([] if df is not None else [math.log(d0)])
        res = optimize.minimize(nll, th0, method="Nelder-Mead",
                                options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 3000})
        if best is None or res.fun < best.fun:
            best = res
    d, loc, scale = unpack(best.x)
    return d, float(loc), float(scale), -float(best.fun)


def bootstrap_ks(x: np.ndarray, fit: Callable[[np.ndarray], tuple],
                 cdf: Callable[[np.ndarray, tuple], np.ndarray],
                 sample: Callable[[np.random.Generator, int, tuple], np.ndarray],
                 n_mc: int, seed: int = 0) -> tuple[float, float]:
    """Naive and parametric-bootstrap KS p-values of a fitted family.

    The algorithm of :func:`scipy.stats.goodness_of_fit`: fit ``x``, compute the KS
    statistic, then refit and recompute it on ``n_mc`` samples drawn from the fit;
    the p-value is ``(1 + #{D_i >= D}) / (n_mc + 1)``.
    """
    x = np.asarray(x, float)
    theta = fit(x)
    ks = stats.kstest(x, lambda v: cdf(v, theta))
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_mc):
        y = sample(rng, len(x), theta)
        th = fit(y)
        hits += stats.kstest(y, lambda v, th=th: cdf(v, th)).statistic >= ks.statistic
    return float(ks.pvalue), (1 + hits) / (n_mc + 1)


def penalty_gof(x: np.ndarray, low: float, high: float, n_mc: int, seed: int = 0,
                df: float | None = None) -> tuple[float, float | None]:
    """Naive KS and bootstrap p-values of a truncated t fitted to penalties ``x``."""
    def fit(v):
        return fit_truncated_t(v, low, high, df)[:3]

    def cdf(v, th):
        return truncated_t_cdf(v, *th, low, high)

    def sample(rng, n, th):
        return truncated_t_sample(rng, n, *th, low, high)

    if n_mc <= 0:
        return float(stats.kstest(x, lambda v: cdf(v, fit(np.asarray(x)))).pvalue), None
    return bootstrap_ks(x, fit, cdf, sample, n_mc, seed)
