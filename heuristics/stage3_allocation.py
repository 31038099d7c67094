"""DepL stage 3: node and resource allocation as a multiple-choice knapsack FPTAS.

Given the datasets and the per-epoch model sequence, every epoch picks one option
(cluster, level) from :func:`deplbench.instances.semantics.options`; the total time
must fit the budget and the cost is minimised. Each epoch is one class of a
multiple-choice knapsack (MCKP) with weights = epoch times and costs = epoch costs.

The FPTAS rounds costs down to multiples of ``delta = eps * LB / K`` (LB a Lagrangian
lower bound on the optimum) and runs an exact dynamic program "least time for each
rounded cost"; the rounded optimum costs at most OPT + K delta <= (1 + eps) OPT. The
choices of the rounded costs within K units of it are backtracked too and the truly
cheapest is kept (never worse, often exact).
Transfer costs are a fixed charge per cluster used (MODEL.md section 7 item 7): the
sets of usable clusters are enumerated (2^|N| - 1 of them, only the full set when
every transfer cost is zero) and the cheapest allocation over them is kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deplbench.instances.semantics import Options, options, transfer_cost


@dataclass(frozen=True)
class Allocation:
    """Chosen option per epoch with its (compute + transfer) cost and total time."""

    choice: tuple[int, ...]
    cost: float
    time: float


def _pareto(cost: np.ndarray, time: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Indices of allowed options not dominated in (time, cost), sorted by time."""
    idx = [int(o) for o in np.lexsort((cost, time)) if allowed[o] and np.isfinite(time[o])]
    keep, best = [], np.inf
    for o in idx:
        if cost[o] < best:
            keep.append(o)
            best = cost[o]
    return np.array(keep, dtype=int)


def _lagrangian_bounds(cost, time, budget):
    """Lower bound on the MCKP optimum and the cheapest feasible greedy choice found.

    ``cost`` and ``time`` are (items, options) arrays (inf for an unusable option).
    """
    lams = np.concatenate(([0.0], np.geomspace(1e-4, 1e6, 121) * (cost[np.isfinite(cost)].max() / budget)))
    lb, ub, ub_choice = -np.inf, np.inf, None
    for lam in lams:
        score = cost + lam * time
        ch = np.argmin(score, axis=1)
        rows = np.arange(len(ch))
        lb = max(lb, float(score[rows, ch].sum() - lam * budget))
        t = float(time[rows, ch].sum())
        c = float(cost[rows, ch].sum())
        if t <= budget and c < ub:
            ub, ub_choice = c, ch
    return lb, ub, ub_choice


def mckp_fptas(cost: np.ndarray, time: np.ndarray, budget: float, eps: float) -> tuple[np.ndarray, float] | None:
    """Minimise total cost choosing one option per item with total time <= budget.

    Parameters
    ----------
    cost, time : ndarray of shape (items, options)
        ``inf`` time marks an option an item cannot use.
    budget : float
    eps : float
        Accuracy: the cost found is at most (1 + eps) times the optimum.

    Returns
    -------
    (choice, cost) or None
        ``choice[i]`` is the option of item ``i``; None when no choice fits the budget.
    """
    n = cost.shape[0]
    cost = np.where(np.isfinite(time), cost, np.inf)
    if n == 0:
        return np.zeros(0, dtype=int), 0.0
    if float(np.min(time, axis=1).sum()) > budget:
        return None
    lb, ub, ub_choice = _lagrangian_bounds(cost, time, budget)
    if ub_choice is None:  # the fastest choice fits (checked above): use it as incumbent
        ub_choice = np.argmin(time, axis=1)
        ub = float(cost[np.arange(n), ub_choice].sum())
    lb = max(lb, float(np.min(cost, axis=1).sum()))
    if lb <= 0 or ub <= lb * (1 + eps):
        return ub_choice, ub
    delta = eps * lb / n
    units = np.floor(np.where(np.isfinite(cost), cost, 0.0) / delta).astype(np.int64)
    C = int(np.floor(ub / delta)) + 1
    dp = np.full(C + 1, np.inf)
    dp[0] = 0.0
    arg = np.zeros((n, C + 1), dtype=np.int16)
    for i in range(n):
        new = np.full(C + 1, np.inf)
        for o in range(cost.shape[1]):
            if not np.isfinite(cost[i, o]):
                continue
            u = units[i, o]
            if u > C:
                continue
            cand = dp[: C + 1 - u] + time[i, o]
            better = cand < new[u:]
            new[u:][better] = cand[better]
            arg[i, u:][better] = o
        dp = new
    feasible = np.nonzero(dp <= budget)[0]
    if len(feasible) == 0:  # cannot happen (the incumbent is representable), kept for safety
        return ub_choice, ub
    # every rounded cost up to c_min + n can hold a truly cheaper choice (true <= delta (c + n)):
    # backtrack each and keep the truly cheapest; the (1 + eps) bound of c_min still holds
    best_choice, best = ub_choice, ub
    rows = np.arange(n)
    for c0 in feasible[feasible <= feasible[0] + n]:
        c = int(c0)
        choice = np.empty(n, dtype=int)
        for i in range(n - 1, -1, -1):
            o = int(arg[i, c])
            choice[i] = o
            c -= int(units[i, o])
        total = float(cost[rows, choice].sum())
        if total < best:
            best_choice, best = choice, total
    return best_choice, best


def allocate(instance, datasets: Sequence[str], models: Sequence[str], eps: float,
             opts: Options | None = None) -> Allocation | None:
    """Cheapest (within 1 + eps) cluster and level for every epoch of ``models``.

    Returns None when no allocation meets the time budget.
    """
    opts = opts if opts is not None else options(instance, datasets)
    midx = {m: i for i, m in enumerate(instance.model_ids)}
    rows = [midx[m] for m in models]
    n_cl = len(instance.clusters)
    ds = list(datasets)
    charged = any(instance.transfer_cost(d, c.id) > 0 for d in ds for c in instance.clusters)
    subsets = (itertools.chain.from_iterable(itertools.combinations(range(n_cl), r) for r in range(1, n_cl + 1))
               if charged else [tuple(range(n_cl))])
    best: Allocation | None = None
    for sub in subsets:
        fixed = transfer_cost(instance, ds, [instance.clusters[j].id for j in sub])
        if best is not None and fixed >= best.cost:
            continue
        allowed = np.isin(opts.cluster_index, sub)
        # only the Pareto options of each model can be in an optimal choice
        keep = sorted(set().union(*(_pareto(opts.cost, opts.time[m], allowed).tolist() for m in set(rows))))
        if not keep:
            continue
        cost = np.tile(opts.cost[keep], (len(rows), 1))
        time = opts.time[np.ix_(rows, keep)]
        res = mckp_fptas(cost, time, instance.time_budget, eps)
        if res is None:
            continue
        choice, c = res
        chosen = tuple(int(keep[o]) for o in choice)
        used = {instance.clusters[int(opts.cluster_index[o])].id for o in chosen}
        total = c + transfer_cost(instance, ds, used)
        if best is None or total < best.cost:
            t = float(sum(opts.time[r, o] for r, o in zip(rows, chosen, strict=True)))
            best = Allocation(chosen, total, t)
    return best
