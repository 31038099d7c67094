"""Seeded joint scenarios for the SAA formulations (MODEL.md section 5).

A :class:`Scenarios` sample holds, for every scenario s, everything any plan needs:

* ``x[s, m, k-1]``: the improvement factor of model m at epoch k. In ``per_epoch``
  mode the factors of different epochs are independent and, within an epoch, the
  models share one uniform (common random numbers: a plan uses one model per
  epoch, so this is exact for every plan and makes plans comparable). In
  ``per_run`` mode ``x[s, m, :]`` is one draw per model, independent across models.
* ``penalty[s, p, k-1]``: the penalty of switch ``instance.switches[p]`` if it
  happens at epoch k (a fresh draw per occurrence; switches share one uniform per
  epoch, as only one can happen at epoch k).

The loss of a plan in scenario s is
``l0 - sum_k g a_{m_k}(k) x[s, m_k, k-1] + sum_{switch at k} penalty[s, p, k-1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import model_noise
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, progress


@dataclass(frozen=True)
class Scenarios:
    seed: int
    x: np.ndarray  # (S, M, max_epochs)
    penalty: np.ndarray  # (S, P, max_epochs)

    @property
    def n(self) -> int:
        return self.x.shape[0]


def allowed_violations(omega: float, S: int) -> int:
    """floor((1 - omega) S), computed as S - ceil(omega S - 1e-9) (MODEL.md section 5)."""
    return S - math.ceil(omega * S - 1e-9)


def sample_scenarios(instance, S: int, seed: int = 0) -> Scenarios:
    """Draw ``S`` joint scenarios for every model, epoch and switch (seeded, reproducible)."""
    if S < 1:
        raise ValueError("need at least one scenario")
    rng = np.random.default_rng([seed, 0x5CE7A])
    M, K, P = len(instance.models), instance.max_epochs, len(instance.switches)
    x = np.empty((S, M, K))
    if instance.noise_mode == "per_epoch":
        u = rng.random((S, K))
        for i, m in enumerate(instance.models):
            x[:, i, :] = model_noise(m).from_uniform(u)
    else:
        u = rng.random((S, M))
        for i, m in enumerate(instance.models):
            x[:, i, :] = model_noise(m).from_uniform(u[:, i])[:, None]
    pen = np.zeros((S, P, K))
    if P:
        v = rng.random((S, K))
        drawn: dict[int, np.ndarray] = {}  # switches with one law (penalty_dist is cached) share draws
        for p, sw in enumerate(instance.switches):
            dist = penalty_dist(sw.penalty)
            if id(dist) not in drawn:
                drawn[id(dist)] = dist.from_uniform(v)
            pen[:, p, :] = drawn[id(dist)]
    return Scenarios(seed, x, pen)


def scenario_losses(instance, plan: Plan, sc: Scenarios) -> np.ndarray:
    """Loss of ``plan`` in every scenario (forbidden switches contribute no penalty)."""
    g = data_effect(instance, plan.datasets).g
    models = plan.models()
    midx = {m: i for i, m in enumerate(instance.model_ids)}
    pidx = {(s.from_, s.to): i for i, s in enumerate(instance.switches)}
    loss = np.full(sc.n, instance.loss.initial)
    for k, m in enumerate(models, start=1):
        loss -= g * progress(instance.model_by_id[m], k) * sc.x[:, midx[m], k - 1]
        if k >= 2 and models[k - 2] != m and (models[k - 2], m) in pidx:
            loss += sc.penalty[:, pidx[(models[k - 2], m)], k - 1]
    return loss


@dataclass(frozen=True)
class ScenarioCheck:
    losses: np.ndarray
    n_violated: int
    allowed: int

    @property
    def n_scenarios(self) -> int:
        return len(self.losses)

    @property
    def ok(self) -> bool:
        return self.n_violated <= self.allowed


def evaluate_on_scenarios(instance, plan: Plan, sc: Scenarios, tol: float = 1e-9) -> ScenarioCheck:
    """Whether ``plan`` meets the SAA quantile constraint on the sample ``sc``.

    A scenario is violated when its loss exceeds the target by more than ``tol``
    (absolute; solvers work to about 1e-9). Only the quantile constraint is
    checked here; the deterministic rules are the evaluator's.
    """
    plan.check_ids(instance)
    if plan.n_epochs == 0 or plan.n_epochs > instance.max_epochs or not plan.datasets:
        losses = np.full(sc.n, math.inf)
    else:
        losses = scenario_losses(instance, plan, sc)
    viol = int(np.sum(losses > instance.loss.target + tol))
    return ScenarioCheck(losses, viol, allowed_violations(instance.loss.quantile, sc.n))
