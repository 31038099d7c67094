"""``evaluate(instance, plan)``: cost, time, feasibility and the certified loss quantile.

Pure function of the instance and the plan; no solver is involved. The harness and
:func:`deplbench.registry.solve` trust this, never a solver's own figures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import ndtri

from deplbench.instances.evaluator.loss import LossTerms, loss_terms
from deplbench.instances.evaluator.quantile import Bracket, floored_mean, quantile_bracket
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import (
    data_effect,
    epoch_cost,
    epoch_time,
    match_level,
    transfer_cost,
    within_budget,
)

#: Violations a plan can have; all but ``quantile`` are checked without randomness.
VIOLATIONS = ("switch", "epochs", "data", "level", "time", "quantile")
HARD_VIOLATIONS = ("switch", "epochs", "data", "level", "time")

DEFAULT_RTOL = 5e-4  # requested bracket width, relative to loss.initial
MIN_RTOL = 1e-6  # refinement stops here when the bracket straddles the target
LADDER = (64.0, 8.0)  # coarser widths (times rtol) tried first when deciding against a target
DEFAULT_SAMPLES = 20_000


@dataclass(frozen=True)
class Evaluation:
    """The evaluator's verdict on one plan (MODEL.md section 4)."""

    feasible: bool
    violations: list[str]
    cost: float
    compute_cost: float
    transfer_cost: float
    time: float
    epochs: int
    g: float
    loss_mean: float
    quantile_bounds: tuple[float, float]
    bracket_width: float
    lattice_step: float
    mc_quantile: float | None = None
    mc_ci: tuple[float, float] | None = None
    mc_samples: int = 0
    mc_seed: int | None = None
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["quantile_bounds"] = list(self.quantile_bounds)
        d["mc_ci"] = list(self.mc_ci) if self.mc_ci is not None else None
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def plan_costs(instance, plan: Plan) -> tuple[float, float, float]:
    """(compute cost, transfer cost, total time) of a plan whose ids are valid."""
    Q = data_effect(instance, plan.datasets).Q
    compute = time = 0.0
    for s in plan.segments:
        compute += s.epochs * epoch_cost(instance, s.cluster, s.level)
        time += s.epochs * epoch_time(instance, s.model, s.cluster, s.level, Q)
    transfer = transfer_cost(instance, plan.datasets, {s.cluster for s in plan.segments})
    return compute, transfer, time


def certify(instance, plan: Plan, rtol: float = DEFAULT_RTOL, decide: float | None = None,
            terms: LossTerms | None = None, ladder: bool = True) -> Bracket:
    """Certified bracket of the plan's loss quantile; with ``decide``, the decision ``quantile <= decide``.

    With ``decide`` (a loss target) the grid is refined while the bracket straddles it, down
    to a width of ``MIN_RTOL * loss.initial``, and (``ladder``, the default) coarser brackets
    (``LADDER`` times ``rtol``) are tried first, but for those the :func:`normal_guess` of the
    quantile says would straddle: the first bracket that does not straddle the target is
    returned, so ``hi <= decide`` proves the quantile is at most the target and ``lo > decide``
    proves it is above. Without ``ladder`` the chain starts at ``rtol`` (the
    bracket :func:`evaluate` reports). Both decide the same way whenever the chain from
    ``rtol`` decides (every bracket is certified: docs/evaluator.md), and ``evaluate`` tries
    the ladder when that chain ends straddling, so its verdict equals this decision.
    """
    if terms is None:
        g = data_effect(instance, plan.datasets).g
        terms = loss_terms(instance, plan.models(), g)
    scale = instance.loss.initial
    omega = instance.loss.quantile
    if decide is not None and ladder and terms.dists:
        guess = normal_guess(terms, omega)
        skip = False
        for k in LADDER:
            # a step of width W decides only if the quantile lies about W / 2 or more from the
            # target: skip it when the guess lies within W (it would likely straddle), or when the
            # previous step left the target in its central half; a skip never changes the decision
            if skip or abs(decide - guess) < k * rtol * scale:
                skip = False
                continue
            br = quantile_bracket(terms, omega, k * rtol * scale)
            if not br.lo <= decide < br.hi:
                return br
            # the next step (8 times finer) decides only if the quantile lies farther than its
            # width from the target, unlikely when the target sits in this bracket's central half;
            # skipping a step changes the cost, never the decision (every bracket is certified)
            skip = min(decide - br.lo, br.hi - decide) > (br.hi - br.lo) / 4
    br = quantile_bracket(terms, omega, rtol * scale)
    while decide is not None and br.lo <= decide < br.hi and rtol > MIN_RTOL and br.n_terms:
        rtol = max(rtol / 8, MIN_RTOL)
        br = quantile_bracket(terms, omega, rtol * scale)
    return br


