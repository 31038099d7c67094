"""Views of one layer of DepL stage 2's dynamic program (:mod:`deplbench.heuristics.models.graph`).

A layer keeps, per model, only the bounding box of its finite entries (the least costs of the
states (time bucket i, loss bucket j) inside it, C-ordered) and the column minima of that box.
The graph stores its layers in flat chunks (:mod:`deplbench.heuristics.models.step`); a
:class:`Layer` is the per-model view of one, for inspection and the tests. Imports numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Box = tuple[int, int, int, int]  # inclusive (i0, i1, j0, j1) of the finite entries


@dataclass
class Layer:
    """One epoch of the DP: per model, the box of its finite entries and their least costs (or None)."""

    boxes: list[Box | None]
    subs: list[np.ndarray | None]
    colmins: list[np.ndarray | None] = field(default_factory=list)  # per model: least cost per column of its box
    etamins: list[np.ndarray | None] = field(default_factory=list)  # the same over the rows <= eta (None: all or none)

    @classmethod
    def from_flat(cls, buf: np.ndarray, cbuf: np.ndarray, box: np.ndarray, off: np.ndarray, coff: np.ndarray,
                   eta: int) -> Layer:
        """The layer whose boxes are ``box`` (-1s: none), least costs ``buf[off[m]:]`` and column minima
        ``cbuf[coff[m]:]`` (then those of the rows <= eta, kept only where the box straddles ``eta``)."""
        lay = cls([], [], [], [])
        for m, (i0, i1, j0, j1) in enumerate(box.tolist()):
            if i0 < 0:
                for part in (lay.boxes, lay.subs, lay.colmins, lay.etamins):
                    part.append(None)
                continue
            h, w, o, c = i1 - i0 + 1, j1 - j0 + 1, int(off[m]), int(coff[m])
            lay.boxes.append((i0, i1, j0, j1))
            lay.subs.append(buf[o:o + h * w].reshape(h, w))
            lay.colmins.append(cbuf[c:c + w])
            lay.etamins.append(cbuf[c + w:c + 2 * w] if i0 <= eta < i1 else None)
        return lay
