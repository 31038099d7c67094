"""Placed sums: the largest ``sum_m x_m C_m`` over the completions of a prefix (Lemma 8b).

``exact``'s position-aware bounds (the placed Cantelli bound, the product bound, the cover
conditions; ``docs/exact-proofs.md``, Lemmas 9, 11 and 12) each need, for a weight vector ``x``
and a prefix, the per_run coefficient sums ``C_m`` of its completions with the remaining epochs
placed by rearrangement: the models in decreasing ``x_m A_m`` within each switch component, the
components in the order every walk passes them. The search asks this millions of times with a
few dozen distinct weight vectors and sets of remaining models, so :class:`PlacedSums` remembers
each weight vector's rank and the placement order per weight vector and set of remaining models,
and sums in plain floats; the terms and their order are those of the direct computation, so the
sums are the same bits (``tests/formulations/exact/test_placed.py``), the prefix's own part too (:func:`_dot`).

May import: numpy, :mod:`deplbench.numeric`. Imported by: :mod:`.bounds`.
"""

from __future__ import annotations

import numpy as np

from deplbench.numeric import dot

__all__ = ["PlacedSums"]


class PlacedSums:
    """The placed sums of one instance.

    Parameters
    ----------
    shape : numpy.ndarray
        The common progress shape's factors ``A_m`` (``a_m = A_m h``).
    cum : numpy.ndarray
        ``cum[m, j]``: the sum of ``a_m(1..j)``.
    walks : Blocks
        The switch components (:class:`deplbench.formulations.exact.walks.Blocks`).
    """

    def __init__(self, shape: np.ndarray, cum: np.ndarray, walks):
        self.shape, self.walks = shape, walks
        self.cum = cum.tolist()  # rows of plain floats: the same values, cheaper to index
        self._ranks: dict[bytes, tuple[list[float], tuple[int, ...]]] = {}
        self._orders: dict[tuple[bytes, int, bool], tuple[int, ...]] = {}

    def __call__(self, p, x: np.ndarray, with_prefix: bool = True, key: bytes | None = None) -> float:
        """``max`` over the completions of ``p`` of ``sum_m x_m C_m``; without the prefix's own part
        when ``with_prefix`` is false (``key``: ``x.tobytes()`` when the caller has it)."""
        if key is None:
            key = x.tobytes()
        ranked = self._ranks.get(key)
        if ranked is None:
            rank = tuple(int(m) for m in np.argsort(-(x * self.shape), kind="stable"))
            ranked = self._ranks[key] = (x.tolist(), rank)
        xs, cum, r, pos = ranked[0], self.cum, p.r, p.k
        total = 0.0
        if with_prefix:
            total = _dot(xs, p.s) if len(xs) < 8 else dot(x, p.s)
        for m in self._order(key, ranked[1], r, p.last >= 0):
            row = cum[m]
            total += xs[m] * (row[pos + r[m]] - row[pos])
            pos += r[m]
        return total

    def _order(self, key: bytes, rank: tuple[int, ...], r: tuple[int, ...], placed: bool) -> tuple[int, ...]:
        """The remaining models in placement order: by component (only after the first epoch, as
        :meth:`~deplbench.formulations.exact.walks.Blocks.where` is asked), each component in ``rank`` order (``rank`` is stable)."""
        need = self.walks.mask(r)
        okey = (key, need, placed)
        out = self._orders.get(okey)
        if out is None:
            where = self.walks.where(r) if placed else None
            out = tuple(m for m in rank if need >> m & 1)
            if where is not None:
                out = tuple(sorted(out, key=where.__getitem__))
            self._orders[okey] = out
        return out


def _dot(xs: list[float], ys) -> float:
    """:func:`deplbench.numeric.dot` of fewer than 8 terms in plain floats: numpy's pairwise sum adds
    so few products one after the other, from ``-0.0``; the products are the same IEEE products."""
    total = -0.0
    for a, b in zip(xs, ys, strict=True):
        total += a * b
    return total
