"""Lattice pmfs of many loss terms at once: the terms of one law and table step share numpy calls.

A certified bracket of a 60-epoch ``per_epoch`` plan rounds 60 terms (often of one or three
laws) onto one lattice, and :func:`~deplbench.instances.evaluator.lattice.term_pmf` spent about
twenty small numpy calls on each. Here the terms of a group (same law, same table step, same
sign of the coefficient) are laid end to end in one array and every elementwise step of
``term_pmf`` (grid coordinates, clipping, the table read, the cell masses) runs once over the
group; only the tails (:func:`~deplbench.instances.evaluator.lattice.lump_trim`) stay per term.

The result is **bit-identical** to the per-term construction (``lattice.term_pmf_one``): the
same IEEE operations on the same operands, elementwise (no reduction crosses a term), and each
term's masses are copied into an array of their own before ``lump_trim`` sums them.
``tests/test_lattice_batch.py`` compares the two, bit for bit.

May import: ``instances.evaluator.lattice``. Imported by: ``instances.evaluator.lattice`` (lazily).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from deplbench.instances.evaluator import lattice as L


def batch_pmfs(keys: list[tuple]) -> list[tuple]:
    """``term_pmf_one(*key)`` for every key ``(dist, coef, h, fraction)``, grouped by law, step and sign."""
    out: list = [None] * len(keys)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for n, (dist, coef, h, fraction) in enumerate(keys):
        zlo, zhi = L.core(dist)
        tlo, thi = sorted((coef * zlo, coef * zhi))
        if thi - tlo <= h:
            out[n] = L._narrow_pmf(dist, coef, h, tlo, thi)
        else:
            groups[(dist, L.grid_step(dist, coef, h, fraction), coef > 0, h)].append(n)
    for (dist, d, positive, h), members in groups.items():
        for n, res in zip(members, _group(dist, d, positive, h, [keys[n][1] for n in members]), strict=True):
            out[n] = res
    return out


def _group(dist, d: float, positive: bool, h: float, coefs: list[float]) -> list[tuple]:
    """The pmfs of the terms ``c Z`` (``c`` in ``coefs``, all of one sign) on the table of step ``d``."""
    t = L.table(dist, d)
    zlo, zhi = L.core(dist)
    lo_i, hi_i = math.ceil(zlo / d), math.floor(zhi / d)
    j0s, lens, scales, pads = [], [], [], []
    for coef in coefs:
        tlo, thi = sorted((coef * zlo, coef * zhi))
        j0 = math.floor(tlo / h)
        j1 = max(math.ceil(thi / h), j0) + 1
        scale = h / (coef * d)
        j0s.append(j0)
        lens.append(j1 - j0 + 1)
        scales.append(scale)
        # term_pmf_one: v = arange(j0, j1 + 1) * scale, pad from |v[0]|, |v[-1]| (the same products)
        pads.append(L._REL * max(abs(float(j0) * scale), abs(float(j1) * scale)) + 1e-12)
    lens_a = np.array(lens)
    starts = np.concatenate(([0], np.cumsum(lens_a)[:-1]))
    total = int(lens_a.sum())
    seg = np.repeat(np.arange(len(coefs)), lens_a)
    j = np.arange(total) - starts[seg] + np.array(j0s)[seg]  # the lattice indices, term after term
    v = j * np.array(scales)[seg]
    pad = np.array(pads)[seg]
    if positive:
        raw = np.floor(v - pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)
        firsts = np.add.reduceat((raw < lo_i).astype(np.int64), starts)  # searchsorted(raw, lo_i): raw rises within a term
        cells, below, above = _masses(t, idx, starts, lens_a)
    else:  # each term's indices reversed: the whole array reversed (terms in reverse order too)
        raw = np.ceil(v + pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)[::-1]
        firsts = np.add.reduceat((raw > hi_i).astype(np.int64), starts)  # searchsorted(-raw, -hi_i): raw falls within a term
        rstarts = total - (starts + lens_a)
        cells, above, below = _masses(t, idx, rstarts, lens_a)
        cells = cells[::-1]  # back in the terms' order, each term's cells in its own order again
    pm = np.concatenate(([0.0], cells))  # pm[k + 1] = the cell between points k and k + 1
    pm[starts] = 0.0  # ... but a term's first entry is its leading 0 (the cell across two terms goes)
    pos = starts + np.minimum(firsts, lens_a - 1)
    pm[pos] += below
    res = []
    for n, coef in enumerate(coefs):
        s, m = int(starts[n]), int(lens_a[n])
        pmf = pm[s:s + m].copy()  # an array of its own, as term_pmf_one's (its sums see the same memory)
        err = 4 * L.EPS * m
        j0, pmf, moved, e = L.lump_trim(j0s[n], pmf)
        pmf.setflags(write=False)
        b, a = float(below[n]), float(above[n])
        res.append((j0, pmf, b + a + moved, err + e, L.slack(coef, h, d)))
    return res


def _masses(t, idx: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lattice._masses`` of every term laid end to end (``starts``, ``lens``): cells, below, above.

    ``cells[k]`` is the mass between the points ``k`` and ``k + 1`` of the whole array (those
    across two terms are meaningless and dropped by the caller); ``below`` and ``above`` per term,
    in the order of ``starts``.
    """
    w = t.val[idx - t.i0]
    left = idx < t.split  # CDF values (else survival values)
    a, b = left[:-1], left[1:]
    cells = np.where(b, w[1:] - w[:-1], np.where(a, 1.0 - w[:-1] - w[1:], w[:-1] - w[1:]))
    np.maximum(cells, 0.0, out=cells)
    first, last = starts, starts + lens - 1
    below = np.where(left[first], w[first], 1.0 - w[first])
    above = np.where(left[last], 1.0 - w[last], w[last])
    return cells, below, above
