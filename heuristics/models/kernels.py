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
    rows outright (min(inf, x) = x), the others take minima, as the numpy code did. P and full
    have the same width and are C-ordered, so an option's rows are one flat span of each: one
    long loop per option, not one short loop per row (a fifth faster on the default graphs).
    """
    inf = np.float32(np.inf)
    n = min(span, last - dts[0]) + 1
    full[n:] = inf
    W = full.shape[1]
    src = P.reshape(P.size)  # rows r < n of P go to rows r + off of full: one span of n W entries each
    out = full.reshape(full.size)
    for o in range(used):
        n = min(span, last - dts[o]) + 1
        c = cs[o]
        dst = out[(dts[o] - dts[0]) * W:]  # option o's first row in full
        if o == 0:
            for t in range(n * W):
                dst[t] = src[t] + c
        else:
            for t in range(n * W):
                dst[t] = min(dst[t], src[t] + c)


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
