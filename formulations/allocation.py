"""Exact cheapest resource allocation for given per-model epoch counts.

Given how many epochs ``n_m`` each model runs, choose a (cluster, level) option for
every epoch so that the total time is within the budget and the compute cost is
least. Cost and time do not depend on the order of the epochs (MODEL.md section 4),
so this is a multiple-choice knapsack in counts::

    min  sum_{m,o} c_o y_mo   s.t.  sum_o y_mo = n_m,  sum_{m,o} t_mo y_mo <= T (1 + 1e-9),
         y_mo integer >= 0.

Two parts:

* :meth:`Allocator.lower_bounds`: the Lagrangian (= LP) bound
  ``max_{lambda >= 0} sum_m n_m min_o (c_o + lambda t_mo) - lambda T``, vectorised over
  many count vectors; the maximum of this concave piecewise-linear function lies at
  a breakpoint of some ``min_o``, so evaluating every breakpoint is exact.
* :meth:`Allocator.solve`: the exact optimum. When every option cost is an integer
  multiple of a common unit (all shipped families), a dynamic program over the cost
  in units computes the least time for every exact total cost and returns the least
  cost whose least time fits the budget: exact for the data. Otherwise (or when the
  cost range is too large for the table) a small MILP is solved with HiGHS at zero
  gap, and its rounded solution is re-checked against the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deplbench.formulations.highs import new_highs
from deplbench.formulations.sequences import Refused
from deplbench.instances.semantics import TIME_RTOL, nonempty_subsets, transfer_cost
from deplbench.numeric import dot, matvec, thin_matmul

MAX_UNITS = 200_000  # longest cost table of the dynamic program (units of the cost grid)
_SCALES = tuple(10**d for d in range(0, 10))


def cost_grid(costs: np.ndarray) -> tuple[float, np.ndarray] | None:
    """A unit ``u`` and integers ``k`` with ``costs == k * u`` (to 1e-9 relative), or None."""
    costs = np.asarray(costs, dtype=float)
    for s in _SCALES:
        scaled = costs * s
        k = np.rint(scaled)
        if np.all(np.abs(scaled - k) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            ints = k.astype(np.int64)
            g = int(np.gcd.reduce(ints[ints > 0])) if np.any(ints > 0) else 1
            return g / s, ints // g
    return None


@dataclass(frozen=True)
class Allocation:
    """An optimal allocation: its cost, time and, per model, the option of each epoch."""

    cost: float
    time: float
    options: tuple[tuple[int, ...], ...]  # options[m] = option index of each of model m's epochs
    method: str  # "dp" or "milp"


class Allocator:
    """Cheapest allocation of epoch counts to options under a time budget.

    Parameters
    ----------
    costs : ndarray, shape (O,)
        Cost of one epoch on each option (independent of the model).
    times : ndarray, shape (M, O)
        Epoch time of each model on each option.
    budget : float
        The time budget; the test is ``time <= budget * (1 + 1e-9)`` as in the evaluator.
    """

    def __init__(self, costs: np.ndarray, times: np.ndarray, budget: float):
        self.costs = np.asarray(costs, dtype=float)
        self.times = np.asarray(times, dtype=float)
        self.limit = budget * (1 + TIME_RTOL)
        self.n_models = self.times.shape[0]
        # options not dominated for each model (cheaper-or-equal and faster-or-equal)
        self.useful: list[np.ndarray] = []
        for m in range(self.n_models):
            keep = []
            for o in range(len(self.costs)):
                dom = ((self.costs <= self.costs[o]) & (self.times[m] <= self.times[m, o])
                       & ((self.costs < self.costs[o]) | (self.times[m] < self.times[m, o])))
                if not dom.any() and not any(self.costs[j] == self.costs[o]
                                             and self.times[m, j] == self.times[m, o] for j in keep):
                    keep.append(o)
            self.useful.append(np.array(keep, dtype=int))
        self.min_time = np.array([self.times[m, u].min() for m, u in enumerate(self.useful)])
        self.grid = cost_grid(self.costs)
        self._lambdas = self._breakpoints()
        self._phi: np.ndarray | None = None

    # ---- lower bound -------------------------------------------------------------------------
    def _breakpoints(self) -> np.ndarray:
        lam = {0.0}
        for m, u in enumerate(self.useful):
            c, t = self.costs[u], self.times[m, u]
            for i in range(len(u)):
                for j in range(len(u)):
                    if t[i] > t[j] and c[j] > c[i]:
                        lam.add(float((c[j] - c[i]) / (t[i] - t[j])))
        return np.array(sorted(lam))

    def lower_bounds(self, counts: np.ndarray) -> np.ndarray:
        """Lower bounds on the least cost of each count vector (inf: no allocation fits).

        Parameters
        ----------
        counts : ndarray, shape (N, M)
        """
        counts = np.asarray(counts, dtype=float)
        lam = self._lambdas
        if self._phi is None:  # phi[m, i] = min_o (c_o + lam_i t_mo), computed once
            self._phi = np.empty((self.n_models, len(lam)))
            for m, u in enumerate(self.useful):
                self._phi[m] = (self.costs[u][:, None] + lam[None, :] * self.times[m, u][:, None]).min(axis=0)
        lb = (thin_matmul(counts, self._phi.T) - lam[None, :] * self.limit).max(axis=1)
        lb = lb - 1e-9 * np.abs(lb) - 1e-9  # conservative against round-off
        fastest = matvec(counts, self.min_time)
        return np.where(fastest <= self.limit * (1 + 1e-12), np.maximum(lb, 0.0), np.inf)

    # ---- exact -------------------------------------------------------------------------------
    def solve(self, counts) -> Allocation | None:
        """The cheapest allocation of ``counts`` (epochs per model) within the budget, or None."""
        counts = [int(n) for n in counts]
        if sum(counts) == 0 or dot(np.asarray(counts, dtype=float), self.min_time) > self.limit * (1 + 1e-12):
            return None
        if self.grid is not None:
            unit, units = self.grid
            cap = int(sum(n * int(units[u].max()) for n, u in zip(counts, self.useful, strict=True)))
            if cap <= MAX_UNITS:
                return self._solve_dp(counts, unit, units, cap)
        return self._solve_milp(counts)

    def _solve_dp(self, counts: list[int], unit: float, units: np.ndarray, cap: int) -> Allocation | None:
        # best[C] = least time of the epochs placed so far with total cost exactly C units
        best = np.full(cap + 1, np.inf)
        best[0] = 0.0
        steps: list[tuple[int, np.ndarray]] = []  # (model, argmin option per C) for backtracking
        for m, n in enumerate(counts):
            u = self.useful[m]
            for _ in range(n):
                new = np.full(cap + 1, np.inf)
                arg = np.full(cap + 1, -1, dtype=np.int32)
                for o in u:
                    c = int(units[o])
                    cand = best[: cap + 1 - c] + self.times[m, o]
                    better = cand < new[c:]
                    new[c:][better] = cand[better]
                    arg[c:][better] = o
                best = new
                steps.append((m, arg))
        ok = np.nonzero(best <= self.limit)[0]
        if len(ok) == 0:
            return None
        C = int(ok[0])
        total_time = float(best[C])
        chosen: list[list[int]] = [[] for _ in counts]
        for m, arg in reversed(steps):
            o = int(arg[C])
            chosen[m].append(o)
            C -= int(units[o])
        assert C == 0
        cost = float(sum(self.costs[o] for opts in chosen for o in opts))
        return Allocation(cost, total_time, tuple(tuple(c) for c in chosen), "dp")

    def _solve_milp(self, counts: list[int]) -> Allocation | None:
        import highspy

        pairs = [(m, int(o)) for m, n in enumerate(counts) if n > 0 for o in self.useful[m]]
        rhs = self.limit
        for _ in range(5):  # tighten the budget row if HiGHS' tolerance let the time slip over
            h = new_highs(threads=1)
            h.setOptionValue("mip_rel_gap", 0.0)
            h.setOptionValue("mip_abs_gap", 0.0)
            inf = highspy.kHighsInf
            for m, o in pairs:
                h.addVar(0.0, float(counts[m]))
                h.changeColCost(h.getNumCol() - 1, float(self.costs[o]))
                h.changeColIntegrality(h.getNumCol() - 1, highspy.HighsVarType.kInteger)
            for m, n in enumerate(counts):
                if n > 0:
                    idx = [i for i, (mm, _) in enumerate(pairs) if mm == m]
                    h.addRow(float(n), float(n), len(idx), np.array(idx, dtype=np.int32), np.ones(len(idx)))
            tv = np.array([self.times[m, o] for m, o in pairs])
            h.addRow(-inf, rhs, len(pairs), np.arange(len(pairs), dtype=np.int32), tv)
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            y = np.rint(np.asarray(h.getSolution().col_value)).astype(int)
            chosen: list[list[int]] = [[] for _ in counts]
            for (m, o), k in zip(pairs, y, strict=True):
                chosen[m].extend([o] * int(k))
            total_time = float(sum(self.times[m, o] for m, opts in enumerate(chosen) for o in opts))
            if total_time <= self.limit and all(len(c) == n for c, n in zip(chosen, counts, strict=True)):
                cost = float(sum(self.costs[o] for opts in chosen for o in opts))
                return Allocation(cost, total_time, tuple(tuple(c) for c in chosen), "milp")
            rhs -= max(total_time - self.limit, 0.0) + 1e-9 * max(1.0, abs(self.limit))
        return None


#: most clusters whose every subset is enumerated when transfer costs depend on the set used
MAX_CLUSTERS_WITH_TRANSFER = 8


@dataclass(frozen=True)
class ClusterSet:
    """A set U of clusters a plan may use: its option columns, their allocator and U's transfer cost."""

    clusters: tuple[int, ...]
    cols: tuple[int, ...]
    alloc: Allocator
    transfer: float


