"""Stage 2 loss surrogate for ``per_run`` noise: exact single-model quantiles plus a switch bonus.

In ``per_run`` mode the loss is ``l0 - sum_m C_m X_m + penalties`` with one factor X_m
per model (C_m = g times the sum of a_m(k) over the epochs of model m). The quantile
gain h(C) = l0 - q_omega(l) is (up to the penalties) homogeneous of degree 1 and
about concave in C, so no additive per-epoch gain represents it: a linear gain at a
fixed direction over-values one-model plans, the per-model quantiles x_m(1 - omega)
under-value mixtures (they ignore diversification).

:func:`frontier_surrogate` keeps the per-epoch gains ``g a_m(k) x_m(1 - omega)``, exact
for a plan that uses one model, and adds a *switch gain* to the first switch a -> b out
of a model that no switch enters (so its run starts at epoch 1 and C_a is known from
the switch epoch k alone): with ``C_b*(k)`` the contribution of b that the mixture
needs to reach the requirement R (solved on the profile phi(lambda) = lower (1 - omega)
quantile of ``lambda X_a + (1 - lambda) X_b`` by homogeneity), the bonus

    bonus(a, b, k) = R + E[P_ab] - x_a C_a(k) - x_b C_b*(k)   (>= 0 by concavity)

makes the path's additive gain reach R exactly when C_b >= C_b*(k): the surrogate
target is met exactly on the quantile frontier of two-model plans (penalty at its
mean). Further switches keep their plain penalty (the gains of later models are
their single-model quantiles, a conservative value). This goes beyond the paper's
CGF surrogate; it is used by the ``depl-plus`` variant only. Every plan is still
certified by the evaluator.
"""

from __future__ import annotations

import numpy as np

from deplbench.heuristics.models.selection import Surrogate, _coefficients, _penalties
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.evaluator.plain_quantile import plain_bracket
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import model_noise

LAMBDAS = np.array([0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7,
                    0.75, 0.8, 0.85, 0.9, 0.95])  # mixture weights of the first model (1.0 = the corner)
PROFILE_RTOL = 1e-3  # bracket width of the profile, relative to the factors' scale


def corner_quantiles(instance) -> np.ndarray:
    """x_m(1 - omega): the lower quantile of every model's factor (>= 0)."""
    delta = 1 - instance.loss.quantile
    return np.array([max(float(model_noise(m).ppf(np.array(delta))), 0.0) for m in instance.models])


def mix_profile(instance, a: int, b: int, corner_a: float) -> tuple[np.ndarray, np.ndarray]:
    """(lambda, phi(lambda)): lower (1 - omega) quantile of lambda X_a + (1 - lambda) X_b, lambda in (0, 1]."""
    da, db = model_noise(instance.models[a]), model_noise(instance.models[b])
    scale = max(da.mean, db.mean)
    phi = []
    for lam in LAMBDAS:
        # an estimate (not a certificate): the plain bracket keeps DepL's plans as they were
        lo, hi = plain_bracket(LossTerms(0.0, (da, db), (-float(lam), -(1.0 - float(lam)))),
                               instance.loss.quantile, PROFILE_RTOL * scale)
        phi.append(-0.5 * (lo + hi))  # quantile of the loss -S is minus the lower quantile of S
    return np.append(LAMBDAS, 1.0), np.append(phi, corner_a)


def _bonus(lam: np.ndarray, phi: np.ndarray, Ca: np.ndarray, need: float, xa: float, xb: float) -> np.ndarray:
    """Switch bonus for the contributions ``Ca`` of the first model (vectorised over switch epochs)."""
    fine = np.linspace(lam[0], 1.0, 2000)
    psi = np.interp(fine, lam, phi) / fine  # h(1, (1 - l)/l): decreasing in l
    psi = np.minimum.accumulate(psi)
    out = np.zeros_like(Ca)
    pos = Ca > 0
    r = np.full_like(Ca, np.inf)
    r[pos] = need / Ca[pos]
    mix = pos & (r > psi[-1])  # the first run alone does not reach the requirement
    lam_star = np.interp(r[mix], psi[::-1], fine[::-1])  # psi(lam*) = need / Ca (clipped to the grid)
    cb = Ca[mix] * (1.0 - lam_star) / lam_star
    out[mix] = np.maximum(need - xa * Ca[mix] - xb * cb, 0.0)
    return out


def frontier_surrogate(instance, g: float) -> Surrogate:
    """Single-model quantile gains plus the first-switch bonus (see the module docstring)."""
    coef = _coefficients(instance, g)
    M, K = coef.shape
    x = corner_quantiles(instance)
    pen = _penalties(instance, lambda p: penalty_dist(p).mean)
    R = instance.loss.initial - instance.loss.target
    ids = instance.model_ids
    entered = {ids.index(sw.to) for sw in instance.switches if sw.to != sw.from_}
    bonus = np.zeros((M, M, K))
    Ca_before = np.concatenate(([[0.0]] * M, np.cumsum(coef, axis=1)[:, :-1]), axis=1)  # C_a of epochs < k
    for a in range(M):
        if a in entered:
            continue
        for b in range(M):
            if b == a or not np.isfinite(pen[a, b]):
                continue
            lam, phi = mix_profile(instance, a, b, x[a])
            bonus[a, b] = _bonus(lam, phi, Ca_before[a], R + pen[a, b], x[a], x[b])
    gain = coef * x[:, None]
    return Surrogate("frontier", gain, pen, R, False, bonus)
