"""Backend-neutral SAA MILP of MODEL.md section 5, as sparse matrices.

One dataset selection at a time (g and Q fixed, see :mod:`deplbench.formulations.saa_common`).
:func:`subset_data` turns an instance, a selection and a scenario sample into
numeric arrays; :func:`build` assembles either formulation

* ``aggregated``: model per epoch ``z[k,m]`` plus integer counts ``n[m,o]`` of
  epochs of model m on option o (cluster, level); cost and time use the counts;
* ``time_indexed``: ``y[k,m,o]`` binaries, one per epoch, model and option;

as ``min c x  s.t.  row_lb <= A x <= row_ub,  lb <= x <= ub,  x_j integer`` and
:meth:`SaaModel.decode` turns a solution vector back into a :class:`Plan`.
The formulation is documented in ``docs/formulations.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from deplbench.errors import InputError
from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import Scenarios, allowed_violations
from deplbench.instances.semantics import Options, data_effect, options, progress_matrix

FORMULATIONS = ("aggregated", "time_indexed")
INF = np.inf


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


class _Rows:
    """Collects sparse rows ``lb <= sum coef x <= ub``."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lb: list[float] = []
        self.ub: list[float] = []

    def add(self, cols, coefs, lb: float, ub: float) -> int:
        cols = np.asarray(cols, dtype=np.int64).ravel()
        self.r.append(np.full(len(cols), len(self.lb), dtype=np.int64))
        self.c.append(cols)
        self.v.append(np.broadcast_to(np.asarray(coefs, dtype=float), cols.shape).ravel())
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.lb) - 1

    def matrix(self, n_cols: int) -> sp.csr_matrix:
        if not self.lb:
            return sp.csr_matrix((0, n_cols))
        return sp.csr_matrix((np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
                             shape=(len(self.lb), n_cols))


@dataclass
class SaaModel:
    """``min c x + offset`` s.t. ``row_lb <= A x <= row_ub``, ``lb <= x <= ub``, ``integer[j]``.

    Column blocks (index arrays into x): ``z[k, m]``, ``w[k-1, p]`` (switch p at epoch k+1,
    continuous AND), ``v[s]``, ``used[j]`` (-1 when cluster j has no transfer cost),
    ``n[m, o]`` or ``y[k, m, o]``, ``run[m]`` (per_run aggregation, or empty).
    ``scen_rows[s]`` is the row of scenario s (-1 if dropped), ``time_row`` the budget row,
    ``cut_rows`` the quantile cuts (loss rows without a big-M term).
    """

    data: SubsetData
    formulation: str
    c: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integer: np.ndarray
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    z: np.ndarray
    w: np.ndarray
    v: np.ndarray
    used: np.ndarray
    n: np.ndarray | None
    y: np.ndarray | None
    run: np.ndarray
    scen_rows: np.ndarray
    time_row: int
    cut_rows: np.ndarray
    names: list[str] = field(default_factory=list)
    offset: float = 0.0
    stay: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    loss_cols: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sw: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))

    @property
    def n_vars(self) -> int:
        return len(self.c)

    @property
    def n_cons(self) -> int:
        return len(self.row_lb)

    def decode(self, x: np.ndarray) -> Plan:
        """The plan of a solution vector (integers rounded)."""
        x = np.asarray(x, dtype=float)
        z = x[self.z]
        if self.formulation == "aggregated":
            return decode_aggregated(self.data, z, x[self.n])
        return decode_time_indexed(self.data, z, x[self.y])


def _epoch_models(data: SubsetData, z: np.ndarray) -> list[int]:
    zr = np.rint(z).astype(int)
    models = []
    for k in range(data.K):
        on = np.flatnonzero(zr[k])
        if len(on) == 0:
            break
        models.append(int(on[0]))
    return models


def decode_aggregated(data: SubsetData, z: np.ndarray, n: np.ndarray) -> Plan:
    """Plan from ``z[k, m]`` and counts ``n[m, o]``: each model's epochs take its options in order."""
    models = _epoch_models(data, z)
    counts = np.rint(n).astype(int)
    queue = {m: [o for o in range(counts.shape[1]) for _ in range(counts[m, o])] for m in range(counts.shape[0])}
    epochs = []
    for m in models:
        if not queue[m]:
            raise ValueError("decoded counts n[m,o] do not match the epochs of z")
        o = queue[m].pop(0)
        epochs.append((data.models[m], data.opts.clusters[o], data.opts.levels[o]))
    return Plan.from_epochs(data.datasets, epochs)