def cluster_sets(inst, datasets: tuple[str, ...], opts) -> list[ClusterSet]:
    """The cluster sets an exact method must try for a dataset selection (one definition).

    Without transfer costs on the selection, the set of all clusters (a plan pays nothing for a
    cluster it does not use); with them, every nonempty subset, which is refused
    (:class:`~deplbench.formulations.sequences.Refused`) beyond :data:`MAX_CLUSTERS_WITH_TRANSFER`.
    ``opts`` is :func:`~deplbench.instances.semantics.options` of the selection.
    """
    n_cl = len(inst.clusters)
    if any(inst.transfer_cost(d, c) > 0 for d in datasets for c in inst.cluster_ids):
        if n_cl > MAX_CLUSTERS_WITH_TRANSFER:
            raise Refused(f"{n_cl} clusters with transfer costs: at most {MAX_CLUSTERS_WITH_TRANSFER}")
        sets = list(nonempty_subsets(range(n_cl)))
    else:
        sets = [tuple(range(n_cl))]
    out = []
    for s in sets:
        cols = tuple(int(c) for c in np.nonzero(np.isin(opts.cluster_index, s))[0])
        alloc = Allocator(opts.cost[list(cols)], opts.time[:, list(cols)], inst.time_budget)
        out.append(ClusterSet(tuple(s), cols, alloc, transfer_cost(inst, datasets, [inst.cluster_ids[j] for j in s])))
    return out
