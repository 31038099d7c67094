"""Boxes and layers of DepL stage 2's dynamic program (:mod:`deplbench.heuristics.models.graph`).

A layer keeps, per model, only the bounding box of its finite entries (the least costs of
the states (time bucket i, loss bucket j) inside it) and the column minima of that box.
The array steps on boxes live here too: moving a layer's box up by a loss delta into a
start region (:func:`shift_into`) and cutting a filled region to its box (:func:`crop`).
Imports numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Box = tuple[int, int, int, int]  # inclusive (i0, i1, j0, j1) of the finite entries


def shift_box(box: Box, d: int, L: int) -> Box | None:
    """Box of a layer moved up by ``d`` loss buckets (saturating at L, dropping below 0)."""
    i0, i1, j0, j1 = box
    if d >= 0:
        return i0, i1, min(j0 + d, L), min(j1 + d, L)
    if j1 + d < 0:
        return None
    return i0, i1, max(j0 + d, 0), j1 + d


def _merge(dst: np.ndarray, src: np.ndarray, copy: bool) -> None:
    """dst = min(dst, src) in place; a plain copy when ``copy`` (dst is known to be all inf)."""
    if copy:
        dst[...] = src
    else:
        np.minimum(dst, src, out=dst)


def _merge_block(P: np.ndarray, r0: int, a: int, S: np.ndarray, first: bool, scratch) -> None:
    """P[r0:r0 + h, a:a + w] = S (``first``: P is still inf there) or min(itself, S).

    numpy's minimum over a strided 2-D block runs about four times slower than over a
    contiguous range, and a strided copy is cheap. So for a minimum S is copied into rows of
    P's width whose other columns are inf, and the minimum runs over the flat range of P from
    (r0, a) to (r0 + h - 1, a + w - 1): every other entry of P in that range meets an inf, and
    min(x, inf) = x, so P changes exactly where the block lies, by the same minima.
    """
    h, w = S.shape
    W = P.shape[1]
    if first or h == 1 or w == W or scratch is None or not P.flags.c_contiguous:
        _merge(P[r0:r0 + h, a:a + w], S, first)
        return
    Q = scratch((h, W))
    Q[:, :w] = S
    Q[:, w:] = np.inf
    n = (h - 1) * W + w
    start = r0 * W + a
    flat = P.reshape(-1)[start:start + n]
    np.minimum(flat, Q.reshape(-1)[:n], out=flat)


def shift_into(P: np.ndarray, pbox: Box, S: np.ndarray, sbox: Box, d: int, L: int, first: bool = False,
               scratch=None) -> None:
    """P (the sub-array of box ``pbox``) = min(P, S (the sub-array of box ``sbox``) moved up by d buckets).

    Loss buckets saturate at ``L`` and drop out below 0. ``first``: P is still all inf, so the
    minimum is a copy (min(inf, x) = x; a strided copy is about four times cheaper than a
    strided minimum). ``scratch`` (shape -> a float32 work array): the other blocks' minima
    go through it (:func:`_merge_block`).
    """
    i0, i1, j0, j1 = sbox
    r0, r1 = i0 - pbox[0], i1 - pbox[0] + 1
    if d >= 0:
        top = L - d  # source columns >= top saturate at L
        if j0 < top:
            w = min(j1, top - 1) - j0 + 1
            a = j0 + d - pbox[2]
            _merge_block(P, r0, a, S[:, :w], first, scratch)
        if j1 >= top:
            col = L - pbox[2]
            _merge(P[r0:r1, col], S[:, max(top, j0) - j0:].min(axis=1), first)
    else:
        lo = max(j0, -d)  # source columns below -d drop out
        a = lo + d - pbox[2]
        _merge_block(P, r0, a, S[:, lo - j0:], first, scratch)


def crop(full: np.ndarray, i0: int, i1: int, j0: int, eta: int):
    """(box, sub-array, column minima, column minima of the rows <= eta) of a region whose rows
    are the time buckets ``i0..i1`` and whose first column is loss bucket ``j0``, cut to the
    columns with a finite minimum.

    The rows <= eta (the conservative time limit ``within`` serves first) and the rest are
    reduced apart when the box straddles eta, so ``within`` reads their minima (exact: a
    minimum of minima) instead of reducing the rows again; otherwise the last is None.
    """
    n = eta - i0 + 1  # rows <= eta
    if 0 < n <= i1 - i0:
        emin = np.minimum.reduce(full[:n], axis=0)
        colmin = np.minimum(emin, np.minimum.reduce(full[n:], axis=0))
    else:
        colmin, emin = np.minimum.reduce(full, axis=0), None
    cols = colmin != np.inf
    c0, c1 = int(cols.argmax()), len(cols) - 1 - int(cols[::-1].argmax())
    return ((i0, i1, j0 + c0, j0 + c1), full[:, c0:c1 + 1], colmin[c0:c1 + 1],
            None if emin is None else emin[c0:c1 + 1])


def union_box(a: Box | None, b: Box | None) -> Box | None:
    """The smallest box holding both (either may be None)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


@dataclass
class Layer:
    """One epoch of the DP: per model, the box of its finite entries and their least costs (or None)."""

    boxes: list[Box | None]
    subs: list[np.ndarray | None]
    colmins: list[np.ndarray | None] = field(default_factory=list)  # per model: least cost per column of its box
    etamins: list[np.ndarray | None] = field(default_factory=list)  # the same over the rows <= eta (None: all or none)

    def live(self):
        """(box, sub-array) of the models with a finite entry."""
        return [(b, s) for b, s in zip(self.boxes, self.subs, strict=True) if b is not None]

    def at(self, m: int, i: int, j: int) -> np.float32:
        """Least cost of state (m, i, j); inf outside the box."""
        b = self.boxes[m]
        if b is None or not (b[0] <= i <= b[1] and b[2] <= j <= b[3]):
            return np.float32(np.inf)
        return self.subs[m][i - b[0], j - b[2]]

    def first(self, v, i_max: int, j: int) -> tuple[int, int, int]:
        """First state (C order of (m, i, j')) with i <= i_max, j' >= j and cost v."""
        for m, b in enumerate(self.boxes):
            if b is None or b[0] > i_max or b[3] < j:
                continue
            c0 = max(j, b[2])
            hits = self.subs[m][: i_max - b[0] + 1, c0 - b[2]:] == v  # a new C-ordered array
            f = int(hits.argmax())  # the first hit in C order (0 when there is none)
            if hits.flat[f]:
                r, c = divmod(f, hits.shape[1])
                return m, b[0] + r, c0 + c
        raise RuntimeError("stage 2 lost the least-cost state")  # a bug, never an input problem
