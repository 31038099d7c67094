"""DepL stage 2: model selection as a cheapest path on the expanded graph.

Vertices are (model, epoch k, time bucket i of T_max/eta, loss bucket j of R/eta);
an edge from epoch k-1 to k stays on the model or takes an allowed switch, and runs
the epoch on one (cluster, level) option (its cost and time; Pareto options only).
The graph is layered by epoch, so the cheapest paths are one vectorised dynamic
program over numpy arrays ``S_k[m, i, j]`` (least cost), O(|M|^2 K eta^2) in all
(MODEL.md section 7 item 3).

The loss resource must be additive along a path. A :class:`Surrogate` gives, for
each (model, epoch), a *gain* (loss decrease) and, for each switch, a *penalty*,
plus a *requirement*: a path whose gains minus penalties reach it meets the
surrogate target. Surrogates:

* :func:`cgf_surrogate` - the log-Laplace transform (CGF) at a fixed argument t:
  gain = -(1/t) log E exp(-t g a X), penalty = (1/t) log E exp(t P), requirement
  l0 - target + ln(1/(1 - omega))/t. This is the Chernoff bound on the quantile;
  additive, and valid when the epochs' factors are independent (``per_epoch``).
* :func:`quantile_surrogate` - ``per_run`` mode: gain = g a x_m(delta) with the
  delta = (1 - omega)/|M| quantile of each model's factor and the penalty's upper
  bound ``high`` (valid by a union bound over the models).
* :func:`mean_surrogate` - the expected loss (exactly additive; the ``best-exp`` baseline).

Resources are rounded conservatively: times up, gains down, penalties up. One DP
serves every requirement up to ``cap * R`` (bucket j keeps the least cost of paths
whose rounded gain reaches j), which the orchestrator bisects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deplbench.heuristics.models.graph import ExpandedGraph
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import law, legendre_nodes, model_noise
from deplbench.instances.semantics import progress_matrix

_GL_X, _GL_W = legendre_nodes()


@dataclass(frozen=True)
class Surrogate:
    """An additive loss resource: path gains minus penalties must reach ``requirement``."""

    name: str
    gain: np.ndarray  # (M, max_epochs): loss decrease of model m at epoch k (column k-1)
    penalty: np.ndarray  # (M, M): loss increase of switch a -> b (0 on the diagonal, inf if forbidden)
    requirement: float
    valid: bool  # whether meeting the requirement proves the quantile constraint
    switch_gain: np.ndarray | None = None  # (M, M, max_epochs): extra gain of switch a -> b into epoch k


def noise_log_laplace(noise, s: np.ndarray) -> np.ndarray:
    """log E exp(-s X) for s >= 0, X the improvement factor of a model's ``noise`` (instances.noise_laws)."""
    s = np.asarray(s, dtype=float)
    return law(noise.family, noise.var).log_laplace(s, noise.mean, noise.var or 0.0)


def penalty_log_mgf(penalty, t: float) -> float:
    """log E exp(t P) of a truncated penalty (bounded support, so it exists for every t)."""
    d = penalty_dist(penalty)
    if d.is_constant:
        return t * d.value
    lo, hi = d.lower, d.upper
    x = lo + (hi - lo) * (_GL_X + 1) / 2
    # E e^{t(P - hi)} = e^{-t(hi - lo)} + int_lo^hi t e^{t(x - hi)} P(P > x) dx
    integral = float(np.sum(_GL_W * t * np.exp(t * (x - hi)) * d.sf(x))) * (hi - lo) / 2
    return t * hi + math.log(math.exp(-t * (hi - lo)) + integral)


def _coefficients(instance, g: float) -> np.ndarray:
    """g a_m(k) for every model (rows) and epoch k = 1..max_epochs (columns)."""
    return progress_matrix(instance, g)


def _penalties(instance, value) -> np.ndarray:
    ids = instance.model_ids
    out = np.full((len(ids), len(ids)), np.inf)
    np.fill_diagonal(out, 0.0)
    for sw in instance.switches:
        out[ids.index(sw.from_), ids.index(sw.to)] = value(sw.penalty)
    return out


