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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from deplbench.heuristics.knapsack_rows import knapsack_row
from deplbench.instances.semantics import Options, nonempty_subsets, options, transfer_cost

EXACT_STATES = 20_000  # exact cost-grid DP when the costs sit on a grid this coarse (else the FPTAS)
_MULTIPLIERS = np.geomspace(1e-4, 1e6, 121)  # Lagrange multipliers, in units of max cost / budget


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
    The scores of every multiplier are computed in one array; the scalar bookkeeping
    keeps the order of the multipliers (the first cheapest feasible choice wins).
    """
    lams = np.concatenate(([0.0], _MULTIPLIERS * (cost[np.isfinite(cost)].max() / budget)))
    with np.errstate(invalid="ignore"):
        score = cost[None] + lams[:, None, None] * time[None]  # (multipliers, items, options)
    ch_all = np.argmin(score, axis=2)
    s_all = np.take_along_axis(score, ch_all[:, :, None], axis=2)[:, :, 0]
    t_all = np.take_along_axis(np.broadcast_to(time, score.shape), ch_all[:, :, None], axis=2)[:, :, 0]
    c_all = np.take_along_axis(np.broadcast_to(cost, score.shape), ch_all[:, :, None], axis=2)[:, :, 0]
    # row sums reduce each contiguous row like ``row.sum()`` (the same pairwise sums, bit for bit)
    vals = s_all.sum(axis=1) - lams * budget
    vals = vals[~np.isnan(vals)]  # a running max(lb, v) skips nan (inf - inf) too
    lb = float(vals.max()) if len(vals) else -np.inf
    t, c = t_all.sum(axis=1), c_all.sum(axis=1)
    fits = np.flatnonzero(t <= budget)
    if len(fits) == 0 or not np.isfinite(c[fits]).any():
        return lb, np.inf, None
    li = int(fits[np.argmin(c[fits])])  # the first multiplier of the cheapest fitting choice
    return lb, float(c[li]), ch_all[li]


def cost_grid(cost: np.ndarray, max_denominator: int = 1000) -> float | None:
    """The largest g with every finite cost an integer multiple of g (rationals only), else None."""
    vals = np.unique(cost[np.isfinite(cost) & (cost > 0)])
    if len(vals) == 0:
        return None
    fr = [Fraction(float(v)).limit_denominator(max_denominator) for v in vals]
    if any(abs(float(f) - v) > 1e-12 * v for f, v in zip(fr, vals, strict=True)):
        return None
    den = math.lcm(*(f.denominator for f in fr))
    g = Fraction(math.gcd(*(int(f * den) for f in fr)), den)
    return float(g)


def _knapsack_dp(cost: np.ndarray, time: np.ndarray, units: np.ndarray, C: int,
                 memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Least time of every rounded cost 0..C after each item, and the option that reaches it.

    ``memo`` (one per search) keeps the rows after each prefix of items: an entry of cost c
    depends on the entries <= c only, and an option dearer than C units is blocked at every
    c <= C either way, so a prefix computed for a larger C gives these rows exactly (truncated).
    """
    n = cost.shape[0]
    dp = np.full(C + 1, np.inf)
    dp[0] = 0.0
    arg = np.zeros((n, C + 1), dtype=np.int16)
    ids: tuple[int, ...] = ()
    start = 0
    if memo is not None:  # the longest prefix of items already done for a C at least this large
        names = memo.setdefault("names", {})
        ids = tuple(names.setdefault(np.isfinite(cost[i]).tobytes() + units[i].tobytes() + time[i].tobytes(),
                                     len(names)) for i in range(n))
        while start < n and memo.get(ids[:start + 1], (-1,))[0] >= C:
            _, dp, row = memo[ids[:start + 1]]
            arg[start] = row[:C + 1]
            start += 1
        dp = dp[:C + 1]
    time = np.ascontiguousarray(time, dtype=np.float64)
    for i in range(start, n):
        row, best_o = np.empty(C + 1), np.empty(C + 1, dtype=np.int16)
        knapsack_row(dp, cost[i], units[i], time[i], row, best_o)
        dp = row
        arg[i] = best_o
        if memo is not None:
            memo[ids[:i + 1]] = (C, dp, best_o)
    return dp, arg


