"""What DepL stage 2's graph serves, read from its layers by compiled loops: costs and paths.

The layers are those :func:`deplbench.heuristics.models.step.layer_step` made (boxes
``box[k, m]``, least costs ``chunks[cix[k]][off[k, m]:]``, column minima ``carena[coff[k, m]:]``
followed by those of the rows <= eta; ``chunks`` is the graph's one chunk, or a tuple of
``SLOTS`` arrays). Every result is a minimum or an equality test of stored float32 values (and
the same float32 sums ``value + cost`` as the graph made), so it does not depend on the order of
the loops: the values, and the first state found in C order, are those of the per-layer numpy
code they replace (docs/depl.md). Compiled when imported (eager signatures). Imports numpy,
numba and the suite's compile options.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from deplbench.numeric import JIT

_INF = np.float32(np.inf)
SLOTS = 32  # chunks a graph may hold (a fixed tuple: numba compiles one signature)
# every loop is compiled twice: for one chunk (the common case, read directly) and for a tuple of them
_ONE, _MANY = "float32[::1], int64[::1]", f"UniTuple(float32[::1], {SLOTS}), int64[::1]"


def _chunk(chunks, cix, k):  # pragma: no cover - replaced by its overload in compiled code
    """The chunk that holds layer ``k``."""
    raise NotImplementedError


@overload(_chunk, jit_options=JIT)
def _chunk_impl(chunks, cix, k):  # pragma: no cover - compiled
    if isinstance(chunks, types.Array):  # one chunk: every layer is in it (no branch per read)
        return lambda chunks, cix, k: chunks
    return lambda chunks, cix, k: chunks[cix[k]]  # a tuple read at a run-time index: a branch per slot


def _sigs(fmt: str) -> list[str]:
    """``fmt`` with the chunk arguments of one chunk and of a tuple of them."""
    return [fmt.format(ch=_ONE), fmt.format(ch=_MANY)]


@numba.njit(_sigs("float32[:, ::1]({ch}, float32[::1], int64[:, :, ::1], int64[:, ::1], int64[:, ::1], int64, int64, "
                  "int64, int64)"), **JIT)
def served_columns(chunks, cix, carena, box, off, coff, nk, L, i_max, eta):  # pragma: no cover - compiled
    """(nk, L + 1): per layer and loss bucket j, the least cost of a state with time <= ``i_max``."""
    col = np.full((nk, L + 1), _INF, dtype=np.float32)
    for k in range(nk):
        buf = _chunk(chunks, cix, k)  # once per layer: a tuple read at a run-time index is a branch per slot
        for m in range(box.shape[1]):
            i0, i1, j0, j1 = box[k, m, 0], box[k, m, 1], box[k, m, 2], box[k, m, 3]
            if i0 < 0 or i0 > i_max:
                continue
            w = j1 - j0 + 1
            dst = col[k, j0:j1 + 1]
            if i1 <= i_max:  # the whole box: its column minima
                src = carena[coff[k, m]:coff[k, m] + w]
                for c in range(w):
                    dst[c] = min(dst[c], src[c])
            elif i_max == eta and i0 <= eta < i1:  # the rows <= eta: their column minima
                src = carena[coff[k, m] + w:coff[k, m] + 2 * w]
                for c in range(w):
                    dst[c] = min(dst[c], src[c])
            else:
                for r in range(i_max - i0 + 1):
                    src = buf[off[k, m] + r * w:off[k, m] + (r + 1) * w]
                    for c in range(w):
                        dst[c] = min(dst[c], src[c])
    return col


@numba.njit(_sigs("float32[:, ::1]({ch}, int64[:, :, ::1], int64[:, ::1], int64, int64, int64)"), **JIT)
def relaxed_rows(chunks, cix, box, off, nk, j, Tb):  # pragma: no cover - compiled
    """(nk, Tb + 1): per layer and time bucket i, the least cost reaching bucket >= j with time <= i."""
    per = np.full((nk, Tb + 1), _INF, dtype=np.float32)
    for k in range(nk):
        buf = _chunk(chunks, cix, k)
        for m in range(box.shape[1]):
            i0, i1, j0, j1 = box[k, m, 0], box[k, m, 1], box[k, m, 2], box[k, m, 3]
            if i0 < 0 or j1 < j:
                continue
            w, c0 = j1 - j0 + 1, max(j, j0) - j0
            for r in range(i1 - i0 + 1):
                row = buf[off[k, m] + r * w + c0:off[k, m] + (r + 1) * w]
                low = _INF
                for c in range(row.shape[0]):
                    low = min(low, row[c])
                per[k, i0 + r] = min(per[k, i0 + r], low)
        for i in range(1, Tb + 1):
            per[k, i] = min(per[k, i], per[k, i - 1])
    return per


@numba.njit(**JIT)
def _value(chunks, cix, box, off, k, m, i, j):  # pragma: no cover - compiled
    """Least cost of state (layer k, model m, i, j): inf outside the box."""
    i0, i1, j0, j1 = box[k, m, 0], box[k, m, 1], box[k, m, 2], box[k, m, 3]
    if i0 < 0 or not (i0 <= i <= i1 and j0 <= j <= j1):
        return _INF
    return _chunk(chunks, cix, k)[off[k, m] + (i - i0) * (j1 - j0 + 1) + j - j0]


@numba.njit(**JIT)
def _first(chunks, cix, box, off, k, v, i_max, j):  # pragma: no cover - compiled
    """First state (C order of (m, i, j')) of layer k with i <= i_max, j' >= j and cost v; (-1, 0, 0) if none."""
    buf = _chunk(chunks, cix, k)
    for m in range(box.shape[1]):
        i0, i1, j0, j1 = box[k, m, 0], box[k, m, 1], box[k, m, 2], box[k, m, 3]
        if i0 < 0 or i0 > i_max or j1 < j:
            continue
        w, c0 = j1 - j0 + 1, max(j, j0)
        for r in range(min(i1, i_max) - i0 + 1):
            row = buf[off[k, m] + r * w:off[k, m] + (r + 1) * w]
            for c in range(c0 - j0, w):
                if row[c] == v:
                    return m, i0 + r, j0 + c
    return -1, 0, 0


@numba.njit(**JIT)
def _back(chunks, cix, box, off, kk, m, i, j, v, L, gb0, delta, adj, dts, cs, opt, eptr):  # pragma: no cover - compiled
    """(option, previous model, previous time bucket, previous loss bucket) of stored state (kk, m, i, j)
    of cost v: the first (option, predecessor, column) in the graph's order whose sum is v; option -1
    when none is."""
    if kk == 0:
        for e in range(eptr[m], eptr[m + 1]):
            if dts[e] == i and min(gb0[m], L) == j and cs[e] == v:
                return opt[e], m, 0, 0
        return -1, 0, 0, 0
    buf = _chunk(chunks, cix, kk - 1)
    for e in range(eptr[m], eptr[m + 1]):
        if dts[e] > i:
            continue
        ip, c = i - dts[e], cs[e]
        for a in range(box.shape[1]):
            i0, i1, j0, j1 = box[kk - 1, a, 0], box[kk - 1, a, 1], box[kk - 1, a, 2], box[kk - 1, a, 3]
            if not adj[a, m] or i0 < 0 or not i0 <= ip <= i1:
                continue
            d, w = delta[kk, a, m], j1 - j0 + 1
            row = buf[off[kk - 1, a] + (ip - i0) * w:off[kk - 1, a] + (ip - i0 + 1) * w]
            if j == L and d >= 0:  # the top bucket: every source column that saturates, in order
                for jp in range(max(L - d, 0, j0), min(L, j1) + 1):
                    if row[jp - j0] + c == v:
                        return opt[e], a, ip, jp
            elif j0 <= j - d <= j1 and row[j - d - j0] + c == v:
                return opt[e], a, ip, j - d
    return -1, 0, 0, 0


@numba.njit(_sigs("int64[:, ::1]({ch}, int64[:, :, ::1], int64[:, ::1], int64, float32, int64, int64, int64, "
                  "int64[::1], int64[:, :, ::1], boolean[:, ::1], int64[::1], float32[::1], int64[::1], int64[::1])"),
            **JIT)
def backtrack(chunks, cix, box, off, k, v, i_max, j, L, gb0, delta, adj, dts, cs, opt, eptr):  # pragma: no cover
    """The path of the first state of layer k (C order) with time <= i_max, loss bucket >= j and cost v.

    Returns (k + 1, 2): per epoch, its model and option index; a first row (-1, -1) when the
    state or a step back is not found (a bug, never an input problem).
    """
    out = np.full((k + 1, 2), -1, dtype=np.int64)
    m, i, jj = _first(chunks, cix, box, off, k, v, i_max, j)
    if m < 0:
        return out
    for kk in range(k, -1, -1):
        o, a, ip, jp = _back(chunks, cix, box, off, kk, m, i, jj, _value(chunks, cix, box, off, kk, m, i, jj), L, gb0,
                             delta, adj, dts, cs, opt, eptr)
        if o < 0:
            out[0, 0] = -1
            return out
        out[kk, 0], out[kk, 1] = m, o
        m, i, jj = a, ip, jp
    return out
