"""Lattice pmfs of many loss terms at once: the terms of one law and table step share numpy calls.

A certified bracket of a 60-epoch ``per_epoch`` plan rounds 60 terms (often of one or three
laws) onto one lattice, and :func:`~deplbench.instances.evaluator.lattice.term_pmf` spent about
twenty small numpy calls on each. Here the terms of a group (same law, same table step, same
sign of the coefficient) are laid end to end in one array and every elementwise step of
``term_pmf`` (grid coordinates, clipping, the table read, the cell masses) runs once over the
group; only the tails (:func:`~deplbench.instances.evaluator.lattice.lump_trim`) stay per term.

The result is **bit-identical** to the per-term construction (``lattice.term_pmf``): the
same IEEE operations on the same operands, elementwise (no reduction crosses a term), and each
term's masses are copied into an array of their own before ``lump_trim`` sums them.
``tests/instances/evaluator/test_lattice_batch.py`` compares the two, bit for bit.

Once :mod:`.lattice_jit` is imported (by the methods that certify many plans: ``exact``,
``bruteforce``, DepL's), a group is built by its compiled loops instead, to the same bits; this
module only looks it up in ``sys.modules``, so a one-plan evaluation never pays numba's import.

The memo of term lattices lives here too (:func:`cached_pmfs`, :func:`cached_pmf`): a bracket asks
for all its terms at once, and only the uncached ones are built, in one batch.

May import: ``instances.evaluator.lattice``. Imported by: ``instances.evaluator.quantile``,
``instances.evaluator.smooth``.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict, defaultdict

import numpy as np

from deplbench.instances.evaluator import lattice as L

JIT_MODULE = "deplbench.instances.evaluator.lattice_jit"  # compiled groups, used once imported (never imported here)

MAX_PMFS = 1 << 16  # term lattices kept (least recently used dropped)
MAX_PMF_BYTES = 1 << 27  # and their masses' bytes (128 MB)
_PMFS: OrderedDict = OrderedDict()  # (dist, coef, h, fraction) -> lattice.term_pmf's result (read-only masses)
_BYTES = [0]  # the masses' bytes of the lattices kept (a sum: no scan per insertion)


def compiled():
    """:mod:`.lattice_jit` (the compiled loops of the term lattices and the bracket) once something
    imported it, else None: the evaluator's modules look it up here and never import it."""
    return sys.modules.get(JIT_MODULE)


def cached_pmf(dist, coef: float, h: float, fraction: float = L.GRID_FRACTION) -> tuple:
    """``lattice.term_pmf(dist, coef, h, fraction)``, memoised."""
    r = _PMFS.get((dist, coef, h, fraction))
    return r if r is not None else cached_pmfs(((dist, coef),), h, fraction)[0]


def cached_pmfs(pairs, h: float, fraction: float = L.GRID_FRACTION) -> list[tuple]:
    """``lattice.term_pmf`` of every ``(dist, coef)`` of ``pairs``, memoised; the uncached ones in one batch.

    The batch is bit-identical to ``lattice.term_pmf`` term by term, so what is cached never
    changes a bracket.
    """
    keys = [(dist, coef, h, fraction) for dist, coef in pairs]
    got = [_PMFS.get(k) for k in keys]
    if None not in got:  # a search's steady state: every term cached
        for k in keys:
            _PMFS.move_to_end(k)
        return got
    miss = list(dict.fromkeys(k for k, r in zip(keys, got, strict=True) if r is None))
    new = dict(zip(miss, batch_pmfs(miss), strict=True))
    # a law built for a few brackets (``tabulate`` false: the cover conditions' lifted laws) is not
    # kept: its lattices are never asked for again, and they would push out the reused ones
    for k, r in new.items():
        if k[0].tabulate:
            _PMFS[k] = r
            _BYTES[0] += r[1].nbytes
    while len(_PMFS) > MAX_PMFS or (_BYTES[0] > MAX_PMF_BYTES and len(_PMFS) > 1):
        _BYTES[0] -= _PMFS.popitem(last=False)[1][1].nbytes
    return [r if r is not None else new[k] for k, r in zip(keys, got, strict=True)]


def clear() -> None:
    """Drop every memoised term lattice (benchmarks measure cold runs with it)."""
    _PMFS.clear()
    _BYTES[0] = 0


def batch_pmfs(keys: list[tuple]) -> list[tuple]:
    """``lattice.term_pmf(*key)`` for every key ``(dist, coef, h, fraction)``, grouped by law, step and sign."""
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
        # lattice.term_pmf: v = arange(j0, j1 + 1) * scale, pad from |v[0]|, |v[-1]| (the same products)
        pads.append(L._REL * max(abs(float(j0) * scale), abs(float(j1) * scale)) + 1e-12)
    jit = compiled()
    if jit is not None:
        trimmed, below, above = jit.group_pieces(dist, d, positive, lo_i, hi_i, j0s, lens, scales, pads)
    else:
        trimmed, below, above = _group_numpy(dist, d, positive, lo_i, hi_i, j0s, lens, scales, pads)
    res = []
    for n, (coef, (j0, pmf, moved, e)) in enumerate(zip(coefs, trimmed, strict=True)):
        pmf.setflags(write=False)
        b, a = float(below[n]), float(above[n])
        res.append((j0, pmf, b + a + moved, 4 * L.EPS * lens[n] + e, L.slack(coef, h, d)))
    return res


