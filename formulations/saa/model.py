"""Backend-neutral SAA MILP of MODEL.md section 5, as sparse matrices.

One dataset selection at a time (g and Q fixed, see :mod:`deplbench.formulations.saa.common`).
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

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from deplbench.errors import InputError
from deplbench.formulations.saa.data import (
    ObjRow,
    RowPlan,
    SubsetData,
    cut_coefs,
    max_switches,
    subset_data,
)
from deplbench.instances.plan import Plan

__all__ = ["FORMULATIONS", "ObjRow", "RowPlan", "SaaModel", "SubsetData", "build", "max_switches",
           "subset_data"]

FORMULATIONS = ("aggregated", "time_indexed")
#: feasibility tolerance of every solver on the SAA rows (the SAA check allows 1e-9 on the loss)
FEAS_TOL = 1e-9
INF = np.inf


class _Cols:
    """Allocates column blocks with bounds, integrality, costs and (optionally) names."""

    def __init__(self, names: bool) -> None:
        self.n = 0
        self.lb: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.integ: list[np.ndarray] = []
        self.cost: list[np.ndarray] = []
        self.names: list[str] | None = [] if names else None

    def block(self, shape, lo, hi, is_int: bool, obj=0.0, label: str = "") -> np.ndarray:
        size = int(np.prod(shape)) if shape else 1
        idx = np.arange(self.n, self.n + size).reshape(shape)
        self.n += size
        self.lb.append(np.broadcast_to(np.asarray(lo, float), (size,)).copy())
        self.ub.append(np.broadcast_to(np.asarray(hi, float), (size,)).copy())
        self.integ.append(np.full(size, is_int))
        self.cost.append(np.broadcast_to(np.asarray(obj, float), shape).ravel().copy())
        if self.names is not None:
            self.names.extend(f"{label}_{'_'.join(map(str, t))}" for t in np.ndindex(*shape))
        return idx


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
    ``cut_rows`` the quantile cuts (loss rows without a big-M term), ``obj_rows`` the rows on
    the objective (quantile bound, mixing inequalities; ``SubsetData.obj_rows``).
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
    obj_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
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
        With its strengthening (``bigm_q``, ``hard``, ``obj_rows``, ``cut_sets``), if any.
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
    cols = _Cols(names)
    z = cols.block((K, M), 0, 1, True, label="z")
    w = cols.block((max(K - 1, 0), P), 0, 1, False, label="w")
    plan = data.row_plan(margin)
    v = cols.block((S,), 0, plan.v_upper(), True, label="v")
    need = data.transfer > 0
    used = np.full(data.n_clusters, -1, dtype=np.int64)
    if need.any():
        used[need] = cols.block((int(need.sum()),), 0, 1, True, data.transfer[need], label="used")
    NO = len(data.opts)
    if formulation == "aggregated":
        n, y = cols.block((M, NO), 0, K, True, np.broadcast_to(data.opts.cost, (M, NO)), label="n"), None
    else:
        n, y = None, cols.block((K, M, NO), 0, 1, True, np.broadcast_to(data.opts.cost, (K, M, NO)), label="y")
    agg = aggregate_runs and data.per_run
    run = cols.block((M,), -INF, INF, False, label="run") if agg else np.zeros(0, dtype=np.int64)
    rows = _Rows()
    stay = _sequence_rows(rows, cols, data, z, w, sequence)
    time_row = _option_rows(rows, data, z, n, y, used)
    if agg:
        for m in range(M):
            rows.add(np.append(run[m], z[:, m]), np.append(1.0, -data.gain[m]), 0.0, 0.0)
    zc = run if agg else z.T.ravel()  # z.T: (M, K) matches imp[s] layout
    sw, wc = _penalty_columns(rows, cols, data, w)
    rhs = data.target - margin - data.l0
    pen = data.grouped_pen()  # (S, G, K-1)
    scen_rows = _scenario_rows(rows, data, plan, zc, wc, v, pen, agg, rhs)
    # quantile cuts: one scenario of each set T (|T| = allowed + 1) holds, so the row of
    # element-wise least coefficients over T holds too (all columns are >= 0)
    cut_rows = np.array([rows.add(np.concatenate([zc, wc]), cut_coefs(data, T, agg, pen), -INF, rhs)
                         for T in data.cut_sets], dtype=np.int64)
    c = np.concatenate(cols.cost)
    obj_rows = _objective_rows(rows, data, c, v)
    return SaaModel(
        data=data, formulation=formulation, c=c, lb=np.concatenate(cols.lb),
        ub=np.concatenate(cols.ub), integer=np.concatenate(cols.integ), A=rows.matrix(cols.n),
        row_lb=np.array(rows.lb), row_ub=np.array(rows.ub), z=z, w=w, v=v, used=used, n=n, y=y,
        run=run, scen_rows=scen_rows, time_row=time_row, cut_rows=cut_rows, names=cols.names or [],
        stay=stay, sw=sw, loss_cols=np.concatenate([zc, wc]), obj_rows=obj_rows)


def _sequence_rows(rows: _Rows, cols: _Cols, data: SubsetData, z: np.ndarray, w: np.ndarray,
                   sequence: str) -> np.ndarray:
    """Model-sequence rows (flow or adjacency) and the switch-count cut; the ``stay`` block."""
    K, M = z.shape
    if sequence == "flow":
        stay = cols.block((max(K - 1, 0), M), 0, 1, False, label="stay")
        _flow_rows(rows, data, z, w, stay)
    else:
        stay = np.zeros((0, M), dtype=np.int64)
        _adjacency_rows(rows, data, z, w)
    # valid cut: no plan switches more often than the longest path of the switch graph
    if len(data.switches) and K > 1 and data.max_switches < K - 1:
        rows.add(w.ravel(), 1.0, -INF, float(data.max_switches))
    return stay


def _option_rows(rows: _Rows, data: SubsetData, z: np.ndarray, n, y, used: np.ndarray) -> int:
    """Link options to the model sequence, the time budget, clusters that receive data; the time row."""
    K, M = z.shape
    NO = len(data.opts)
    tm, ci = data.opts.time, data.opts.cluster_index
    need = np.flatnonzero(data.transfer > 0)
    if n is not None:
        for m in range(M):
            rows.add(np.concatenate([n[m], z[:, m]]), np.concatenate([np.ones(NO), -np.ones(K)]), 0.0, 0.0)
        time_row = rows.add(n.ravel(), tm.ravel(), -INF, data.budget)
        for j in need:
            cj = n[:, ci == j].ravel()
            rows.add(np.append(cj, used[j]), np.append(np.ones(len(cj)), -K), -INF, 0.0)
        return time_row
    for k in range(K):
        for m in range(M):
            rows.add(np.append(y[k, m], z[k, m]), np.append(np.ones(NO), -1.0), 0.0, 0.0)
    time_row = rows.add(y.ravel(), np.broadcast_to(tm, (K, M, NO)).ravel(), -INF, data.budget)
    for j in need:
        for k in range(K):
            cj = y[k][:, ci == j].ravel()
            rows.add(np.append(cj, used[j]), np.append(np.ones(len(cj)), -1.0), -INF, 0.0)
    return time_row


def _penalty_columns(rows: _Rows, cols: _Cols, data: SubsetData, w: np.ndarray):
    """Penalty columns of the loss rows: one per group of identical switches and epoch, or ``w``."""
    K1, P = w.shape
    groups = data.penalty_groups()
    if len(groups) < P:
        sw = cols.block((K1, len(groups)), 0, 1, False, label="sw")
        for k in range(K1):
            for gi, grp in enumerate(groups):
                rows.add([sw[k, gi], *w[k, list(grp)]], [1.0] + [-1.0] * len(grp), 0.0, 0.0)
        return sw, sw.T.ravel()
    return np.zeros((0, 0), dtype=np.int64), w.T.ravel()  # (P, K-1) matches pen[s, :, 1:]


def _scenario_rows(rows: _Rows, data: SubsetData, plan: RowPlan, zc, wc, v, pen, agg: bool,
                   rhs: float) -> np.ndarray:
    """Scenario s: ``l0 - improvements + penalties <= target - margin + M_s v_s`` (hard: no v)."""
    S = data.S
    scen_rows = np.full(S, -1, dtype=np.int64)
    for s in range(S):
        if plan.drop[s]:
            continue
        zcoef = -data.x_run[s] if agg else -data.imp[s].ravel()
        if plan.hard[s]:
            scen_rows[s] = rows.add(np.concatenate([zc, wc]), np.concatenate([zcoef, pen[s].ravel()]), -INF, rhs)
            continue
        scen_rows[s] = rows.add(np.concatenate([zc, wc, [v[s]]]),
                                np.concatenate([zcoef, pen[s].ravel(), [-plan.bigm[s]]]), -INF, rhs)
    rows.add(v, np.ones(S), -INF, float(data.allowed))
    return scen_rows


def _objective_rows(rows: _Rows, data: SubsetData, c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows ``c x + sum coef v >= rhs`` of ``data.obj_rows`` (valid: see ``saa_strength``)."""
    nz = np.flatnonzero(c)
    out = [rows.add(np.concatenate([nz, v[r.scen]]), np.concatenate([c[nz], r.coef]), r.rhs, INF)
           for r in data.obj_rows]
    return np.array(out, dtype=np.int64)
