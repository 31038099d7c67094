"""The batched term lattices of :mod:`.lattice_batch`, compiled: the same bits in two loops.

A bracket of ``exact``'s search rounds a handful of terms with new coefficients onto the
lattice, so :func:`~deplbench.instances.evaluator.lattice_batch.batch_pmfs` builds their masses
anew each time; in a long ``per_run`` proof this construction (about thirty small numpy calls per
group of terms) took a sixth of the time. Here the group's grid indices are one loop, the law's
table is read by :func:`~deplbench.instances.evaluator.lattice.read` as before (tabulated or
not), and the cell masses, tails and trims of every term are a second loop.

**Bit-identical** to the numpy construction (so to ``lattice.term_pmf``): every elementwise
step is the same IEEE operation on the same operands (``float(j) * scale``, ``floor``, ``clip``,
the three cell formulas, ``maximum(cell, 0)``); the tails' partial sums are sequential, as
``cumsum``'s; the dropped upper tail is summed by numpy's own pairwise algorithm (blocks of
128, eight accumulators, halves rounded to multiples of eight), as ``ndarray.sum`` does it. A
tail longer than the 256-entry prefix goes back to ``lattice.lump_trim``, as in the numpy path.
``tests/instances/evaluator/test_lattice_batch.py`` runs its bit-for-bit comparison with and without this module.

The bracket's other small loops live here too, each the same operations as its numpy twin
(``tests/formulations/test_exact_kernels.py``): the clip and trim of a convolution (:func:`clip_lump_trim`),
the histogram bracket's crossing (:func:`crossing`), numpy's pairwise sum and binary search
(:func:`pairwise_sum`, :func:`search_left`, also used by ``exact``'s region keys).

Used once imported: :mod:`.lattice_batch` (as :mod:`.quantile` and :mod:`.smooth`) looks this
module up in ``sys.modules`` and never imports it, so numba's import stays off the paths that do
not need it (a one-plan evaluation, the CLI's start-up). ``exact``, ``bruteforce``, the DepL methods and the SAA methods (whose start
plan is DepL's) declare it among their run imports, so it is loaded before their clocks start.

May import: numpy, numba, ``instances.evaluator.lattice`` and ``deplbench.numeric`` (its compile options).
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.instances.evaluator import lattice as L
from deplbench.numeric import JIT

__all__ = ["group_pieces", "clip_lump_trim", "crossing", "pairwise_sum", "search_left"]

PREFIX = 256  # lattice_batch.lump_trim_many's prefix of tail sums


@numba.njit("Tuple((int64[::1], int64[::1]))(int64[::1], int64[::1], float64[::1], float64[::1], "
            "float64, float64, boolean)", **JIT)
def _indices(j0s, lens, scales, pads, lo_i, hi_i, positive):  # pragma: no cover - compiled
    """The grid indices of every term laid end to end (reversed as a whole for ``positive`` false)
    and, per term, the number of raw indices outside the table (below it, or above it)."""
    total = 0
    for n in range(len(lens)):
        total += lens[n]
    idx = np.empty(total, dtype=np.int64)
    firsts = np.zeros(len(lens), dtype=np.int64)
    k = 0
    for n in range(len(lens)):
        for i in range(lens[n]):
            v = float(j0s[n] + i) * scales[n]
            if positive:
                raw = np.floor(v - pads[n])
                if raw < lo_i:
                    firsts[n] += 1
            else:
                raw = np.ceil(v + pads[n])
                if raw > hi_i:
                    firsts[n] += 1
            raw = min(max(raw, lo_i), hi_i)
            idx[k if positive else total - 1 - k] = np.int64(raw)
            k += 1
    return idx, firsts


@numba.njit("float64(float64[::1], int64, int64)", **JIT)
def pairwise_sum(a, lo, n):  # pragma: no cover - compiled
    """``a[lo:lo + n].sum()`` in numpy's order (its ``pairwise_sum`` for float64)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        while i < n - n % 8:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(a, lo, n2) + pairwise_sum(a, lo + n2, n - n2)