def _group_numpy(dist, d: float, positive: bool, lo_i: int, hi_i: int, j0s: list[int], lens: list[int],
                 scales: list[float], pads: list[float]) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """Per term ``lump_trim``'s ``(start, masses, moved, err)`` and the masses below and above the table."""
    lens_a = np.array(lens)
    starts = np.concatenate(([0], np.cumsum(lens_a)[:-1]))
    total = int(lens_a.sum())
    seg = np.repeat(np.arange(len(lens)), lens_a)
    j = np.arange(total) - starts[seg] + np.array(j0s)[seg]  # the lattice indices, term after term
    v = j * np.array(scales)[seg]
    pad = np.array(pads)[seg]
    if positive:
        raw = np.floor(v - pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)
        firsts = np.add.reduceat((raw < lo_i).astype(np.int64), starts)  # searchsorted(raw, lo_i): raw rises within a term
        cells, below, above = _masses(*L.read(dist, d, idx), idx, starts, lens_a)
    else:  # each term's indices reversed: the whole array reversed (terms in reverse order too)
        raw = np.ceil(v + pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)[::-1]
        firsts = np.add.reduceat((raw > hi_i).astype(np.int64), starts)  # searchsorted(-raw, -hi_i): raw falls within a term
        rstarts = total - (starts + lens_a)
        cells, above, below = _masses(*L.read(dist, d, idx), idx, rstarts, lens_a)
        cells = cells[::-1]  # back in the terms' order, each term's cells in its own order again
    pm = np.concatenate(([0.0], cells))  # pm[k + 1] = the cell between points k and k + 1
    pm[starts] = 0.0  # ... but a term's first entry is its leading 0 (the cell across two terms goes)
    pos = starts + np.minimum(firsts, lens_a - 1)
    pm[pos] += below
    # an array of its own per term, as lattice.term_pmf's (its sums see the same memory)
    pmfs = [pm[s:s + m].copy() for s, m in zip(starts.tolist(), lens, strict=True)]
    return lump_trim_many(j0s, pmfs), below, above


def lump_trim_many(starts: list[int], pmfs: list[np.ndarray]) -> list[tuple[int, np.ndarray, float, float]]:
    """``lattice.lump_trim`` of every pmf (each at least one entry), the tails' partial sums in one array.

    ``lump_trim`` sums the first (and the last, reversed) up to 256 entries of a pmf with
    ``cumsum``, a sequential scan; the rows of a zero-padded two-dimensional array scan the
    same way, so the tails found are the same. A tail longer than the prefix (rare) is left to
    ``lump_trim`` itself.
    """
    w = min(256, max(len(p) for p in pmfs))
    m = np.array([min(len(p), w) for p in pmfs])
    head = np.zeros((len(pmfs), w))
    tail = np.zeros((len(pmfs), w))
    for i, p in enumerate(pmfs):
        head[i, :m[i]] = p[:m[i]]
        tail[i, :m[i]] = p[::-1][:m[i]]
    inside = np.arange(w) < m[:, None]
    lo_c, hi_c = head.cumsum(axis=1), tail.cumsum(axis=1)
    lo_k = ((lo_c <= L.LUMP) & inside).sum(axis=1)  # searchsorted(cumsum, cap, "right"): the sums rise
    hi_k = ((hi_c <= L.TRIM) & inside).sum(axis=1)
    out = []
    for i, p in enumerate(pmfs):
        n, mi, i0, k = len(p), int(m[i]), int(lo_k[i]), int(hi_k[i])
        if (i0 == mi or k == mi) and mi < n:
            out.append(L.lump_trim(starts[i], p))  # a tail past the prefix
            continue
        low = float(lo_c[i, i0 - 1]) if i0 else 0.0
        i0 = min(i0, n - 1)
        i1 = max(n - k, i0 + 1)
        high = float(p[i1:].sum()) if i1 < n else 0.0
        kept = p[i0:i1]
        if i0 > 0:
            kept = kept.copy()
            kept[0] += low
        out.append((starts[i] + i0, kept, low + high, (i0 + n - i1 + 2) * L.EPS))
    return out


def _masses(w: np.ndarray, split: int, idx: np.ndarray, starts: np.ndarray,
            lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lattice._masses`` of every term laid end to end (``starts``, ``lens``): cells, below, above.

    ``w`` holds the law's table values at the grid indices ``idx`` and ``split`` its table's
    split (:func:`~deplbench.instances.evaluator.lattice.read`).

    ``cells[k]`` is the mass between the points ``k`` and ``k + 1`` of the whole array (those
    across two terms are meaningless and dropped by the caller); ``below`` and ``above`` per term,
    in the order of ``starts``.
    """
    left = idx < split  # CDF values (else survival values)
    a, b = left[:-1], left[1:]
    cells = np.where(b, w[1:] - w[:-1], np.where(a, 1.0 - w[:-1] - w[1:], w[:-1] - w[1:]))
    np.maximum(cells, 0.0, out=cells)
    first, last = starts, starts + lens - 1
    below = np.where(left[first], w[first], 1.0 - w[first])
    above = np.where(left[last], 1.0 - w[last], w[last])
    return cells, below, above
