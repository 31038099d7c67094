"""DepL stage 1: dataset selection by minimising f(D) = K^(D) T^(D).

``T^(D)`` is the epoch time of the full model (largest ``work``) alone on the most
capable cluster (largest ``nodes * capacity``) at full resources; ``K^(D)`` the
fewest epochs of that plan whose certified loss quantile meets the target
(``max_epochs + 1`` when none does, or when D has g <= 0). The paper minimises f
as an unbounded submodular function; f is not submodular in general (MODEL.md
section 7 item 9), so :func:`submodularity_report` measures the largest violation.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from deplbench.heuristics.datasets.submodular import ranked_minimisers, submodularity_violation
from deplbench.instances.evaluator.evaluate import certify
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.semantics import data_effect, epoch_time


def reference_choice(instance) -> tuple[str, str, float]:
    """(full model, most capable cluster, full level) used to score dataset choices."""
    model = max(instance.models, key=lambda m: m.work).id
    cluster = max(instance.clusters, key=lambda c: c.nodes * c.capacity)
    return model, cluster.id, cluster.levels[-1]


def epochs_needed(instance, g: float, model: str) -> int:
    """Fewest epochs of ``model`` alone whose certified quantile meets the target.

    Binary search (the quantile decreases with K for non-negative noise);
    ``max_epochs + 1`` when the target is unreachable.
    """
    target = instance.loss.target
    if not g > 0:
        return instance.max_epochs + 1

    def ok(K: int) -> bool:
        terms = loss_terms(instance, [model] * K, g)
        coarse = quantile_bracket(  # a cheap coarse bracket decides most K
            terms, instance.loss.quantile, 2e-3 * instance.loss.initial)
        if coarse.hi <= target:
            return True
        if coarse.lo > target:
            return False
        return certify(instance, None, decide=target, terms=terms).hi <= target

    if not ok(instance.max_epochs):
        return instance.max_epochs + 1
    lo, hi = 0, instance.max_epochs  # ok(hi) holds, lo is below any feasible K
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def objective(instance):
    """The cached set function ``f`` on frozensets of dataset indices."""
    model, cluster, level = reference_choice(instance)
    ids = instance.dataset_ids

    @cache
    def k_hat(g: float) -> int:
        return epochs_needed(instance, g, model)

    @cache
    def f(S: frozenset) -> float:
        ds = [ids[i] for i in sorted(S)]
        de = data_effect(instance, ds)
        if not ds:  # unreachable by the minimiser (it never evaluates the empty set)
            return float(instance.max_epochs + 1) * 1e12
        T = epoch_time(instance, model, cluster, level, de.Q)
        return k_hat(de.g) * T

    return f


def ranked_datasets(instance) -> Iterator[tuple[tuple[str, ...], float | None]]:
    """Dataset choices in the order DepL tries them (best f first).

    With one dataset there is no choice to make and f is not evaluated (value None).
    """
    ids = instance.dataset_ids
    if len(ids) == 1:
        yield ids, None
        return
    f = objective(instance)
    for S, val in ranked_minimisers(f, len(ids)):
        yield tuple(ids[i] for i in sorted(S)), val


def submodularity_report(instance, max_datasets: int = 12) -> float | None:
    """Largest violation of submodularity of f over non-empty sets (None if < 2 datasets or too many)."""
    n = len(instance.datasets)
    if n < 2 or n > max_datasets:
        return None
    return submodularity_violation(objective(instance), n)