def cgf_surrogate(instance, g: float, t: float) -> Surrogate:
    """Chernoff surrogate at argument ``t`` (valid in ``per_epoch`` mode)."""
    coef = _coefficients(instance, g)
    gain = np.array([-noise_log_laplace(m.noise, t * c) / t for m, c in zip(instance.models, coef, strict=True)])
    pen = _penalties(instance, lambda p: penalty_log_mgf(p, t) / t)
    req = instance.loss.initial - instance.loss.target + math.log(1 / (1 - instance.loss.quantile)) / t
    return Surrogate(f"cgf(t={t:.3g})", gain, pen, req, instance.noise_mode == "per_epoch")


def mean_surrogate(instance, g: float) -> Surrogate:
    """Expected loss: gain g a E[X], penalty E[P], requirement l0 - target."""
    coef = _coefficients(instance, g)
    gain = np.array([c * m.noise.mean for m, c in zip(instance.models, coef, strict=True)])
    pen = _penalties(instance, lambda p: penalty_dist(p).mean)
    return Surrogate("mean", gain, pen, instance.loss.initial - instance.loss.target, False)


def quantile_surrogate(instance, g: float, delta: float | None = None, penalty: str = "high") -> Surrogate:
    """Per-model quantiles: gain g a x_m(delta), penalty ``high`` (or the mean).

    The default ``delta = (1 - omega)/|M|`` with ``high`` is valid in both modes (a
    union bound over the models; penalties are bounded). ``delta = 1 - omega`` is
    exact for a ``per_run`` plan with one model, and a heuristic for mixtures.
    """
    coef = _coefficients(instance, g)
    valid = delta is None and penalty == "high"
    delta = (1 - instance.loss.quantile) / len(instance.models) if delta is None else delta
    xq = [max(float(model_noise(m).ppf(np.array(delta))), 0.0) for m in instance.models]
    gain = coef * np.array(xq)[:, None]
    pen = _penalties(instance, lambda p: penalty_dist(p).upper if penalty == "high" else penalty_dist(p).mean)
    return Surrogate(f"quantile(delta={delta:.3g},{penalty})", gain, pen,
                     instance.loss.initial - instance.loss.target, valid)


def chernoff_arguments(instance, g: float, factors: Sequence[float] = (0.5, 1.0, 2.0)) -> list[float]:
    """Arguments t around the one minimising the Chernoff bound of a reference plan.

    The reference is the model with the largest expected gain alone, for the epochs
    its expected loss needs to reach the target (at most ``max_epochs``).
    """
    coef = _coefficients(instance, g)
    means = np.array([m.noise.mean for m in instance.models])
    r = int(np.argmax(coef[:, 0] * means))
    need = instance.loss.initial - instance.loss.target
    K = min(int(np.searchsorted(np.cumsum(coef[r] * means[r]), need)) + 1, instance.max_epochs)
    sd = math.sqrt(max(float(np.sum(coef[r, :K] ** 2)) * (instance.models[r].noise.var or 0.0), 1e-12))
    log_w = math.log(1 / (1 - instance.loss.quantile))
    ts = np.geomspace(0.02, 50.0, 81) * math.sqrt(2 * log_w) / sd
    noise = instance.models[r].noise
    # every argument at once: the transform is elementwise and each row sums like its own 1-D array
    lap = noise_log_laplace(noise, ts[:, None] * coef[r, :K][None, :])
    bounds = [-row.sum() / t - log_w / t for row, t in zip(lap, ts, strict=True)]
    t_star = float(ts[int(np.argmax(bounds))])  # largest guaranteed gain minus slack
    return [t_star * f for f in factors]


__all__ = ["ExpandedGraph", "Surrogate", "cgf_surrogate", "chernoff_arguments", "mean_surrogate",
           "quantile_surrogate"]