def decode_time_indexed(data: SubsetData, z: np.ndarray, y: np.ndarray) -> Plan:
    """Plan from ``z[k, m]`` and ``y[k, m, o]``."""
    models = _epoch_models(data, z)
    epochs = []
    for k, m in enumerate(models):
        o = int(np.argmax(y[k, m]))
        epochs.append((data.models[m], data.opts.clusters[o], data.opts.levels[o]))
    return Plan.from_epochs(data.datasets, epochs)


def _adjacency_rows(rows: _Rows, data: SubsetData, z: np.ndarray, w: np.ndarray) -> None:
    """Per-epoch binaries with adjacency rows (the paper's reading; weak LP relaxation)."""
    K, M = z.shape
    one = np.ones(M)
    # exactly one model in epoch 1, at most one later, epochs used contiguously from 1
    rows.add(z[0], one, 1.0, 1.0)
    for k in range(1, K):
        rows.add(z[k], one, -INF, 1.0)
        rows.add(np.concatenate([z[k], z[k - 1]]), np.concatenate([one, -one]), -INF, 0.0)
    # forbidden switches: model a at k-1 excludes every b it may not switch to at k
    for k in range(1, K):
        for a, bs in data.forbidden.items():
            rows.add([z[k - 1, a], *z[k, list(bs)]], 1.0, -INF, 1.0)
    # w[k-1, p] = z[k-1, a] AND z[k, b] (exact: penalties may be negative)
    for k in range(1, K):
        for p, (a, b) in enumerate(data.switches):
            rows.add([w[k - 1, p], z[k - 1, a]], [1.0, -1.0], -INF, 0.0)
            rows.add([w[k - 1, p], z[k, b]], [1.0, -1.0], -INF, 0.0)
            rows.add([w[k - 1, p], z[k - 1, a], z[k, b]], [1.0, -1.0, -1.0], -1.0, INF)


def _flow_rows(rows: _Rows, data: SubsetData, z: np.ndarray, w: np.ndarray, stay: np.ndarray) -> None:
    """Model sequence as a unit flow through the time-expanded switch graph.

    Node (k, m) carries ``z[k, m]``; arcs (k-1, m) -> (k, m) carry ``stay[k-1, m]``, arcs
    (k-1, a) -> (k, b) of a listed switch p = (a, b) carry ``w[k-1, p]``, and the slack of
    an outflow row is the arc to the sink (training ends after epoch k). Inflow of (k, b):
    ``z[k, b] = stay + sum_{p to b} w``; outflow of (k-1, a): ``stay + sum_{p from a} w <= z[k-1, a]``.
    The constraint matrix of these rows is a network matrix, so their polytope is the convex
    hull of the allowed model sequences (cycles in the switch graph included), and ``w`` is
    the exact switch indicator for integer ``z`` (no AND rows needed).
    """
    K, M = z.shape
    rows.add(z[0], np.ones(M), 1.0, 1.0)
    into = {b: [p for p, (_, t) in enumerate(data.switches) if t == b] for b in range(M)}
    out = {a: [p for p, (f, _) in enumerate(data.switches) if f == a] for a in range(M)}
    for k in range(1, K):
        for m in range(M):
            cols = [z[k, m], stay[k - 1, m], *w[k - 1, into[m]]]
            rows.add(cols, [1.0, -1.0] + [-1.0] * len(into[m]), 0.0, 0.0)
            cols = [stay[k - 1, m], *w[k - 1, out[m]], z[k - 1, m]]
            rows.add(cols, [1.0] * (1 + len(out[m])) + [-1.0], -INF, 0.0)