@numba.njit("float64[::1](float64[::1], int64[::1], int64, int64[::1], int64[::1], boolean)", **JIT)
def _cells(w, idx, split, lens, firsts, positive):  # pragma: no cover - compiled
    """``pm`` of the numpy path: per term its leading 0, then its cells, the mass below the
    table added at its first grid index inside it; the below and above masses after it, per term."""
    total = len(idx)
    T = len(lens)
    pm = np.empty(total + 2 * T)
    pm[0] = 0.0
    for k in range(total - 1):  # the cell between points k and k + 1 of the array as given
        a, b = idx[k] < split, idx[k + 1] < split
        if b:
            c = w[k + 1] - w[k]
        elif a:
            c = 1.0 - w[k] - w[k + 1]
        else:
            c = w[k] - w[k + 1]
        if c < 0.0:  # np.maximum(c, 0.0): keeps NaN and -0.0
            c = 0.0
        pm[(k if positive else total - 2 - k) + 1] = c  # back in the terms' order
    s = 0
    for n in range(T):
        r = s if positive else total - s - lens[n]  # the term's first entry in the array as given
        first, last = r, r + lens[n] - 1
        lo_mass = w[first] if idx[first] < split else 1.0 - w[first]
        hi_mass = 1.0 - w[last] if idx[last] < split else w[last]
        below, above = (lo_mass, hi_mass) if positive else (hi_mass, lo_mass)
        pm[s] = 0.0
        pm[s + min(firsts[n], lens[n] - 1)] += below
        pm[total + 2 * n] = below
        pm[total + 2 * n + 1] = above
        s += lens[n]
    return pm


@numba.njit("Tuple((float64[::1], int64[:, ::1], float64[:, ::1]))(float64[::1], int64[::1])", **JIT)
def _trim(pm, lens):  # pragma: no cover - compiled
    """``lump_trim_many`` of the terms of ``pm``: their kept masses end to end, per term
    ``(i0, i1, fallback)`` and ``(low, high)``."""
    T = len(lens)
    width = 1
    for n in range(T):
        width = max(width, lens[n])
    width = min(PREFIX, width)
    flat = np.empty(len(pm))
    ints = np.zeros((T, 3), dtype=np.int64)
    sums = np.zeros((T, 2))
    s = 0
    f = 0
    for t in range(T):
        n = lens[t]
        m = min(n, width)
        c = 0.0
        i0 = 0
        low = 0.0
        for i in range(m):  # cumsum of the head, counted where <= LUMP (the sums rise)
            c += pm[s + i]
            if c <= L.LUMP:
                i0 += 1
                low = c
        c = 0.0
        k = 0
        for i in range(m):
            c += pm[s + n - 1 - i]
            if c <= L.TRIM:
                k += 1
        if (i0 == m or k == m) and m < n:
            ints[t, 2] = 1  # a tail past the prefix: lattice.lump_trim
            s += n
            continue
        i0 = min(i0, n - 1)
        i1 = max(n - k, i0 + 1)
        sums[t, 0] = low
        sums[t, 1] = pairwise_sum(pm, s + i1, n - i1) if i1 < n else 0.0
        ints[t, 0] = i0
        ints[t, 1] = i1
        for i in range(i0, i1):
            flat[f + i - i0] = pm[s + i]
        if i0 > 0:
            flat[f] += low
        f += i1 - i0
        s += n
    return flat[:f], ints, sums


@numba.njit("Tuple((float64[::1], int64[:, ::1], float64[:, ::1]))(float64[::1])", **JIT)
def _clip_trim(pm):  # pragma: no cover - compiled
    """``np.maximum(pm, 0, out=pm)`` (in place; keeps NaN and -0.0), then :func:`_trim` of ``pm`` as one term."""
    for i in range(len(pm)):
        if pm[i] < 0.0:
            pm[i] = 0.0
    lens = np.empty(1, dtype=np.int64)
    lens[0] = len(pm)
    return _trim(pm, lens)


