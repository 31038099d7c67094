"""Numbers of the SAA of one dataset selection (MODEL.md section 5), as arrays.

:func:`subset_data` turns an instance, a dataset selection and a scenario sample into a
:class:`SubsetData`; :mod:`deplbench.formulations.saa.model` assembles the MILP from it and
:mod:`deplbench.formulations.saa.strength` attaches the strengthening (quantile big-M,
fixed scenarios, objective rows) that every backend writes alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import Scenarios, allowed_violations
from deplbench.instances.semantics import Options, data_effect, options, progress_matrix


class PastDeadline(Exception):
    """The deadline passed inside a long step of an SAA method (the long block columns, a model
    build): its partial result is dropped as a whole."""


#: rows (scenario rows of a model build) between two looks at the clock
ROWS_PER_CHECK = 256


def check_deadline(deadline: float) -> None:
    """Raise :class:`PastDeadline` once ``time.perf_counter()`` is past ``deadline``."""
    if time.perf_counter() > deadline:
        raise PastDeadline


@dataclass(frozen=True)
class ObjRow:
    """A valid row on the objective: ``cost(x) + sum_i coef[i] v[scen[i]] >= rhs``."""

    scen: np.ndarray
    coef: np.ndarray
    rhs: float


@dataclass(frozen=True)
class RowPlan:
    """How each scenario row is written: ``drop`` (implied by the column bounds, ``v = 0``),
    ``hard`` (fixed: the row without ``v``, ``v = 0``), else ``loss <= rhs + bigm v``."""

    drop: np.ndarray
    hard: np.ndarray
    bigm: np.ndarray

    def v_upper(self) -> np.ndarray:
        return np.where(self.drop | self.hard, 0.0, 1.0)


@dataclass(frozen=True)
class SubsetData:
    """Numbers of the SAA for one dataset selection.

    ``imp[s, m, k]`` is the loss improvement ``g a_m(k+1) x[s, m, k]`` of model m at
    epoch k+1; ``pen[s, p, k]`` the penalty of switch p at epoch k+1; ``big_m[s]``
    the big-M of scenario s (<= 0: the scenario can never be violated).
    """

    datasets: tuple[str, ...]
    g: float
    opts: Options
    models: tuple[str, ...]
    K: int
    l0: float
    target: float
    budget: float
    imp: np.ndarray  # (S, M, K)
    pen: np.ndarray  # (S, P, K)
    switches: tuple[tuple[int, int], ...]  # (from, to) model indices of each listed switch
    forbidden: dict[int, tuple[int, ...]]  # from model -> models it may not switch to
    transfer: np.ndarray  # per cluster: one-time cost of the selection there
    n_clusters: int
    allowed: int
    per_run: bool
    max_switches: int  # most switches any plan can make (longest path of the switch graph)
    gain: np.ndarray  # (M, K): g a_m(k+1), used by the per_run aggregation
    x_run: np.ndarray  # (S, M): per_run factors
    cut_sets: tuple[np.ndarray, ...] = ()  # scenario sets of the quantile cuts (quantile_cut_sets)
    bigm_q: np.ndarray | None = None  # (S,) quantile big-M at margin 0 (saa_strength), or None
    hard: np.ndarray | None = None  # (S,) bool: scenarios fixed as satisfied (saa_strength)
    obj_rows: tuple[ObjRow, ...] = ()  # objective cut and mixing rows (saa_strength)
    mixing: tuple[np.ndarray, float] | None = None  # (h, psi) of the cost mixing set, for separation
    start: object | None = None  # a Plan meeting the SAA on this sample (saa_blocks.start_plan), or None

    @property
    def S(self) -> int:
        return self.imp.shape[0]

    def penalty_groups(self) -> tuple[tuple[int, ...], ...]:
        """Switches whose penalty draws are identical in every scenario and epoch, grouped.

        Only one switch can happen per epoch, so a scenario row needs one penalty column
        per group and epoch (``sw[k, g] = sum_{p in g} w[k, p]``) instead of one per switch.
        """
        groups: list[list[int]] = []
        for p in range(self.pen.shape[1]):
            for grp in groups:
                if np.array_equal(self.pen[:, grp[0], 1:], self.pen[:, p, 1:]):
                    grp.append(p)
                    break
            else:
                groups.append([p])
        return tuple(tuple(g) for g in groups)

    def grouped_pen(self) -> np.ndarray:
        """Penalties on the group columns, shape (S, groups, K-1)."""
        reps = [g[0] for g in self.penalty_groups()]
        return self.pen[:, reps, 1:]

    def big_m(self, margin: float) -> np.ndarray:
        """Largest loss any plan can have in each scenario, minus the row's right-hand side.

        Only terms that can raise the loss count: an epoch adds at most
        ``max(0, max_m -imp)`` (epoch 1 is always active: exactly ``max_m -imp``);
        switches add at most the ``max_switches`` largest positive values of
        ``max_p pen`` over the epochs.
        """
        worst = -self.imp.min(axis=1)  # (S, K)
        up = worst[:, 0] + np.maximum(worst[:, 1:], 0.0).sum(axis=1)
        L = self.max_switches
        if self.pen.shape[1] and L > 0 and self.K > 1:
            top = np.maximum(self.pen[:, :, 1:].max(axis=1), 0.0)  # (S, K-1)
            if L < top.shape[1]:
                top = -np.partition(-top, L - 1, axis=1)[:, :L]
            up = up + top.sum(axis=1)
        return self.l0 + up - (self.target - margin)

    def row_plan(self, margin: float) -> RowPlan:
        """Big-M, dropped and fixed scenario rows at ``margin`` (shared by every backend).

        A row whose worst-case big-M is <= 0 holds for every plan and is dropped. With a
        quantile big-M (valid for SAA-feasible plans only) the row is kept: as a hard row
        where ``hard`` says so, else with coefficient ``max(bigm_q + margin, 0)``.
        """
        worst = self.big_m(margin)
        drop = worst <= 0
        bigm = worst if self.bigm_q is None else np.minimum(worst, self.bigm_q + margin)
        hard = np.zeros(self.S, dtype=bool) if self.hard is None else self.hard & ~drop
        return RowPlan(drop, hard, np.maximum(bigm, 0.0))


def plan_of_runs(data: SubsetData, runs, options) -> Plan:
    """The plan of model runs ``runs`` ((model index, epochs), ...) whose epochs of model m take
    the options ``options[m]`` in order (an allocation's per-model option lists)."""
    queue = {m: list(options[m]) for m in range(len(data.models))}
    epochs = []
    for m, n in runs:
        for _ in range(n):
            o = queue[m].pop(0)
            epochs.append((data.models[m], data.opts.clusters[o], data.opts.levels[o]))
    return Plan.from_epochs(data.datasets, epochs)


#: most exact allocations tried for a start plan
MAX_ALLOCATIONS = 200


def cheapest_start(data: SubsetData, alloc, candidates, deadline: float) -> tuple[Plan, float] | None:
    """The cheapest allocated plan among ``candidates`` ((cost lower bound, counts, runs), in
    the order to try), and its cost; None if none has an allocation.

    Stops at the first bound that reaches the best cost so far (the candidates come in bound
    order), after :data:`MAX_ALLOCATIONS` allocations or at ``deadline`` (``time.perf_counter()``).
    """
    best, best_cost = None, np.inf
    for t, (bound, counts, runs) in enumerate(candidates):
        if t >= MAX_ALLOCATIONS or bound >= best_cost or time.perf_counter() > deadline:
            break
        a = alloc.solve(counts)
        if a is not None and a.cost < best_cost:
            best, best_cost = (runs, a), a.cost
    if best is None:
        return None
    runs, a = best
    return plan_of_runs(data, runs, a.options), float(a.cost)


def subset_data(instance, datasets, sc: Scenarios) -> SubsetData:
    """Arrays of the SAA for the selection ``datasets`` (its g must be > 0)."""
    de = data_effect(instance, datasets)
    if not de.g > 0:
        raise ValueError(f"g = {de.g} <= 0 for {datasets}")
    K = instance.max_epochs
    mids = instance.model_ids
    midx = {m: i for i, m in enumerate(mids)}
    gain = progress_matrix(instance, de.g, K)  # (M, K)
    imp = gain[None, :, :] * sc.x
    sw = tuple((midx[s.from_], midx[s.to]) for s in instance.switches)
    forbidden = {a: tuple(b for b in range(len(mids)) if b != a and not instance.allowed(mids[a], mids[b]))
                 for a in range(len(mids))}
    transfer = np.array([sum(instance.transfer_cost(d, c) for d in datasets) for c in instance.cluster_ids])
    return SubsetData(
        datasets=tuple(datasets), g=de.g, opts=options(instance, datasets), models=mids, K=K,
        l0=instance.loss.initial, target=instance.loss.target, budget=instance.time_budget,
        imp=imp, pen=sc.penalty, switches=sw, forbidden={a: f for a, f in forbidden.items() if f},
        transfer=transfer, n_clusters=len(instance.clusters),
        allowed=allowed_violations(instance.loss.quantile, sc.n),
        per_run=instance.noise_mode == "per_run", max_switches=max_switches(instance),
        gain=gain, x_run=sc.x[:, :, 0])


def max_switches(instance) -> int:
    """Longest path (in edges) of the switch graph, or ``max_epochs - 1`` if it has a cycle."""
    K1 = max(instance.max_epochs - 1, 0)
    succ: dict[str, list[str]] = {}
    for s in instance.switches:
        succ.setdefault(s.from_, []).append(s.to)
    memo: dict[str, int] = {}
    active: set[str] = set()

    def longest(m: str) -> int:
        if m in memo:
            return memo[m]
        if m in active:
            raise RecursionError
        active.add(m)
        memo[m] = max((1 + longest(b) for b in succ.get(m, ())), default=0)
        active.discard(m)
        return memo[m]

    try:
        return min(K1, max((longest(m) for m in instance.model_ids), default=0))
    except RecursionError:  # a cycle: no bound but the horizon
        return K1


def cut_coefs(data: SubsetData, T: np.ndarray, agg: bool, pen: np.ndarray | None = None) -> np.ndarray:
    """Coefficients of the quantile cut of set T on the loss columns ``[run or z.T, sw.T or w.T]``.

    ``pen`` is :meth:`SubsetData.grouped_pen` (computed if not given).
    """
    pen = data.grouped_pen() if pen is None else pen
    zcoef = -data.x_run[T].max(axis=0) if agg else -data.imp[T].max(axis=0).ravel()
    return np.concatenate([zcoef, pen[T].min(axis=0).ravel()])
