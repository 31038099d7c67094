"""Boxes and layers of DepL stage 2's dynamic program (:mod:`deplbench.heuristics.models.graph`).

A layer keeps, per model, only the bounding box of its finite entries (the least costs of
the states (time bucket i, loss bucket j) inside it, C-ordered) and the column minima of that
box. The array loops on boxes (a box moved up by a loss delta into a start region, a filled
region cut to its box) are compiled, in :mod:`deplbench.heuristics.models.kernels`.
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
    buf: np.ndarray | None = None  # the boxes' least costs, model after model (views in ``subs``)
    box: np.ndarray | None = None  # (M, 4) int64: the boxes, -1s for None (what the layer kernel reads)
    off: np.ndarray | None = None  # where each model's box starts in ``buf``

    @classmethod
    def from_flat(cls, buf: np.ndarray, box: np.ndarray, off: np.ndarray, cmin: np.ndarray, emin: np.ndarray,
                  coff: np.ndarray, eta: int) -> Layer:
        """The layer of :func:`~deplbench.heuristics.models.kernels.layer_step`'s outputs (views, no copy).

        A model's ``etamins`` entry is kept only when its box has rows on both sides of ``eta``.
        """
        lay = cls([], [], [], [], buf, box, off)
        for m, (i0, i1, j0, j1) in enumerate(box.tolist()):
            if i0 < 0:
                lay.boxes.append(None)
                lay.subs.append(None)
                lay.colmins.append(None)
                lay.etamins.append(None)
                continue
            lay.boxes.append((i0, i1, j0, j1))
            h, w = i1 - i0 + 1, j1 - j0 + 1
            lay.subs.append(buf[off[m]:off[m] + h * w].reshape(h, w))
            lay.colmins.append(cmin[coff[m]:coff[m] + w])
            lay.etamins.append(emin[coff[m]:coff[m] + w] if i0 <= eta < i1 else None)
        return lay

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