def clip_lump_trim(start: int, pm: np.ndarray) -> tuple[int, np.ndarray, float, float]:
    """``lattice.lump_trim(start, pm)`` of ``pm`` clipped at 0 in place (a convolution's round-off),
    to the bit: one compiled call where the lattice bracket's merges made about ten numpy calls."""
    flat, ints, sums = _clip_trim(pm)
    i0, i1, back = ints[0].tolist()
    if back:  # a tail past the prefix: the numpy path, as lump_trim_many
        return L.lump_trim(start, pm)
    low, high = sums[0].tolist()
    return start + i0, flat, low + high, (i0 + len(pm) - i1 + 2) * L.EPS


def group_pieces(dist, d: float, positive: bool, lo_i: int, hi_i: int, j0s: list[int], lens: list[int],
                 scales: list[float], pads: list[float]) -> tuple[list[tuple], list[float], list[float]]:
    """What ``lattice_batch._group_numpy`` returns: per term ``lump_trim``'s ``(start, masses, moved,
    err)``, and the masses below and above the table."""
    lens_a = np.array(lens, dtype=np.int64)
    idx, firsts = _indices(np.array(j0s, dtype=np.int64), lens_a, np.array(scales, dtype=float),
                           np.array(pads, dtype=float), float(lo_i), float(hi_i), positive)
    w, split = L.read(dist, d, idx)
    pm = _cells(np.ascontiguousarray(w, dtype=float), idx, split, lens_a, firsts, positive)
    total = len(idx)
    flat, ints, sums = _trim(pm[:total], lens_a)
    out = []
    f = s = 0
    for t, n in enumerate(lens):
        i0, i1, back = ints[t].tolist()
        if back:
            out.append(L.lump_trim(j0s[t], pm[s:s + n].copy()))
        else:
            low, high = sums[t].tolist()
            out.append((j0s[t] + i0, flat[f:f + i1 - i0].copy(), low + high, (i0 + n - i1 + 2) * L.EPS))
            f += i1 - i0
        s += n
    ba = pm[total:].tolist()
    return out, ba[0::2], ba[1::2]


@numba.njit(numba.types.int64(numba.types.Array(numba.types.float64, 1, "A", readonly=True), numba.types.float64),
            **JIT)
def search_left(a, x):  # pragma: no cover - compiled
    """``np.searchsorted(a, x, side="left")`` of a sorted vector: numpy's binary search (the first
    ``i`` with ``not a[i] < x``)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


_RO1 = numba.types.Array(numba.types.float64, 1, "A", readonly=True)  # takes writeable arrays too
_RO2 = numba.types.Array(numba.types.float64, 2, "A", readonly=True)


@numba.njit(numba.types.Tuple((numba.types.boolean, numba.types.int64, numba.types.int64))(
    _RO1, _RO1, _RO2, numba.types.float64), **JIT)
def _crossing(cdf, pmf, K, level):  # pragma: no cover - compiled
    """``smooth.crossing`` in one loop: the binary search of ``searchsorted(cdf, level)``, then the rows
    ``J`` of ``sum_cdf`` in order, each entry ``C_J + (0.0 + p_{J+1} K[0, t] + ... + p_{J+k} K[k-1, t])``
    (``thin_matmul``'s order), the first ``>= level`` in row-major order."""
    k, T, n = K.shape[0], K.shape[1], len(pmf)
    J1 = search_left(cdf, level)
    if J1 >= n:
        return False, 0, 0
    for J in range(J1 - k - 1, J1 + 1):
        Jc = min(max(J, -1), n)  # C = [0, cdf..., cdf[-1]] at Jc + 1
        base = 0.0 if Jc == -1 else (cdf[Jc] if Jc < len(cdf) else cdf[len(cdf) - 1])
        for t in range(T):
            s = 0.0
            for m in range(k):
                i = J + 1 + m  # p_{J+1} .. p_{J+k}, zero outside the pmf
                s += (pmf[i] if 0 <= i < n else 0.0) * K[m, t]
            if base + s >= level:
                return True, J, t
    return False, 0, 0


def crossing(cdf: np.ndarray, pmf: np.ndarray, K: np.ndarray, level: float) -> tuple[int, int] | None:
    """``smooth.crossing`` compiled, to the bit (``tests/formulations/test_exact_kernels.py``)."""
    hit, J, t = _crossing(cdf, pmf, K, level)
    return (J, t) if hit else None
