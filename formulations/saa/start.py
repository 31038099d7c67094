"""MIP starts for the SAA MILPs: a plan as a solution vector, and a good plan by enumeration.

:func:`encode` writes any plan of a dataset selection as a column vector of a
:class:`~deplbench.formulations.saa.model.SaaModel` (the inverse of ``decode``); the tests
use it to check that every SAA-feasible plan satisfies every row, cut included.
:func:`enumerated_start` finds a cheap SAA-feasible plan in ``per_run`` mode: it evaluates
every model sequence allowed by the switch graph on the sample (losses depend on the
sequence only), then allocates options exactly to the count vectors in order of their
Lagrangian lower bound. It is only a starting point: optimality is left to the solver.
"""

from __future__ import annotations

import time

import numpy as np

from deplbench.formulations.allocation import Allocator
from deplbench.formulations.saa.blocks import cumulative
from deplbench.formulations.saa.data import cheapest_start
from deplbench.formulations.saa.model import SaaModel, SubsetData
from deplbench.formulations.sequences import Refused, enumerate_sequences
from deplbench.instances.plan import Plan
from deplbench.numeric import thin_matmul

#: most sequences enumerated for a start (beyond it: no start)
MAX_START_SEQUENCES = 200_000
#: sequences evaluated per batch (an (S, CHUNK) loss array)
CHUNK = 2000


def encode(model: SaaModel, plan: Plan) -> np.ndarray:
    """The column vector of ``plan`` (of ``model``'s dataset selection) in ``model``.

    ``v[s]`` is 1 exactly where the plan's scenario row is violated (its loss exceeds the
    right-hand side). Raises ``ValueError`` for a plan that does not fit the model
    (forbidden switch, too many epochs, unknown option).
    """
    d = model.data
    S, M, K = d.imp.shape
    midx = {m: i for i, m in enumerate(d.models)}
    oidx = {(c, f): o for o, (c, f) in enumerate(zip(d.opts.clusters, d.opts.levels, strict=True))}
    epochs = [(midx[s.model], oidx[(s.cluster, float(s.level))]) for s in plan.segments for _ in range(s.epochs)]
    if not 1 <= len(epochs) <= K:
        raise ValueError(f"{len(epochs)} epochs do not fit 1..{K}")
    x = np.zeros(model.n_vars)
    z = np.zeros((K, M))
    for k, (m, o) in enumerate(epochs):
        z[k, m] = 1.0
        if model.formulation == "aggregated":
            x[model.n[m, o]] += 1.0
        else:
            x[model.y[k, m, o]] = 1.0
    x[model.z] = z
    pidx = {sw: p for p, sw in enumerate(d.switches)}
    wv = np.zeros(model.w.shape)
    for k in range(1, len(epochs)):
        a, b = epochs[k - 1][0], epochs[k][0]
        if a == b:
            if model.stay.size:
                x[model.stay[k - 1, a]] = 1.0
        elif (a, b) in pidx:
            wv[k - 1, pidx[(a, b)]] = 1.0
        else:
            raise ValueError(f"forbidden switch {d.models[a]} -> {d.models[b]}")
    x[model.w] = wv
    if model.sw.size:
        for g, grp in enumerate(d.penalty_groups()):
            x[model.sw[:, g]] = wv[:, list(grp)].sum(axis=1)
    if model.run.size:
        x[model.run] = (d.gain * z.T).sum(axis=1)
    for j in np.flatnonzero(model.used >= 0):
        x[model.used[j]] = float(any(d.opts.cluster_index[o] == j for _, o in epochs))
    # v: the loss of every scenario row, as the rows compute it
    live = model.scen_rows >= 0
    act = model.A[model.scen_rows[live]] @ x
    x[model.v[live]] = (act > model.row_ub[model.scen_rows[live]]).astype(float)
    return x


def sequence_losses(data: SubsetData, runs: list[tuple[tuple[int, int], ...]]) -> np.ndarray:
    """Loss of each run-length encoded sequence in every scenario, shape (S, Q)."""
    if not data.per_run:
        return _epoch_losses(data, runs)
    cum = np.concatenate([np.zeros((data.gain.shape[0], 1)), np.cumsum(data.gain, axis=1)], axis=1)
    G = np.zeros((len(runs), data.gain.shape[0]))
    pen = np.zeros((data.S, len(runs)))
    pidx = {sw: p for p, sw in enumerate(data.switches)}
    for q, seq in enumerate(runs):
        k = 0
        for i, (m, n) in enumerate(seq):
            G[q, m] += cum[m, k + n] - cum[m, k]
            if i:
                pen[:, q] += data.pen[:, pidx[(seq[i - 1][0], m)], k]
            k += n
    return data.l0 - thin_matmul(data.x_run, G) + pen


def _epoch_losses(data: SubsetData, runs: list[tuple[tuple[int, int], ...]]) -> np.ndarray:
    """:func:`sequence_losses` in ``per_epoch`` mode: each block sums the scenario's own improvements."""
    cum = cumulative(data)
    out = np.full((data.S, len(runs)), data.l0)
    pidx = {sw: p for p, sw in enumerate(data.switches)}
    for q, seq in enumerate(runs):
        k = 0
        for i, (m, n) in enumerate(seq):
            out[:, q] -= cum[:, m, k + n] - cum[:, m, k]
            if i:
                out[:, q] += data.pen[:, pidx[(seq[i - 1][0], m)], k]
            k += n
    return out


def enumerated_start(data: SubsetData, deadline: float) -> Plan | None:
    """A cheap plan meeting the SAA constraint on ``data``'s sample (``per_run`` only), or None.

    Sequences whose fastest time exceeds the budget are skipped; a sequence is SAA-feasible
    when at most ``allowed`` scenario losses exceed the target by more than 1e-9 (the
    registry's test). Count vectors are tried by increasing allocation lower bound; the
    search stops when the best exact cost is at most the next lower bound (then the start
    is the cheapest plan of the enumeration, up to transfer costs), at ``deadline``
    (``time.perf_counter()``) or after :data:`~deplbench.formulations.saa.data.MAX_ALLOCATIONS` allocations.
    """
    if not data.per_run:
        return None
    alloc = Allocator(data.opts.cost, data.opts.time, data.budget)

    class _Inst:  # the attributes enumerate_sequences reads
        model_ids = data.models
        max_epochs = data.K
        allowed = staticmethod(lambda a, b: a == b or (data.models.index(a), data.models.index(b)) in
                               set(data.switches))

    try:
        by_count = enumerate_sequences(_Inst, alloc.min_time, alloc.limit, MAX_START_SEQUENCES)
    except Refused:
        return None
    counts = list(by_count)
    flat = [(i, seq) for i, c in enumerate(counts) for seq in by_count[c]]
    ok = np.zeros(len(counts), dtype=bool)
    feas: dict[int, tuple] = {}
    for lo in range(0, len(flat), CHUNK):
        if time.perf_counter() > deadline:
            return None
        part = flat[lo:lo + CHUNK]
        viol = (sequence_losses(data, [seq for _, seq in part]) > data.target + 1e-9).sum(axis=0)
        for q in np.flatnonzero(viol <= data.allowed):
            i = part[q][0]
            if not ok[i]:
                ok[i] = True
                feas[i] = part[q][1]
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    lb = alloc.lower_bounds(np.array([counts[i] for i in idx]))
    order = idx[np.argsort(lb, kind="stable")]
    lb = np.sort(lb)
    found = cheapest_start(data, alloc, ((lb[t], counts[i], feas[i]) for t, i in enumerate(order)), deadline)
    return None if found is None else found[0]
