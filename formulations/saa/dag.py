"""Exact sequence losses of ``per_run`` SAA on an acyclic switch graph, and the start they give.

In an acyclic switch graph a plan is one block per model used, in the only order the graph
allows (a Hamiltonian path of a DAG is unique), so every count vector has at most one
sequence. :func:`sequence_columns` yields the loss of each sequence in every scenario for
:func:`~deplbench.formulations.saa.strength.count_bounds`, computed column-major ``(C, S)``
(each switch penalty is a contiguous row of the transposed penalty table, so the gathers
are row copies) and handed over as transposed views of shape ``(S, C)``.

The same pass also decides which sequences meet the SAA at the registry's tolerance
(1e-9 absolute, as :func:`~deplbench.formulations.saa.start.enumerated_start`), and
:func:`dag_start` picks the plan ``enumerated_start`` would pick (same loss arithmetic, same
lower-bound order, ties broken in the order of its depth-first enumeration) without
enumerating and evaluating every sequence a second time.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from deplbench.formulations.allocation import Allocator
from deplbench.formulations.saa.data import (
    SubsetData,
    cheapest_start,
)
from deplbench.instances.plan import Plan

#: columns per chunk (a (CHUNK, S) array)
CHUNK = 2048
#: the registry's violation test (``evaluate_on_scenarios``): loss > target + START_TOL
START_TOL = 1e-9

Runs = tuple[tuple[int, int], ...]


class _Picker:
    """The sequences of one chunk that meet the SAA at :data:`START_TOL` (``pick``), and ``decode``."""

    def __init__(self, data: SubsetData, base: np.ndarray, pens: list[np.ndarray], offset: int,
                 perm: np.ndarray, n: np.ndarray) -> None:
        self.data, self.base, self.pens, self.offset, self.perm, self.n = data, base, pens, offset, perm, n

    def pick(self, js: np.ndarray) -> list[tuple[int, int]]:
        """``(j, sequence id)`` for the columns ``js`` whose sequence meets the SAA at :data:`START_TOL`."""
        if not len(js):
            return []
        d = self.data
        loss = self.base[js]
        if self.pens:  # as saa_start.sequence_losses: l0 - progress + (sum of penalties)
            pen = self.pens[0][js]  # 0 + p == p exactly
            for p in self.pens[1:]:
                pen += p[js]
            loss += pen
        viol = np.count_nonzero(loss > d.target + START_TOL, axis=1)
        good = js[viol <= d.allowed]
        return list(zip(good.tolist(), (good + self.offset).tolist(), strict=True))

    def decode(self, i: int) -> Runs:
        """Run-length encoded sequence of sequence id ``i``."""
        return tuple((int(m), int(c)) for m, c in zip(self.perm[i], self.n[i], strict=True) if m >= 0)


def sequence_columns(data: SubsetData, Q: np.ndarray):
    """Chunks ``(rows of Q, loss, loss, picker)`` of exact sequence losses (acyclic ``per_run``).

    The loss of a block sequence in scenario s is
    ``l0 - sum_m x[s, m] (cum_m(end_m) - cum_m(start_m)) + sum_switches pen[s, p, start]``,
    summed in the order of the earlier row-major code (bit-identical values).
    """
    S, M, K = data.imp.shape
    cum = np.concatenate([np.zeros((M, 1)), np.cumsum(data.gain, axis=1)], axis=1)  # (M, K+1)
    pidx = {sw: p for p, sw in enumerate(data.switches)}
    used = Q > 0
    owners, gains, pens, perms, counts = [], [], [], [], []
    for u in range(1, M + 1):
        for perm in itertools.permutations(range(M), u):
            if any((a, b) not in pidx for a, b in zip(perm, perm[1:], strict=False)):
                continue
            rows = np.flatnonzero(used[:, list(perm)].all(axis=1) & (used.sum(axis=1) == u))
            if not len(rows):
                continue
            n = Q[np.ix_(rows, perm)]
            end = np.cumsum(n, axis=1)
            start = end - n
            G = np.zeros((len(rows), M))
            for i, m in enumerate(perm):
                G[:, m] = cum[m, end[:, i]] - cum[m, start[:, i]]
            # switch i (perm[i-1] -> perm[i]) at the 0-based epoch start[:, i]; row P*K: no switch
            pe = np.full((len(rows), max(M - 1, 1)), len(data.switches) * K, dtype=np.int64)
            for i in range(1, u):
                pe[:, i - 1] = pidx[(perm[i - 1], perm[i])] * K + start[:, i]
            pm = np.full((len(rows), M), -1, dtype=np.int64)
            pm[:, :u] = perm
            nn = np.zeros((len(rows), M), dtype=np.int64)
            nn[:, :u] = n
            owners.append(rows)
            gains.append(G)
            pens.append(pe)
            perms.append(pm)
            counts.append(nn)
    if not owners:
        return iter(())
    owner, G, pe = np.concatenate(owners), np.concatenate(gains), np.concatenate(pens)
    perm, cnt = np.concatenate(perms), np.concatenate(counts)
    P = len(data.switches)
    penT = np.zeros((P * K + 1, S))  # penT[p K + k] = pen[:, p, k]; the last row: no switch
    penT[:P * K] = data.pen.transpose(1, 2, 0).reshape(P * K, S)
    xr = data.x_run

    def gen():
        for lo_i in range(0, len(owner), CHUNK):
            sl = slice(lo_i, lo_i + CHUNK)
            g = G[sl]
            prog = np.zeros((len(g), S))  # thin_matmul(x_run, G).T, same summation order
            tmp = np.empty_like(prog)
            for m in range(M):
                np.multiply(g[:, m, None], xr[None, :, m], out=tmp)
                prog += tmp
            base = np.subtract(data.l0, prog, out=prog)
            rows = [penT[pe[sl, i]] for i in range(M - 1)]
            loss = base + rows[0] if rows else base.copy()
            for r in rows[1:]:
                loss += r
            yield owner[sl], loss.T, loss.T, _Picker(data, base, rows, lo_i, perm, cnt)

    return gen()


def _dfs_key(runs: Runs, nxt: list[list[int]]) -> tuple[int, ...]:
    """Position of a sequence in ``sequences.enumerate_sequences``' depth-first order (as a sort key).

    Its stack pops the highest first model first, then from each sequence the switches in
    decreasing order of ``nxt`` and staying on the model last (pre-order).
    """
    key = [-runs[0][0]]
    for i, (m, n) in enumerate(runs):
        if i:
            key.append(-(nxt[runs[i - 1][0]].index(m) + 1))
        key.extend([0] * (n - 1))
    return tuple(key)


def dag_start(data: SubsetData, Q: np.ndarray, lb: np.ndarray, feasible: dict[int, int], decode,
              deadline: float = math.inf) -> tuple[Plan, float] | None:
    """The plan (and cost) ``enumerated_start`` returns, from the SAA-feasible sequences ``feasible``.

    ``feasible`` maps a row of ``Q`` to the id of its sequence (meeting the SAA at
    :data:`START_TOL`), ``decode`` an id to the sequence (``_Picker.decode``);
    ``lb`` are the allocation lower bounds of ``Q``. Count vectors are allocated exactly in
    increasing ``lb`` (ties: depth-first enumeration order) until the best cost is at most the
    next bound, at ``deadline`` or after :data:`~deplbench.formulations.saa.data.MAX_ALLOCATIONS` allocations.
    """
    if not feasible:
        return None
    feasible = {int(i): decode(s) for i, s in feasible.items()}
    alloc = Allocator(data.opts.cost, data.opts.time, data.budget)
    nxt = [[b for b in range(len(data.models)) if b != a and (a, b) in set(data.switches)]
           for a in range(len(data.models))]
    idx = np.array(list(feasible), dtype=np.int64)
    idx = idx[np.argsort(lb[idx], kind="stable")]
    vals = lb[idx]

    def ordered():
        lo = 0
        while lo < len(idx):
            hi = int(np.searchsorted(vals, vals[lo], side="right"))
            grp = sorted(idx[lo:hi].tolist(), key=lambda i: _dfs_key(feasible[i], nxt))
            yield from grp
            lo = max(hi, lo + 1)

    return cheapest_start(data, alloc, ((lb[i], Q[i], feasible[i]) for i in ordered()), deadline)


__all__ = ["dag_start", "sequence_columns"]