def build(data: SubsetData, formulation: str = "aggregated", *, margin: float = 0.0,
          aggregate_runs: bool = True, names: bool = False, sequence: str = "flow") -> SaaModel:
    """Assemble the SAA MILP of one dataset selection.

    Parameters
    ----------
    data : SubsetData
    formulation : {"aggregated", "time_indexed"}
    margin : float
        Scenario rows use ``loss <= target - margin``.
    aggregate_runs : bool
        In ``per_run`` mode, write the improvement as ``sum_m x[s,m] run[m]`` with
        continuous ``run[m] = sum_k g a_m(k) z[k,m]`` (fewer nonzeros, same model);
        backends that need integer columns (CP-SAT) pass False.
    names : bool
        Fill ``SaaModel.names`` (for LP/MPS export).
    sequence : {"flow", "adjacency"}
        Rows of the model sequence: a unit flow through the time-expanded switch graph
        (default; the LP relaxation of these rows is the convex hull of the sequences) or
        the per-epoch adjacency rows (one model per epoch, contiguity, forbidden switches,
        ``w`` as an AND), kept for comparison.
    """
    if formulation not in FORMULATIONS:
        raise InputError(f"formulation must be one of {', '.join(FORMULATIONS)}", "--set", "formulation")
    S, M, K = data.imp.shape
    P = len(data.switches)
    NO = len(data.opts)
    J = data.n_clusters
    col = 0
    lb: list[np.ndarray] = []
    ub: list[np.ndarray] = []
    integ: list[np.ndarray] = []
    cost: list[np.ndarray] = []
    nm: list[str] = []

    def block(shape, lo, hi, is_int, obj=0.0, label=None):
        nonlocal col
        size = int(np.prod(shape)) if shape else 1
        idx = np.arange(col, col + size).reshape(shape)
        col += size
        lb.append(np.broadcast_to(np.asarray(lo, float), (size,)).copy())
        ub.append(np.broadcast_to(np.asarray(hi, float), (size,)).copy())
        integ.append(np.full(size, is_int))
        cost.append(np.broadcast_to(np.asarray(obj, float), shape).ravel().copy())
        if names:
            nm.extend(f"{label}_{'_'.join(map(str, t))}" for t in np.ndindex(*shape))
        return idx

    z = block((K, M), 0, 1, True, label="z")
    w = block((max(K - 1, 0), P), 0, 1, False, label="w")
    bigm = data.big_m(margin)
    v = block((S,), 0, np.where(bigm > 0, 1.0, 0.0), True, label="v")
    need = data.transfer > 0
    used = np.full(J, -1, dtype=np.int64)
    if need.any():
        used[need] = block((int(need.sum()),), 0, 1, True, data.transfer[need], label="used")
    if formulation == "aggregated":
        n = block((M, NO), 0, K, True, np.broadcast_to(data.opts.cost, (M, NO)), label="n")
        y = None
    else:
        n = None
        y = block((K, M, NO), 0, 1, True, np.broadcast_to(data.opts.cost, (K, M, NO)), label="y")
    agg = aggregate_runs and data.per_run
    run = block((M,), -INF, INF, False, label="run") if agg else np.zeros(0, dtype=np.int64)

    rows = _Rows()
    if sequence == "flow":
        stay = block((max(K - 1, 0), M), 0, 1, False, label="stay")
        _flow_rows(rows, data, z, w, stay)
    else:
        stay = np.zeros((0, M), dtype=np.int64)
        _adjacency_rows(rows, data, z, w)
    # valid cut: no plan switches more often than the longest path of the switch graph
    if P and K > 1 and data.max_switches < K - 1:
        rows.add(w.ravel(), 1.0, -INF, float(data.max_switches))
    # link options to the model sequence, time budget, clusters that receive data
    tm = data.opts.time
    ci = data.opts.cluster_index
    if formulation == "aggregated":
        for m in range(M):
            rows.add(np.concatenate([n[m], z[:, m]]), np.concatenate([np.ones(NO), -np.ones(K)]), 0.0, 0.0)
        time_row = rows.add(n.ravel(), tm.ravel(), -INF, data.budget)
        for j in np.flatnonzero(need):
            cols = n[:, ci == j].ravel()
            rows.add(np.append(cols, used[j]), np.append(np.ones(len(cols)), -K), -INF, 0.0)
    else:
        for k in range(K):
            for m in range(M):
                rows.add(np.append(y[k, m], z[k, m]), np.append(np.ones(NO), -1.0), 0.0, 0.0)
        time_row = rows.add(y.ravel(), np.broadcast_to(tm, (K, M, NO)).ravel(), -INF, data.budget)
        for j in np.flatnonzero(need):
            for k in range(K):
                cols = y[k][:, ci == j].ravel()
                rows.add(np.append(cols, used[j]), np.append(np.ones(len(cols)), -1.0), -INF, 0.0)
    if agg:
        for m in range(M):
            rows.add(np.append(run[m], z[:, m]), np.append(1.0, -data.gain[m]), 0.0, 0.0)
    # scenario s: l0 - improvements + penalties <= target - margin + M_s v_s
    rhs = data.target - margin - data.l0
    scen_rows = np.full(S, -1, dtype=np.int64)
    zc = run if agg else z.T.ravel()  # z.T: (M, K) matches imp[s] layout
    groups = data.penalty_groups()
    pen = data.grouped_pen()  # (S, G, K-1)
    if len(groups) < P:  # one penalty column per group of identical switches and epoch
        sw = block((max(K - 1, 0), len(groups)), 0, 1, False, label="sw")
        for k in range(K - 1):
            for gi, grp in enumerate(groups):
                rows.add([sw[k, gi], *w[k, list(grp)]], [1.0] + [-1.0] * len(grp), 0.0, 0.0)
        wc = sw.T.ravel()
    else:
        sw = np.zeros((0, 0), dtype=np.int64)
        wc = w.T.ravel()  # (P, K-1) matches pen[s, :, 1:]
    for s in range(S):
        if bigm[s] <= 0:
            continue
        zcoef = -data.x_run[s] if agg else -data.imp[s].ravel()
        cols = [zc, wc, [v[s]]]
        coefs = [zcoef, pen[s].ravel(), [-bigm[s]]]
        scen_rows[s] = rows.add(np.concatenate(cols), np.concatenate(coefs), -INF, rhs)
    rows.add(v, np.ones(S), -INF, float(data.allowed))
    # quantile cuts: one scenario of each set T (|T| = allowed + 1) holds, so the row of
    # element-wise least coefficients over T holds too (all columns are >= 0)
    cut_rows = np.array([rows.add(np.concatenate([zc, wc]), cut_coefs(data, T, agg, pen), -INF, rhs)
                         for T in data.cut_sets], dtype=np.int64)

    return SaaModel(
        data=data, formulation=formulation, c=np.concatenate(cost), lb=np.concatenate(lb),
        ub=np.concatenate(ub), integer=np.concatenate(integ), A=rows.matrix(col),
        row_lb=np.array(rows.lb), row_ub=np.array(rows.ub), z=z, w=w, v=v, used=used, n=n, y=y,
        run=run, scen_rows=scen_rows, time_row=time_row, cut_rows=cut_rows, names=nm, stay=stay, sw=sw,
        loss_cols=np.concatenate([zc, wc]))


