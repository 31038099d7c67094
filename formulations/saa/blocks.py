"""Exact losses of short block sequences for SAA whose switch graph has cycles.

The loss of a plan in scenario s depends only on its model sequence, a run of *blocks*
(maximal runs of one model); in ``per_run`` mode a block's improvement is its model's factor
times a sum of gains, in ``per_epoch`` mode a sum of the scenario's own improvements. With cycles a model may come back, so the number
of sequences grows like ``2^K``; but a sequence with b blocks makes b - 1 switches, and every
switch pays a penalty. This module splits the plans of a count vector q into

* the sequences of at most ``B`` blocks, enumerated **exactly** (loss of each sequence in each
  scenario, as :func:`deplbench.formulations.saa.start.sequence_losses` computes it), with
  ``B`` the largest block count whose sequences number at most :data:`MAX_BLOCK_SEQUENCES`;
* one **relaxed** column per q for the plans of more than ``B`` blocks (at least ``B``
  switches): progress within the count-vector bounds of
  :class:`~deplbench.formulations.saa.strength._Progress`, penalties at least the ``B``
  smallest per-epoch least penalties over the epochs ``2..sum q`` plus every further negative
  one, at most every positive per-epoch largest penalty there.

:func:`block_columns` yields them in the format of :func:`~.strength.count_bounds`; every plan
with count vector q lies in exactly one of the columns of q (its own sequence, or the relaxed
column), so the relaxation stays valid (proof: ``docs/formulations.md``, "Block sequences").
:func:`start_plan` turns the SAA-feasible exact sequences into the cheapest plan they give
(exact allocations), a certified MIP start / CP-SAT hint.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from deplbench.formulations.allocation import Allocator
from deplbench.formulations.saa.data import SubsetData, cheapest_start, check_deadline
from deplbench.instances.plan import Plan
from deplbench.numeric import thin_matmul

#: most exactly enumerated block sequences (over all block counts up to B)
MAX_BLOCK_SEQUENCES = 250_000
#: columns per chunk (an (S, CHUNK) array)
CHUNK = 2048
#: most bytes of the dynamic programme's arrays (beyond it: no block sequences)
MAX_DP_BYTES = 1 << 30
#: scenarios per pass of the dynamic programme (its arrays grow with the chunk, not with S)
DP_SCENARIOS = 5000


Runs = tuple[tuple[int, int], ...]  # ((model index, epochs), ...), as saa_start / sequences


def walks(M: int, switches, b: int) -> list[tuple[int, ...]]:
    """Model labels of b blocks: consecutive labels are a listed switch (so they differ)."""
    nxt = [[t for (f, t) in switches if f == a] for a in range(M)]
    out = [(m,) for m in range(M)]
    for _ in range(b - 1):
        out = [w + (t,) for w in out for t in nxt[w[-1]]]
    return out


def block_limit(M: int, K: int, switches, max_sequences: int | None = None) -> tuple[int, int]:
    """(B, sequences): the largest block count whose sequences of <= B blocks fit ``max_sequences``.

    At most the longest walk of the switch graph (plus one) when it is acyclic.

    ``max_sequences`` defaults to :data:`MAX_BLOCK_SEQUENCES` (read at call time).
    """
    max_sequences = MAX_BLOCK_SEQUENCES if max_sequences is None else max_sequences
    total, B = 0, 0
    for b in range(1, K + 1):
        n_walks = len(walks(M, switches, b))
        if not n_walks:  # an acyclic switch graph: no sequence has this many blocks
            break
        n = math.comb(K, b) * n_walks
        if total + n > max_sequences:
            break
        total += n
        B = b
    return B, total


def dp_fits(M: int, K: int, S: int, B: int) -> bool:
    """Whether :func:`long_bounds` stays within :data:`MAX_DP_BYTES` (two layers of lo and hi).

    ``S``: the scenarios of one pass (at most :data:`DP_SCENARIOS`); more scenarios take more
    passes, not more memory.
    """
    widest = math.comb(K + M - 1, M - 1) if M >= 1 else 1  # count vectors of sum K: the widest layer
    return 4 * widest * M * (B + 2) * S * 8 <= MAX_DP_BYTES


def _key(q: np.ndarray, K: int) -> np.ndarray:
    """Mixed-radix key of count vectors (rows of q)."""
    return q @ ((K + 1) ** np.arange(q.shape[1]))


def long_bounds(data: SubsetData, Q: np.ndarray, B: int, live: np.ndarray | None = None,
                deadline: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """Least and greatest loss, shape (S, len(Q)), of the sequences of more than B blocks.

    A dynamic programme over the epochs: the state after n epochs is (count vector, last
    model, blocks so far capped at B + 1); appending model m adds ``-gain[m, n] x[s, m]``
    and, if m differs from the last model, the penalty of that switch at epoch n + 1 (only
    listed switches). Per scenario it gives the exact least and greatest loss over every
    sequence of each count vector with at least B + 1 blocks (+inf / -inf: none).

    ``live`` (a mask over Q) limits the columns computed to those count vectors (the others
    stay +inf / -inf); the programme then keeps only the states below some live vector
    (componentwise: no other state reaches one). Scenarios go through in chunks of
    :data:`DP_SCENARIOS`, so the arrays stay within what :func:`dp_fits` checks. Past
    ``deadline`` (checked after every epoch of a chunk) it raises
    :class:`~deplbench.formulations.saa.data.PastDeadline`: at
    20,000 scenarios the programme takes seconds, and a part of it bounds nothing.
    """
    S = data.imp.shape[0]
    least = np.full((S, len(Q)), np.inf)
    most = np.full((S, len(Q)), -np.inf)
    want = np.flatnonzero(np.ones(len(Q), dtype=bool) if live is None else live)
    if not len(want):
        return least, most
    layers = _layers(data.imp.shape[1], data.imp.shape[2], Q[want])
    for a in range(0, S, DP_SCENARIOS):
        part = slice(a, min(a + DP_SCENARIOS, S))
        least[part], most[part] = _long_chunk(data, part, Q, want, layers, B, deadline)
    return least, most


def _layers(M: int, K: int, wanted: np.ndarray) -> list[np.ndarray]:
    """Count vectors after 0..K epochs that lie below some row of ``wanted`` (componentwise)."""
    layers = [np.zeros((1, M), dtype=np.int64)]
    eye = np.eye(M, dtype=np.int64)
    for _n in range(K):
        nxt = np.unique(np.concatenate([layers[-1] + eye[m] for m in range(M)]), axis=0)
        below = np.zeros(len(nxt), dtype=bool)
        for lo in range(0, len(wanted), 256):  # (states, wanted, M) in slices: bounded memory
            below |= (nxt[:, None, :] <= wanted[None, lo:lo + 256, :]).all(axis=2).any(axis=1)
        layers.append(nxt[below])
    return layers


def _long_chunk(data: SubsetData, part: slice, Q: np.ndarray, want: np.ndarray,
                layers: list[np.ndarray], B: int, deadline: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """:func:`long_bounds` for the scenarios ``part``: (least, most) of shape (chunk, len(Q))."""
    M, K = data.imp.shape[1:]
    S = part.stop - part.start
    C = B + 1
    pidx = {sw: p for p, sw in enumerate(data.switches)}
    # per_run: the product as the exact columns form it; per_epoch: the improvements themselves
    xg = data.x_run[part, :, None] * data.gain[None, :, :] if data.per_run else data.imp[part]  # (S, M, K)
    pen = data.pen[part]
    eye = np.eye(M, dtype=np.int64)
    lo = np.full((1, M, C + 1, S), np.inf)
    hi = np.full((1, M, C + 1, S), -np.inf)
    targets = {int(k): int(j) for k, j in zip(_key(Q[want], K), want, strict=True)}
    least = np.full((S, len(Q)), np.inf)
    most = np.full((S, len(Q)), -np.inf)
    for n in range(K):
        cur, new = layers[n], layers[n + 1]
        pos = {int(k): i for i, k in enumerate(_key(new, K))}
        nlo = np.full((len(new), M, C + 1, S), np.inf)
        nhi = np.full((len(new), M, C + 1, S), -np.inf)
        for m in range(M):
            to_all = np.array([pos.get(int(k), -1) for k in _key(cur + eye[m], K)], dtype=np.int64)
            src = np.flatnonzero(to_all >= 0)  # states whose successor was pruned are left out
            if not len(src):
                continue
            to = to_all[src]
            step = -xg[:, m, n]
            if n == 0:
                nlo[to, m, 1] = data.l0 + step
                nhi[to, m, 1] = data.l0 + step
                continue
            for a in range(M):
                if a == m:
                    nlo[to, m] = np.minimum(nlo[to, m], lo[src, a] + step)
                    nhi[to, m] = np.maximum(nhi[to, m], hi[src, a] + step)
                elif (a, m) in pidx:
                    add = step + pen[:, pidx[(a, m)], n]
                    for b in range(1, C + 1):
                        b2 = min(b + 1, C)
                        nlo[to, m, b2] = np.minimum(nlo[to, m, b2], lo[src, a, b] + add)
                        nhi[to, m, b2] = np.maximum(nhi[to, m, b2], hi[src, a, b] + add)
        lo, hi = nlo, nhi
        check_deadline(deadline)
        for i, k in enumerate(_key(new, K)):
            j = targets.get(int(k))
            if j is not None:
                least[:, j] = lo[i, :, C].min(axis=0)
                most[:, j] = hi[i, :, C].max(axis=0)
    return least, most


def cumulative(data: SubsetData) -> np.ndarray:
    """``c[s, m, k]``: improvement of model m over epochs 1..k in scenario s (``per_epoch``), shape (S, M, K+1)."""
    S, M, _ = data.imp.shape
    return np.concatenate([np.zeros((S, M, 1)), np.cumsum(data.imp, axis=2)], axis=2)


def _boundaries(data: SubsetData) -> tuple[np.ndarray, np.ndarray]:
    """``per_epoch`` tables of :func:`block_columns`: (cum by model, switch terms), scenario rows contiguous.

    A sequence of blocks ``m_0 .. m_{b-1}`` starting at epochs ``0 = k_0 < k_1 < ...`` and ending at
    ``e`` has loss ``l0 - c[m_{b-1}, e] + sum_{i >= 1} turn[(m_{i-1}, m_i), k_i]`` with ``c`` the
    cumulative improvements (:func:`cumulative`) and ``turn[(a, m), k] = c[m, k] - c[a, k] +
    pen[(a, m), k]``: each block's ``c[m_i, end] - c[m_i, start]`` telescopes into its switches.
    """
    cum = cumulative(data)  # (S, M, K+1)
    K = data.imp.shape[2]
    turn = np.zeros((len(data.switches), cum.shape[0], K))  # (P, S, K)
    for p, (a, m) in enumerate(data.switches):
        turn[p] = cum[:, m, :K] - cum[:, a, :K] + data.pen[:, p, :]
    return np.ascontiguousarray(cum.transpose(1, 0, 2)), turn


def block_columns(data: SubsetData, Q: np.ndarray, B: int, live: np.ndarray | None = None,
                  deadline: float = math.inf):
    """Chunks ``(rows of Q, least loss, greatest loss, runs)`` of exact sequences and relaxed columns.

    ``runs`` is a list of run-length encoded sequences (exact columns) or None (the relaxed
    column of a count vector: per-scenario least and greatest loss of its sequences of more
    than B blocks, :func:`long_bounds`). ``live`` (a mask over Q): only the columns of those
    count vectors. ``deadline``: :func:`long_bounds` raises ``PastDeadline`` past it.
    """
    S, M, K = data.imp.shape
    cum = np.concatenate([np.zeros((M, 1)), np.cumsum(data.gain, axis=1)], axis=1)  # (M, K+1)
    pidx = {sw: p for p, sw in enumerate(data.switches)}
    epoch = None if data.per_run else _boundaries(data)
    keys = _key(Q, K)
    index = {int(keys[i]): int(i) for i in (range(len(Q)) if live is None else np.flatnonzero(live))}
    for b in range(1, B + 1):
        ends = np.array(list(itertools.combinations(range(1, K + 1), b)), dtype=np.int64).reshape(-1, b)
        starts = np.concatenate([np.zeros((len(ends), 1), dtype=np.int64), ends[:, :-1]], axis=1)
        lengths = ends - starts
        for lab in walks(M, data.switches, b):
            q = np.zeros((len(ends), M), dtype=np.int64)
            for i, m in enumerate(lab):
                q[:, m] += lengths[:, i]
            owner = np.array([index.get(int(k), -1) for k in _key(q, K)], dtype=np.int64)
            keep = np.flatnonzero(owner >= 0)  # count vectors without an allocation (or not live) are skipped
            for lo in range(0, len(keep), CHUNK):
                sel = keep[lo:lo + CHUNK]
                if epoch is None:
                    G = np.zeros((len(sel), M))
                    for i, m in enumerate(lab):
                        G[:, m] += cum[m, ends[sel, i]] - cum[m, starts[sel, i]]
                    loss = data.l0 - thin_matmul(data.x_run, G)
                    for i in range(1, b):
                        loss += data.pen[:, pidx[(lab[i - 1], lab[i])], starts[sel, i]]
                else:  # per_epoch: the last block's end, then one term per switch
                    cum_t, turn = epoch
                    loss = data.l0 - cum_t[lab[-1]][:, ends[sel, -1]]
                    for i in range(1, b):
                        loss += turn[pidx[(lab[i - 1], lab[i])]][:, starts[sel, i]]
                runs = [tuple(zip(lab, (int(n) for n in lengths[j]), strict=True)) for j in sel]
                yield owner[sel], loss, loss, runs
    if B >= min(K, data.max_switches + 1):
        return  # every sequence has at most B blocks: no relaxed column
    least, most = long_bounds(data, Q, B, live, deadline)
    rel = np.flatnonzero(np.isfinite(least).any(axis=0))
    for lo in range(0, len(rel), CHUNK):
        sel = rel[lo:lo + CHUNK]
        yield sel, least[:, sel], most[:, sel], None


def start_plan(data: SubsetData, Q: np.ndarray, lb: np.ndarray, feasible: dict[int, Runs],
               deadline: float = math.inf) -> tuple[Plan, float] | None:
    """Cheapest plan (and its cost) over the SAA-feasible exact sequences ``feasible`` (q index -> runs).

    Count vectors are allocated exactly in increasing order of their bound ``lb`` until the best
    cost is at most the next bound (then it is the cheapest such plan), at ``deadline`` or after
    :data:`~deplbench.formulations.saa.data.MAX_ALLOCATIONS` allocations.
    """
    if not feasible:
        return None
    alloc = Allocator(data.opts.cost, data.opts.time, data.budget)
    idx = np.array(sorted(feasible, key=lambda i: lb[i]), dtype=np.int64)
    return cheapest_start(data, alloc, ((lb[i], Q[i], feasible[int(i)]) for i in idx), deadline)


__all__ = ["DP_SCENARIOS", "MAX_BLOCK_SEQUENCES", "block_columns", "cumulative", "block_limit", "dp_fits", "long_bounds", "start_plan", "walks"]
