"""Statistical bounds for what an SAA method returns (``deplbench saa-bounds``).

* **Violation upper bound** of the SAA plan: its loss is drawn ``eval_samples`` times from an
  independent stream; with x violations the one-sided Clopper-Pearson bound
  ``Beta^{-1}(conf; x + 1, n - x)`` exceeds the true violation probability with probability at
  least ``conf`` (over the evaluation sample).
* **Replication lower bound** on the true optimum (Luedtke and Ahmed 2008; Pagnoncelli, Ahmed
  and Shapiro 2009): R independent SAA problems with N scenarios and risk level gamma (at most
  ``floor(gamma N)`` violated). A true optimal plan x* violates with probability at most
  eps = 1 - omega, so it is feasible for each replication with probability at least
  ``rho = P(Bin(N, eps) <= floor(gamma N))``, and then that replication's optimum is <= z*.
  The L-th smallest replication value exceeds z* only if fewer than L replications have x*
  feasible: probability <= ``P(Bin(R, rho) <= L - 1)``. The largest L with that at most
  ``1 - conf`` gives a lower bound at confidence ``conf``. A replication that is not proven
  optimal contributes its solver bound (still <= its optimum), a failed one -inf; an ``optimal``
  one contributes its dual bound too (optimal within ``mip_gap`` is not optimal), never its objective.
* **Sample size** (Luedtke and Ahmed 2008, finite plan set X): with gamma < eps and
  ``N >= ln(|X| / delta) / (2 (eps - gamma)^2)`` every plan feasible for the SAA is
  eps-feasible with probability >= 1 - delta; with gamma = 0, ``N >= ln(|X| / delta) / -ln(1 - eps)``
  suffices. ``ln |X|`` is bounded by counting dataset selections and epoch sequences of
  (model, option) pairs.

The exact certification (the evaluator's bracket of the violation probability,
:func:`deplbench.instances.evaluator.quantile.violation_bracket`) is reported beside the bound.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from deplbench.errors import InputError
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.quantile import violation_bracket
from deplbench.instances.io import instance_from_dict
from deplbench.instances.semantics import data_effect
from deplbench.registry import get_solver, solve
from deplbench.results import Status

#: width of the exact violation bracket's lattice, relative to loss.initial
CERT_RTOL = 1e-4


@dataclass
class SaaBoundsReport:
    instance: str
    method: str
    scenarios: int
    replications: int
    confidence: float
    eps: float
    status: str
    objective: float | None
    violation_rate: float | None
    violation_upper: float | None
    violation_exact: tuple[float, float] | None
    lb_risk: float
    lb_scenarios: int
    rho: float
    lb_rank: int | None
    lower_bound: float | None
    replication_values: list[float]
    log_plans: float
    n_feasibility: int
    n_feasibility_zero_risk: int

    def to_dict(self) -> dict:
        return asdict(self)


def clopper_pearson_upper(x: int, n: int, conf: float) -> float:
    """One-sided upper confidence bound on a binomial probability."""
    return 1.0 if x >= n else float(stats.beta.ppf(conf, x + 1, n - x))


def replication_value(r) -> float:
    """What one replication proves about its SAA optimum: the solver's dual bound (``optimal``
    within ``mip_gap`` is no proof of the objective), +inf when proven infeasible, else -inf."""
    if r.status == Status.INFEASIBLE:
        return math.inf
    return float(r.bound) if r.bound is not None and math.isfinite(r.bound) else -math.inf


def replication_lower_bound(values: list[float], N: int, allowed: int, eps: float,
                            conf: float) -> tuple[int | None, float | None, float]:
    """(rank L, the L-th smallest value, rho) of the replication bound, or (None, None, rho)."""
    rho = float(stats.binom.cdf(allowed, N, eps))
    R = len(values)
    ranks = [L for L in range(1, R + 1) if stats.binom.cdf(L - 1, R, rho) <= 1 - conf]
    if not ranks:
        return None, None, rho
    L = max(ranks)
    return L, float(sorted(values)[L - 1]), rho


def log_plan_count(instance) -> float:
    """ln of an upper bound on the number of plans (selections times epoch sequences)."""
    D = len(instance.datasets)
    MO = len(instance.models) * sum(len(c.levels) for c in instance.clusters)
    K = instance.max_epochs
    seqs = K * math.log(MO) + math.log(MO / (MO - 1)) if MO > 1 else math.log(K)
    return D * math.log(2) + seqs


def sample_sizes(log_plans: float, eps: float, gamma: float, delta: float) -> tuple[int, int]:
    """Luedtke-Ahmed sample sizes: with risk ``gamma`` (< eps) and with risk 0."""
    lg = log_plans - math.log(delta)
    n_gamma = math.ceil(lg / (2 * (eps - gamma) ** 2)) if gamma < eps else 0
    return n_gamma, math.ceil(lg / -math.log1p(-eps))


def with_risk(instance, gamma: float):
    """The instance with ``loss.quantile = 1 - gamma`` (the SAA's risk level)."""
    d = instance.to_json_dict()
    d["loss"]["quantile"] = 1.0 - gamma
    return instance_from_dict(d)


def exact_violation(instance, plan) -> tuple[float, float]:
    """Certified bracket of the plan's true violation probability P(l > target)."""
    terms = loss_terms(instance, plan.models(), data_effect(instance, plan.datasets).g)
    return violation_bracket(terms, instance.loss.target, CERT_RTOL * abs(instance.loss.initial))


def saa_bounds(instance, method: str, *, scenarios: int, replications: int, confidence: float = 0.95,
               risk: float | None = None, lb_scenarios: int | None = None, eval_samples: int = 100_000,
               seed: int = 0, params: dict | None = None, solve_fn=solve) -> SaaBoundsReport:
    """Solve the SAA once (plan, violation bound) and ``replications`` times more (lower bound).

    ``solve_fn(method, instance, params) -> SolveResult`` runs each solve (default
    :func:`deplbench.registry.solve`; ``deplbench saa-bounds`` gives each a share of its time limit).
    """
    spec = get_solver(method)
    if spec.kind != "saa":
        raise InputError(f"method '{method}' is not an SAA method", "--method")
    if not 0.0 < confidence < 1.0:
        raise InputError("confidence must lie in (0, 1)", "--confidence")
    if replications < 1 or scenarios < 1 or eval_samples < 1:
        raise InputError("replications, scenarios and eval-samples must be >= 1")
    eps = 1.0 - instance.loss.quantile
    gamma = eps if risk is None else float(risk)
    if not 0.0 <= gamma < 1.0:
        raise InputError("risk must lie in [0, 1)", "--risk")
    N = lb_scenarios or scenarios
    params = dict(params or {})
    res = solve_fn(method, instance, {**params, "scenarios": scenarios, "seed": seed})
    rate = upper = exact = None
    if res.plan is not None and res.plan.segments:
        terms = loss_terms(instance, res.plan.models(), data_effect(instance, res.plan.datasets).g)
        loss = terms.sample(np.random.default_rng([seed, 0x5AAB0]), eval_samples)
        x = int(np.sum(loss > instance.loss.target))
        rate, upper = x / eval_samples, clopper_pearson_upper(x, eval_samples, confidence)
        exact = exact_violation(instance, res.plan)
    risky = with_risk(instance, gamma) if risk is not None else instance
    allowed = N - math.ceil((1.0 - gamma) * N - 1e-9)
    values = []
    for j in range(replications):
        r = solve_fn(method, risky, {**params, "scenarios": N, "seed": seed + 1 + j})
        values.append(replication_value(r))
    L, lb, rho = replication_lower_bound(values, N, allowed, eps, confidence)
    lp = log_plan_count(instance)
    n_g, n_0 = sample_sizes(lp, eps, eps / 2, 1 - confidence)
    return SaaBoundsReport(
        instance=instance.name, method=method, scenarios=scenarios, replications=replications,
        confidence=confidence, eps=eps, status=res.status.value, objective=res.objective,
        violation_rate=rate, violation_upper=upper, violation_exact=exact, lb_risk=gamma, lb_scenarios=N,
        rho=rho, lb_rank=L, lower_bound=lb, replication_values=values, log_plans=lp,
        n_feasibility=n_g, n_feasibility_zero_risk=n_0)
