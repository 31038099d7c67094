"""Compiled loops of DepL stage 2's layer update (:mod:`deplbench.heuristics.models.graph`).

numpy cannot fuse "add an option's cost to the start region, keep the minimum": each option
costs two passes through a scratch array, and on these region sizes (tens of thousands of
cells) the calls cost about as much as the arithmetic. These loops do the very same float32
additions and minima (a minimum is exact, so its order does not matter) in one pass per
option, and the pruning, the row scan and the column minima in one more.

They are compiled when this module is imported (eager signatures, cached on disk by numba),
so a solve never compiles and ``runtime_s`` holds no compilation: the module is among DepL's
declared imports. Imports numpy, numba and the suite's compile options (``deplbench.numeric.JIT``).
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.numeric import JIT


@numba.njit("void(float32[:, ::1], int64[::1], float32[::1], int64, int64, int64, float32[:, ::1])", **JIT)
def apply_options(P, dts, cs, used, last, span, full):  # pragma: no cover - compiled
    """full = the least of P + cs[o] moved down by dts[o] - dts[0] rows, over options o < used.

    Row r of P starts option o within the time limit when r + dts[o] <= last (and r <= span, P's
    last row); rows of ``full`` that no option reaches are inf. The first option writes its
    rows outright (min(inf, x) = x), the others take minima, as the numpy code did.
    """
    inf = np.float32(np.inf)
    n = min(span, last - dts[0]) + 1
    full[n:] = inf
    for o in range(used):
        n = min(span, last - dts[o]) + 1
        off = dts[o] - dts[0]  # option o's first row in full
        c = cs[o]
        for r in range(n):
            src = P[r]
            dst = full[r + off]  # slices, so every index is a range's (the loops vectorise)
            if o == 0:
                for j in range(dst.shape[0]):
                    dst[j] = src[j] + c
            else:
                for j in range(dst.shape[0]):
                    dst[j] = min(dst[j], src[j] + c)


@numba.njit("boolean(float32[::1])", **JIT)
def _finite(row):  # pragma: no cover - compiled
    """Whether ``row`` holds an entry below inf (stops at the first)."""
    for v in row:
        if v != np.inf:
            return True
    return False


@numba.njit("UniTuple(int64, 4)(float32[:, ::1], float32[::1], int64, float32[::1], float32[::1])", **JIT)
def finish(full, top, n_eta, colmin, emin):  # pragma: no cover - compiled
    """Drop the entries of row r above ``top[r]``; fill the column minima; return the first and last
    rows with a finite entry and the first and last columns with a finite minimum ((-1, -1, -1, -1)
    when there is none).

    ``colmin`` gets the minima over every row, ``emin`` over the rows r < n_eta (those within the
    conservative time limit); a row of inf changes neither.
    """
    inf = np.float32(np.inf)
    R, W = full.shape
    colmin[:] = inf
    emin[:] = inf
    for r in range(R):
        row = full[r]
        t = top[r]
        if t != inf:  # a finite bound: drop what it dominates
            for j in range(W):
                row[j] = inf if row[j] > t else row[j]
        dst = emin if r < n_eta else colmin
        for j in range(W):
            dst[j] = min(dst[j], row[j])
    for j in range(W):
        colmin[j] = min(colmin[j], emin[j])
    r0 = 0
    while r0 < R and not _finite(full[r0]):
        r0 += 1
    if r0 == R:
        return -1, -1, -1, -1
    r1 = R - 1
    while not _finite(full[r1]):
        r1 -= 1
    c0 = 0
    while colmin[c0] == inf:
        c0 += 1
    c1 = W - 1
    while colmin[c1] == inf:
        c1 -= 1
    return r0, r1, c0, c1


@numba.njit("void(float32[:, ::1], int64, int64, float32[:, ::1], int64, int64, int64, int64, int64, boolean)",
            fastmath={"nnan", "nsz"}, **JIT)  # no NaN arises (costs are finite or inf): minima stay exact
def shift_into(P, pi0, pj0, S, i0, j0, j1, d, L, first):  # pragma: no cover - compiled
    """P = min(P, S moved up by ``d`` loss buckets), S the box (rows from ``i0``, columns ``j0..j1``).

    P's first row is time bucket ``pi0`` and its first column loss bucket ``pj0``. Buckets
    saturate at ``L`` (the columns >= L - d fold into column L by their row minimum) and drop
    out below 0. ``first``: P is still all inf there, so the minimum is the value itself.
    """
    h = S.shape[0]
    r0 = i0 - pi0
    lo = max(j0, -d)  # source columns below -d drop out
    hi = min(j1, L - d - 1)  # and those above L - d - 1 saturate
    a, k, w = lo + d - pj0, lo - j0, max(hi - lo + 1, 0)
    for r in range(h):  # slices, so every index is a range's (no wraparound test: the loops vectorise)
        src = S[r, k:k + w]
        dst = P[r0 + r, a:a + w]
        if first:
            for c in range(w):
                dst[c] = src[c]
        else:
            for c in range(w):
                dst[c] = min(dst[c], src[c])
    if d >= 0 and j1 >= L - d:
        col = L - pj0
        k = max(L - d, j0) - j0
        for r in range(h):
            src = S[r, k:]
            low = np.float32(np.inf)
            for c in range(src.shape[0]):
                low = min(low, src[c])
            P[r0 + r, col] = low if first else min(P[r0 + r, col], low)


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
    for a in range(M):
        if adj[a, m] and pbox[a, 0] >= 0:
            h, w = pbox[a, 1] - pbox[a, 0] + 1, pbox[a, 3] - pbox[a, 2] + 1
            S = pbuf[poff[a]:poff[a] + h * w].reshape((h, w))
            shift_into(P, i0, j0, S, pbox[a, 0], pbox[a, 2], pbox[a, 3], delta[a, m], L, False)
    return P


_LAYER_SIG = ("Tuple((float32[::1], int64[:, ::1], int64[::1], float32[::1], float32[::1], int64[::1], int64))"
              "(boolean, float32[::1], int64[:, ::1], int64[::1], boolean[:, ::1], int64[:, ::1], int64[::1],"
              " int64[::1], float32[::1], int64[::1], float32[::1], int64, int64, int64)")


@numba.njit(_LAYER_SIG, **JIT)
def layer_step(first, pbuf, pbox, poff, adj, delta, gb0, dts, cs, eptr, top, L, Tb, eta):  # pragma: no cover
    """One layer of the DP from the previous one, every model in one call, then ``top`` lowered by it.

    The previous layer is ``pbuf`` (its boxes' least costs, C order, model after model from
    ``poff[m]``) and ``pbox`` (row m: (i0, i1, j0, j1), or -1s when model m has no finite
    state); ``first``: epoch 1, whose start regions are the single state (0, min(gb0[m], L)) at
    cost 0. Model m starts from its predecessors a (``adj[a, m]``) moved up by ``delta[a, m]``
    loss buckets (:func:`shift_into`), takes its options ``dts/cs[eptr[m]:eptr[m + 1]]``
    (:func:`apply_options`) and is pruned and cut to its box (:func:`finish`): the very
    operations, in the same float32, of the per-model Python steps this replaces.

    Returns (buf, box, off, colmin, etamin, coff, cells): the new layer as above, the column
    minima of every box (from ``coff[m]``, its width long) over all rows and over the rows <=
    ``eta`` (``etamin`` is only meaningful where a box straddles ``eta``), and the number of
    states filled. Then ``top[i]`` (the least cost of a top-bucket state with time <= i) is
    lowered by the layer's top-bucket column and made a prefix minimum again.
    """
    M = adj.shape[1]
    sbox = np.full((M, 4), -1, dtype=np.int64)  # start regions
    rows = np.full((M, 2), -1, dtype=np.int64)  # lo_i, hi_i of the filled region
    fo = np.zeros(M + 1, dtype=np.int64)  # offsets of the filled regions in the scratch
    wo = np.zeros(M + 1, dtype=np.int64)  # offsets of their column minima
    for m in range(M):
        fo[m + 1], wo[m + 1] = fo[m], wo[m]
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
                if d >= 0:
                    b2, b3 = min(pbox[a, 2] + d, L), min(pbox[a, 3] + d, L)
                elif pbox[a, 3] + d < 0:
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
            fo[m + 1] += (hi - lo + 1) * (sbox[m, 3] - sbox[m, 2] + 1)
            wo[m + 1] += sbox[m, 3] - sbox[m, 2] + 1
    buf = np.empty(fo[M], dtype=np.float32)  # the filled regions; each box is cut out of its region in place
    cmin = np.empty(wo[M], dtype=np.float32)
    emin = np.empty(wo[M], dtype=np.float32)
    box = np.full((M, 4), -1, dtype=np.int64)
    off = np.zeros(M, dtype=np.int64)
    coff = np.zeros(M, dtype=np.int64)
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
        full = buf[fo[m]:fo[m + 1]].reshape((hi - lo + 1, W))
        apply_options(P, dts[e0:e1], cs[e0:e1], used, Tb - i0, i1 - i0, full)
        r0, r1, c0, c1 = finish(full, top[lo:hi + 1], eta - lo + 1, cmin[wo[m]:wo[m + 1]], emin[wo[m]:wo[m + 1]])
        if r0 < 0:
            continue
        box[m, 0], box[m, 1], box[m, 2], box[m, 3] = lo + r0, lo + r1, j0 + c0, j0 + c1
        coff[m] = wo[m] + c0
        if c0 == 0 and c1 == W - 1:  # whole rows: the box is contiguous where it is
            off[m] = fo[m] + r0 * W
        else:  # rows cut: moved to the region's start, row by row (each lands at or before where it is read)
            off[m] = fo[m]
            w = c1 - c0 + 1
            for r in range(r1 - r0 + 1):
                src = buf[fo[m] + (r0 + r) * W + c0:]
                dst = buf[fo[m] + r * w:]
                for c in range(w):  # forward: safe although the two may overlap
                    dst[c] = src[c]
    for m in range(M):  # then (not model by model: the layer is pruned by the earlier layers) lower top
        if box[m, 0] >= 0 and box[m, 3] == L:
            col = L - box[m, 2]
            w = box[m, 3] - box[m, 2] + 1
            for r in range(box[m, 1] - box[m, 0] + 1):
                i = box[m, 0] + r
                top[i] = min(top[i], buf[off[m] + r * w + col])
    for i in range(1, top.shape[0]):
        top[i] = min(top[i], top[i - 1])
    return buf, box, off, cmin, emin, coff, fo[M]
