"""Valid inequalities on the SAA rows: quantile cuts of scenario sets, and their separation.

The proofs are in ``docs/formulations.md`` ("Quantile cuts").
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from deplbench.formulations.saa.data import SubsetData, cut_coefs
from deplbench.formulations.saa.model import build


def quantile_cut_sets(data: SubsetData, rounds: int = 30, tol: float = 1e-6,
                      deadline: float | None = None) -> tuple[np.ndarray, ...]:
    """Scenario sets T (``allowed + 1`` scenarios each) whose quantile cuts tighten the LP.

    Static sets: for each model, the scenarios where it progresses least. Then a few rounds
    of separation on the LP relaxation: T = the ``allowed + 1`` scenarios whose loss row
    (without its big-M term) is highest at the LP optimum, kept while its cut is violated. The separation stops at
    ``deadline`` (``time.perf_counter()``; each LP is limited to the time left).
    """
    import highspy

    from deplbench.formulations.highs import new_highs
    from deplbench.formulations.saa.io import to_highs_lp

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
    h = new_highs(threads=1)  # a small LP: one thread, as the methods' solves default to
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
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            h.setOptionValue("time_limit", float(left))
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
