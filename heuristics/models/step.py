"""One layer of DepL stage 2's dynamic program, compiled.

The graph (:mod:`deplbench.heuristics.models.graph`) keeps its layers in float32 chunks (a layer
inside one chunk: the boxes' least costs, C order, model after model) and one ``carena`` (each
box's column minima followed by its column minima over the rows <= eta). Boxes, the chunk of
each layer and offsets are rows of the graph's int64 arrays, so the compiled serving and
backtracking loops (:mod:`deplbench.heuristics.models.serve`) read every layer from the chunks,
without a Python object per layer. (Numba's typed lists were measured: their first
use in a process compiles them, about 0.3 s. One arena grown by copying was measured too: at
eta 1000 with 6 models and 60 epochs its copies took the graph from 0.63 to 2.7 s.)

:func:`layer_step` does, per model, the operations of the textbook recurrence inside bounding
boxes, in the same float32: the predecessors' boxes moved up by their loss deltas into a start
region (:func:`~deplbench.heuristics.models.kernels.shift_into`), the options' sums kept where
least (:func:`~deplbench.heuristics.models.kernels.apply_options`), the states above ``top``
dropped and the region cut to the box of its finite entries
(:func:`~deplbench.heuristics.models.kernels.finish`); then ``top`` is lowered by the layer.
Compiled when imported (eager signature, cached by numba). Imports numpy, numba, the kernels
and the suite's compile options.
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.heuristics.models.kernels import apply_options, finish, shift_into
from deplbench.numeric import JIT


@numba.njit(**JIT)
def _start_region(first, pbuf, pbox, poff, adj, delta, m, i0, i1, j0, j1, L):  # pragma: no cover - compiled
    """Model m's start region (rows i0..i1, columns j0..j1): its predecessors' boxes moved by their deltas.

    A single predecessor moved without saturation or cut columns is its box itself (no copy).
    """
    M = adj.shape[1]
    if first:
        P = np.empty((1, 1), dtype=np.float32)
        P[0, 0] = 0.0
        return P
    n, last = 0, -1
    for a in range(M):
        if adj[a, m] and pbox[a, 0] >= 0:
            n += 1
            last = a
    if n == 1:
        h, w, d = pbox[last, 1] - pbox[last, 0] + 1, pbox[last, 3] - pbox[last, 2] + 1, delta[last, m]
        if d >= 0 and pbox[last, 3] < L - d:
            return pbuf[poff[last]:poff[last] + h * w].reshape((h, w))
    P = np.empty((i1 - i0 + 1, j1 - j0 + 1), dtype=np.float32)
    P[:] = np.float32(np.inf)
    fresh = True  # P is all inf: the first predecessor is copied in, not min-ed (the same values)
    for a in range(M):
        if adj[a, m] and pbox[a, 0] >= 0:
            h, w = pbox[a, 1] - pbox[a, 0] + 1, pbox[a, 3] - pbox[a, 2] + 1
            S = pbuf[poff[a]:poff[a] + h * w].reshape((h, w))
            shift_into(P, i0, j0, S, pbox[a, 0], pbox[a, 2], pbox[a, 3], delta[a, m], L, fresh)
            fresh = False
    return P


@numba.njit(**JIT)
def _regions(first, pbox, adj, delta, gb0, dts, eptr, L, Tb):  # pragma: no cover - compiled
    """Per model: its start region (-1s when none) and the rows (lo, hi) its options fill (-1s when none)."""
    M = adj.shape[1]
    sbox = np.full((M, 4), -1, dtype=np.int64)
    rows = np.full((M, 2), -1, dtype=np.int64)
    for m in range(M):
        if first:
            if gb0[m] < 0:
                continue
            j = min(gb0[m], L)
            sbox[m, 0], sbox[m, 1], sbox[m, 2], sbox[m, 3] = 0, 0, j, j
        else:
            for a in range(M):
                if not adj[a, m] or pbox[a, 0] < 0:
                    continue
                d = delta[a, m]
                if d >= 0:  # moved up, saturating at L
                    b2, b3 = min(pbox[a, 2] + d, L), min(pbox[a, 3] + d, L)
                elif pbox[a, 3] + d < 0:  # moved below bucket 0: gone
                    continue
                else:
                    b2, b3 = max(pbox[a, 2] + d, 0), pbox[a, 3] + d
                if sbox[m, 0] < 0:
                    sbox[m, 0], sbox[m, 1], sbox[m, 2], sbox[m, 3] = pbox[a, 0], pbox[a, 1], b2, b3
                else:
                    sbox[m, 0], sbox[m, 1] = min(sbox[m, 0], pbox[a, 0]), max(sbox[m, 1], pbox[a, 1])
                    sbox[m, 2], sbox[m, 3] = min(sbox[m, 2], b2), max(sbox[m, 3], b3)
        e0, e1 = eptr[m], eptr[m + 1]
        if sbox[m, 0] < 0 or e0 == e1:
            continue
        lo, hi = sbox[m, 0] + dts[e0], min(sbox[m, 1] + dts[e1 - 1], Tb)
        if lo <= hi:
            rows[m, 0], rows[m, 1] = lo, hi
    return sbox, rows


_SIG = ("Tuple((int64, int64, boolean, int64, float32, float32))"
        "(int64, float32[::1], float32[::1], int64, float32[::1], int64, int64[:, ::1], int64[::1], boolean[:, ::1],"
        " int64[:, ::1], int64[::1], int64[::1], float32[::1], int64[::1], float32[::1], int64, int64, int64,"
        " int64[:, ::1], int64[::1], int64[::1])")


@numba.njit(_SIG, **JIT)
def layer_step(k, pbuf, arena, pos, carena, cpos, pbox, poff, adj, delta, gb0, dts, cs, eptr, top, L, Tb, eta, box,
               off, coff):  # pragma: no cover - compiled
    """Make layer ``k`` (1-based) from layer k - 1 (``pbuf``, ``pbox``, ``poff``) into ``arena[pos:]`` and
    ``carena[cpos:]`` (``arena``: a chunk, possibly ``pbuf`` itself).

    ``box``, ``off``, ``coff``: this layer's rows, written (-1s for a model with no finite state).
    Model m's least costs are ``arena[off[m]:]`` (its box's rows by its columns), its column
    minima ``carena[coff[m]:]`` and, right after them, its column minima over the rows <= eta
    (meaningful where the box straddles eta). ``top[i]``: the least cost of a top-bucket state
    with time <= i over the earlier layers (states above it are dropped; docs/depl.md); lowered
    by this layer's top bucket once the whole layer is made.

    Returns (n, cn, done, live, top cost, least cost): the layer takes ``arena[pos:pos + n]`` and
    ``carena[cpos:cpos + cn]``; when the chunk has less room, nothing is done (``done`` false,
    every argument unchanged) and the caller calls again with a chunk of room for n. Then the
    number of models with a finite state, the least cost in the top bucket L and the least cost
    in the layer (inf when there is none).
    """
    first = k == 1
    M = adj.shape[1]
    sbox, rows = _regions(first, pbox, adj, delta, gb0, dts, eptr, L, Tb)
    fo = np.zeros(M + 1, dtype=np.int64)  # where each model's filled region starts in buf
    wo = np.zeros(M + 1, dtype=np.int64)  # and its column minima (scratch)
    for m in range(M):
        live = rows[m, 0] >= 0
        fo[m + 1] = fo[m] + (rows[m, 1] - rows[m, 0] + 1) * (sbox[m, 3] - sbox[m, 2] + 1) * live
        wo[m + 1] = wo[m] + (sbox[m, 3] - sbox[m, 2] + 1) * live
    inf = np.float32(np.inf)
    if pos + fo[M] > arena.shape[0] or cpos + 2 * wo[M] > carena.shape[0]:
        return fo[M], 2 * wo[M], False, 0, inf, inf
    buf = arena[pos:pos + fo[M]]
    cbuf = carena[cpos:cpos + 2 * wo[M]]
    cmin = np.empty(wo[M], dtype=np.float32)
    emin = np.empty(wo[M], dtype=np.float32)
    cend = 0
    box[:] = -1
    for m in range(M):
        lo, hi = rows[m, 0], rows[m, 1]
        if lo < 0:
            continue
        i0, i1, j0, j1 = sbox[m, 0], sbox[m, 1], sbox[m, 2], sbox[m, 3]
        P = _start_region(first, pbuf, pbox, poff, adj, delta, m, i0, i1, j0, j1, L)
        e0, e1 = eptr[m], eptr[m + 1]
        used = 0
        while e0 + used < e1 and dts[e0 + used] <= Tb - i0:  # the options that start a row within Tb
            used += 1
        W = j1 - j0 + 1
        start = fo[m]
        full = buf[start:fo[m + 1]].reshape((hi - lo + 1, W))
        apply_options(P, dts[e0:e1], cs[e0:e1], used, Tb - i0, i1 - i0, full)
        r0, r1, c0, c1 = finish(full, top[lo:hi + 1], eta - lo + 1, cmin[wo[m]:wo[m + 1]], emin[wo[m]:wo[m + 1]])
        if r0 < 0:
            continue
        box[m, 0], box[m, 1], box[m, 2], box[m, 3] = lo + r0, lo + r1, j0 + c0, j0 + c1
        w = c1 - c0 + 1
        if w == W:  # whole rows: the box is contiguous where it is
            off[m] = start + r0 * W
        else:  # columns cut: rows moved to the region's start (each lands at or before where it is read)
            off[m] = start
            for r in range(r1 - r0 + 1):
                src = buf[start + (r0 + r) * W + c0:]
                dst = buf[start + r * w:]
                for c in range(w):  # forward: safe although the two may overlap
                    dst[c] = src[c]
        coff[m] = cend
        cbuf[cend:cend + w] = cmin[wo[m] + c0:wo[m] + c1 + 1]
        cbuf[cend + w:cend + 2 * w] = emin[wo[m] + c0:wo[m] + c1 + 1]
        cend += 2 * w
    for m in range(M):  # then (not model by model: a layer is pruned by the earlier ones) lower top
        if box[m, 0] >= 0 and box[m, 3] == L:
            w = box[m, 3] - box[m, 2] + 1
            for r in range(box[m, 1] - box[m, 0] + 1):
                i = box[m, 0] + r
                top[i] = min(top[i], buf[off[m] + r * w + L - box[m, 2]])
    for i in range(1, top.shape[0]):
        top[i] = min(top[i], top[i - 1])
    for m in range(M):  # offsets into the chunk and the column minima
        if box[m, 0] >= 0:
            off[m] += pos
            coff[m] += cpos
    live, tops, low = 0, inf, inf
    for m in range(M):
        if box[m, 0] >= 0:
            live += 1
            w = box[m, 3] - box[m, 2] + 1
            for c in range(w):
                low = min(low, carena[coff[m] + c])
            if box[m, 3] == L:
                tops = min(tops, carena[coff[m] + L - box[m, 2]])
    return fo[M], cend, True, live, tops, low