def cut_coefs(data: SubsetData, T: np.ndarray, agg: bool, pen: np.ndarray | None = None) -> np.ndarray:
    """Coefficients of the quantile cut of set T on the loss columns ``[run or z.T, sw.T or w.T]``.

    ``pen`` is :meth:`SubsetData.grouped_pen` (computed if not given).
    """
    pen = data.grouped_pen() if pen is None else pen
    zcoef = -data.x_run[T].max(axis=0) if agg else -data.imp[T].max(axis=0).ravel()
    return np.concatenate([zcoef, pen[T].min(axis=0).ravel()])


def quantile_cut_sets(data: SubsetData, rounds: int = 30, tol: float = 1e-6) -> tuple[np.ndarray, ...]:
    """Scenario sets T (``allowed + 1`` scenarios each) whose quantile cuts tighten the LP.

    Static sets: for each model, the scenarios where it progresses least. Then a few rounds
    of separation on the LP relaxation: T = the ``allowed + 1`` scenarios whose loss row
    (without its big-M term) is highest at the LP optimum, kept while its cut is violated.
    """
    import highspy

    from deplbench.formulations.highs_direct import to_highs_lp

    S, M, _ = data.imp.shape
    a1 = data.allowed + 1
    if a1 > S:
        return ()
    key = data.x_run if data.per_run else data.imp.sum(axis=2)
    sets = [np.sort(np.argsort(key[:, m], kind="stable")[:a1]) for m in range(M)]
    if rounds <= 0:
        return tuple(sets)
    model = build(replace(data, cut_sets=tuple(sets)), "aggregated")
    lp = to_highs_lp(model)
    lp.integrality_ = []
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    rows = model.scen_rows
    live = rows >= 0
    A = model.A[rows[live]]
    bigm = data.big_m(0.0)[live]
    idx = np.flatnonzero(live)
    rhs = data.target - data.l0
    cols = model.loss_cols
    pen = data.grouped_pen()
    for _ in range(rounds):
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            break
        x = np.asarray(h.getSolution().col_value)
        act = A @ x + bigm * x[model.v[idx]]  # loss row activity without the v term
        T = np.sort(idx[np.argsort(-act, kind="stable")[:a1]])
        if len(T) < a1:
            break
        coefs = cut_coefs(data, T, data.per_run, pen)
        if coefs @ x[cols] <= rhs + tol:
            break
        sets.append(T)
        h.addRow(-highspy.kHighsInf, rhs, len(cols), cols.astype(np.int32), coefs)
    return tuple(sets)