def mckp_fptas(cost: np.ndarray, time: np.ndarray, budget: float, eps: float,
               stats: dict | None = None, memo: dict | None = None) -> tuple[np.ndarray, float] | None:
    """Minimise total cost choosing one option per item with total time <= budget.

    Parameters
    ----------
    cost, time : ndarray of shape (items, options)
        ``inf`` time marks an option an item cannot use.
    budget : float
    eps : float
        Accuracy: the cost found is at most (1 + eps) times the optimum.
    stats : dict, optional
        Its ``mckp_states`` grows by the DP's states (items x rounded costs; 0 when the
        Lagrangian bounds settle it without the DP): the work eps drives.
    memo : dict, optional
        Shared by the calls of one search: knapsack rows of item prefixes (:func:`_knapsack_dp`).

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
    if memo is None:
        grid = cost_grid(cost)
    else:  # a pure function of the cost values: decided once per search
        grids = memo.setdefault("grids", {})
        gkey = np.unique(cost[np.isfinite(cost) & (cost > 0)]).tobytes()
        grid = grids[gkey] if gkey in grids else grids.setdefault(gkey, cost_grid(cost))
    exact = grid is not None and ub / grid <= EXACT_STATES
    if not exact and (lb <= 0 or ub <= lb * (1 + eps)):
        ub_choice = polish(cost, time, budget, ub_choice)
        return ub_choice, float(cost[np.arange(n), ub_choice].sum())
    delta = eps * lb / n
    if grid is not None and (exact or grid >= delta):
        delta = grid  # every cost is a multiple of the grid: the DP below is exact
    units = np.floor(np.where(np.isfinite(cost), cost, 0.0) / delta + 1e-9 * (delta == grid)).astype(np.int64)
    C = int(np.floor(ub / delta)) + 1
    if stats is not None:
        stats["mckp_states"] = stats.get("mckp_states", 0) + n * (C + 1)
    dp, arg = _knapsack_dp(cost, time, units, C, memo)
    feasible = np.nonzero(dp <= budget)[0]
    if len(feasible) == 0:  # cannot happen (the incumbent is representable), kept for safety
        return ub_choice, ub
    # every rounded cost up to c_min + n can hold a truly cheaper choice (true <= delta (c + n)):
    # backtrack each and keep the truly cheapest; the (1 + eps) bound of c_min still holds
    best_choice, best = ub_choice, ub
    rows = np.arange(n)
    c = feasible[feasible <= feasible[0] + n].astype(np.int64)  # backtracked together, one row each
    choices = np.empty((len(c), n), dtype=int)
    for i in range(n - 1, -1, -1):
        o = arg[i, c].astype(int)
        choices[:, i] = o
        c = c - units[i, o]
    totals = cost[rows[None, :], choices]
    for r in range(len(choices)):  # in cost order: the first truly cheapest wins
        total = float(totals[r].sum())
        if total < best:
            best_choice, best = choices[r], total
    best_choice = polish(cost, time, budget, best_choice)
    return best_choice, float(cost[rows, best_choice].sum())


def polish(cost: np.ndarray, time: np.ndarray, budget: float, choice: np.ndarray,
           max_moves: int = 1000) -> np.ndarray:
    """Improve an MCKP choice by single and paired option changes that keep the budget.

    Items with identical rows are interchangeable, so moves are enumerated per class
    (row, current option) rather than per item. Each applied move strictly lowers the
    cost, so the result is never worse than ``choice`` (the FPTAS bound still holds).

    Parameters
    ----------
    cost, time : ndarray of shape (items, options)
    budget : float
    choice : ndarray of int, shape (items,)

    Returns
    -------
    ndarray of int
        The improved choice (a new array).
    """
    choice = np.array(choice, dtype=int)
    n = len(choice)
    if n == 0:
        return choice
    # items with equal (cost, time) rows share a label (only the grouping matters: classes keep item order)
    labels: dict[bytes, int] = {}
    rows_ct = np.concatenate([np.nan_to_num(cost, posinf=-1.0), np.nan_to_num(time, posinf=-1.0)], axis=1) + 0.0  # -0 -> 0
    row_id = [labels.setdefault(r.tobytes(), len(labels)) for r in rows_ct]
    rows = np.arange(n)
    for _ in range(max_moves):
        slack = budget - float(time[rows, choice].sum())
        classes: dict[tuple[int, int], list[int]] = {}
        for i in range(n):
            classes.setdefault((row_id[i], int(choice[i])), []).append(i)
        members = list(classes.values())
        reps = np.array([m[0] for m in members])
        dc = cost[reps] - cost[reps, choice[reps]][:, None]  # (classes, options)
        dt = time[reps] - time[reps, choice[reps]][:, None]
        with np.errstate(invalid="ignore"):
            single = np.where(dt <= slack, dc, np.inf)
            n_cls, n_opt = dc.shape
            pair = dc.reshape(-1, 1) + dc.reshape(1, -1)
            ok = (dt.reshape(-1, 1) + dt.reshape(1, -1)) <= slack
        same = np.repeat(np.arange(n_cls), n_opt)
        crowded = np.array([len(m) >= 2 for m in members])
        ok &= (same[:, None] != same[None, :]) | crowded[same][:, None]
        pair = np.where(ok, pair, np.inf)
        if float(single.min()) < -1e-9 and float(single.min()) <= float(pair.min()):
            c, o = np.unravel_index(int(np.argmin(single)), single.shape)
            choice[members[c][0]] = o
        elif float(pair.min()) < -1e-9:
            f = int(np.argmin(pair))
            (c1, o1), (c2, o2) = divmod(f // (n_cls * n_opt), n_opt), divmod(f % (n_cls * n_opt), n_opt)
            i1 = members[c1][0]
            i2 = members[c2][1] if c1 == c2 else members[c2][0]
            choice[i1], choice[i2] = o1, o2
        else:
            break
    return choice


def _sorted_runs(rows: Sequence[int], chosen: Sequence[int]) -> tuple[int, ...]:
    """Sort the options within each run of one model (same cost, time and loss; fewer segments)."""
    out: list[int] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i] != rows[start]:
            out += sorted(chosen[start:i])
            start = i
    return tuple(out)


def allocate(instance, datasets: Sequence[str], models: Sequence[str], eps: float,
             opts: Options | None = None, stats: dict | None = None, memo: dict | None = None) -> Allocation | None:
    """Cheapest (within 1 + eps) cluster and level for every epoch of ``models``.

    Returns None when no allocation meets the time budget. ``stats`` counts the knapsack DP's
    states (:func:`mckp_fptas`); ``memo`` (one dict per search) lets sequences that share their
    first epochs share the knapsack rows of those epochs (:func:`_knapsack_dp`).
    """
    opts = opts if opts is not None else options(instance, datasets)
    midx = {m: i for i, m in enumerate(instance.model_ids)}
    rows = [midx[m] for m in models]
    n_cl = len(instance.clusters)
    ds = list(datasets)
    charged = any(instance.transfer_cost(d, c.id) > 0 for d in ds for c in instance.clusters)
    subsets = nonempty_subsets(range(n_cl)) if charged else [tuple(range(n_cl))]
    best: Allocation | None = None
    for sub in subsets:
        fixed = transfer_cost(instance, ds, [instance.clusters[j].id for j in sub])
        if best is not None and fixed >= best.cost:
            continue
        allowed = (opts.cluster_index[:, None] == np.asarray(sub)[None, :]).any(axis=1)  # np.isin, minus its overhead
        # only the Pareto options of each model can be in an optimal choice
        keep = sorted(set().union(*(_pareto(opts.cost, opts.time[m], allowed).tolist() for m in set(rows))))
        if not keep:
            continue
        cost = np.tile(opts.cost[keep], (len(rows), 1))
        time = opts.time[np.ix_(rows, keep)]
        res = mckp_fptas(cost, time, instance.time_budget, eps, stats, memo)
        if res is None:
            continue
        choice, c = res
        chosen = _sorted_runs(rows, [int(keep[o]) for o in choice])
        used = {instance.clusters[int(opts.cluster_index[o])].id for o in chosen}
        total = c + transfer_cost(instance, ds, used)
        if best is None or total < best.cost:
            t = float(sum(opts.time[r, o] for r, o in zip(rows, chosen, strict=True)))
            best = Allocation(chosen, total, t)
    return best