def cantelli_lower(mean: float, var: float, omega: float, scale: float) -> float:
    """A proven lower bound on the ``omega``-quantile of a loss from its mean and variance alone.

    Cantelli's inequality: ``P(l <= mean - t) <= var / (var + t^2)``, which is below ``omega`` for
    ``t > sd sqrt((1 - omega) / omega)``, so the quantile exceeds ``mean - sd sqrt((1 - omega) /
    omega)``. The deviation is padded (``1e-6`` relative, and ``1e-6 scale`` off the bound): the
    laws' variances carry the round-off of their quadratures, far below that. A bound above the
    target decides as :func:`certify` does (its brackets hold the quantile: ``hi >= q > target``)
    at the price of two sums (``LossTerms.mean`` and ``var``); DepL, ``exact`` and ``bruteforce``
    refute with it; docs/evaluator.md, "Refuted by the mean and variance".
    """
    if not 0.0 < omega < 1.0:
        return -math.inf
    sd = math.sqrt(max(var, 0.0)) * (1 + 1e-6)
    return mean - sd * math.sqrt((1 - omega) / omega) - 1e-6 * scale


def normal_guess(terms: LossTerms, omega: float) -> float:
    """Where the ``omega``-quantile of ``terms`` probably lies: ``mean + z_omega sd`` (a guess, not a bound).

    It only steers which of the ladder's brackets :func:`certify` computes; NaN (every step
    tried) when ``omega`` is not inside (0, 1).
    """
    return terms.mean + _z(omega) * math.sqrt(terms.var)


@lru_cache(maxsize=16)
def _z(omega: float) -> float:
    return float(ndtri(omega)) if 0.0 < omega < 1.0 else math.nan


def quantile_verdict(instance, terms: LossTerms, rtol: float = DEFAULT_RTOL,
                     target: float | None = None) -> tuple[bool, Bracket]:
    """(quantile <= target proven, the bracket to report): the evaluator's quantile test.

    The bracket is the chain from ``rtol`` (as reported before the ladder existed); when it
    ends straddling the target, the coarser brackets of the ladder are consulted too, so
    the verdict is exactly :func:`certify`'s decision (``certify(..., decide=target).hi <= target``).
    ``target`` defaults to the instance's.
    """
    target = instance.loss.target if target is None else target
    br = certify(instance, None, rtol, decide=target, terms=terms, ladder=False)
    if br.lo <= target < br.hi and br.n_terms:
        fast = certify(instance, None, rtol, decide=target, terms=terms)
        if fast.hi <= target:
            return True, fast
    return br.hi <= target, br


def mc_quantile(terms: LossTerms, omega: float, samples: int, seed: int, conf: float = 0.95,
                floor: float | None = None):
    """Monte-Carlo omega-quantile with a distribution-free (order-statistic) confidence interval.

    With ``floor``, the draws are those of the floored loss max(floor, l) (MODEL.md section 4).
    """
    rng = np.random.default_rng(seed)
    x = terms.sample(rng, samples)
    x = np.sort(x if floor is None else np.maximum(x, floor))
    k = max(math.ceil(omega * samples) - 1, 0)
    a = (1 - conf) / 2
    lo_i = int(stats.binom.ppf(a, samples, omega)) - 1
    hi_i = int(stats.binom.ppf(1 - a, samples, omega))
    return float(x[k]), (float(x[max(lo_i, 0)]), float(x[min(hi_i, samples - 1)]))


def evaluate(instance, plan: Plan, *, samples: int = DEFAULT_SAMPLES, seed: int = 0,
             rtol: float = DEFAULT_RTOL) -> Evaluation:
    """Evaluate ``plan`` on ``instance``.

    Parameters
    ----------
    instance : Instance
    plan : Plan
        Its ids must exist in the instance (:meth:`Plan.check_ids`).
    samples : int
        Monte-Carlo sample size for the independent estimate (0 skips it).
    seed : int
        Seed of the Monte-Carlo sample.
    rtol : float
        Requested bracket width relative to ``loss.initial``; refined automatically
        while the bracket straddles the target.

    Returns
    -------
    Evaluation
        Feasible iff no violation; ``quantile`` is violated unless the certified
        upper end ``hi`` is at most the target.
    """
    plan.check_ids(instance)
    viol: list[str] = []
    details: list[str] = []
    K = plan.n_epochs
    if not 1 <= K <= instance.max_epochs:
        viol.append("epochs")
        details.append(f"K = {K} not in [1, {instance.max_epochs}]")
    de = data_effect(instance, plan.datasets)
    if not plan.datasets or not de.g > 0:
        viol.append("data")
        details.append("no dataset selected" if not plan.datasets else f"g = {de.g:.6g} <= 0")
    for i, s in enumerate(plan.segments):
        if match_level(instance.cluster_by_id[s.cluster], s.level) is None:
            viol.append("level")
            details.append(f"segment {i}: level {s.level} is not a level of cluster '{s.cluster}'")
            break
    # the formulas use the instance's level value (MODEL.md section 4)
    segs = [s if match_level(instance.cluster_by_id[s.cluster], s.level) is None
            else type(s)(s.model, s.cluster, match_level(instance.cluster_by_id[s.cluster], s.level), s.epochs)
            for s in plan.segments]
    plan = Plan(plan.datasets, tuple(segs))
    models = plan.models()
    for k in range(2, K + 1):
        if not instance.allowed(models[k - 2], models[k - 1]):
            viol.append("switch")
            details.append(f"epoch {k}: switch {models[k - 2]} -> {models[k - 1]} is not listed")
            break
    compute, transfer, total_time = plan_costs(instance, plan)
    if not within_budget(total_time, instance.time_budget):
        viol.append("time")
        details.append(f"time {total_time:.6g} > budget {instance.time_budget:.6g}")
    target = instance.loss.target
    if "data" in viol or K == 0:
        qb, mean, width, step = (math.nan, math.nan), math.nan, math.nan, math.nan
        mcq, mcci = None, None
        viol.append("quantile")
    else:
        terms = loss_terms(instance, models, de.g)
        ok, br = quantile_verdict(instance, terms, rtol)
        qb, mean, width, step = (br.lo, br.hi), terms.mean, br.width, br.h
        floor = instance.loss.floor
        if floor is not None:  # max(floor, .) is non-decreasing and floor < target: feasibility is unchanged
            qb = (max(floor, br.lo), max(floor, br.hi))
            mean = floored_mean(terms, floor, rtol * instance.loss.initial)
        if not ok:
            viol.append("quantile")
            details.append(f"certified quantile bracket [{br.lo:.6g}, {br.hi:.6g}] is not below target {target:g}")
        mcq, mcci = (mc_quantile(terms, instance.loss.quantile, samples, seed, floor=floor) if samples > 0
                     else (None, None))
    order = {v: i for i, v in enumerate(VIOLATIONS)}
    viol = sorted(set(viol), key=order.__getitem__)
    return Evaluation(
        feasible=not viol, violations=viol, cost=compute + transfer, compute_cost=compute,
        transfer_cost=transfer, time=total_time, epochs=K, g=de.g, loss_mean=mean,
        quantile_bounds=qb, bracket_width=width, lattice_step=step, mc_quantile=mcq, mc_ci=mcci,
        mc_samples=samples if mcq is not None else 0, mc_seed=seed if mcq is not None else None,
        details=details)
