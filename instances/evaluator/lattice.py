"""Upper rounding of one loss term ``T = c Z`` onto the lattice ``{j h}`` from a cached CDF table.

The certified bracket (:mod:`deplbench.instances.evaluator.quantile`) needs, for every term, a
sub-probability vector ``G`` on the lattice with (proof: ``docs/evaluator.md``)

    G(x) <= P(T <= x)  and  P(T <= x) <= G(x + s) + b   for every x,

where ``G(x)`` is the lattice CDF at the last lattice point ``<= x``, ``s`` the term's
*slack* and ``b`` its dropped tail mass. Evaluating the law's CDF at every lattice point
of every term (the plain construction, ``s = h``) costs one special-function call per
point; here the CDF of ``Z`` is tabulated once per law on the grid ``{i d}`` with ``d`` a
power of two, and a term reads the table:

* ``c > 0``: ``G(x_j) = F_Z(z_i)`` with ``z_i`` the last grid point ``<= x_j / c``;
* ``c < 0``: ``G(x_j) = P(Z >= z_i)`` with ``z_i`` the first grid point ``>= x_j / c``.

Either way ``G(x_j) <= P(T <= x_j)`` (``z_i`` is on the safe side) and
``G(x_j) >= P(T <= x_j - |c| d)`` (``z_i`` is less than one grid step away), so the slack is
``s = h + |c| d`` (times ``1 + 1e-6`` for the floating-point index computation). Grid
steps are powers of two, so a finer table holds every point of a coarser one at the same
``z`` and gives bit-identical values: the result never depends on what is cached.

Left of the median the table holds ``F_Z``, right of it ``P(Z > z)`` (so tail cells keep
their relative precision, as in :meth:`~deplbench.instances.laws.distributions.Dist.cell_masses`).
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

TAIL = 1e-10  # mass dropped in each tail of each term (into beta, which only widens lo)
GRID_FRACTION = 0.125  # table step d <= GRID_FRACTION * h / |c|: extra slack per term <= h / 8
MAX_TABLE = 1 << 21  # grid points of one table, about at most (the step is coarsened beyond it)
MAX_TABLES = 64  # laws whose table is kept (least recently used dropped)
MAX_TOTAL = 1 << 24  # tabulated points kept in all (128 MB; least recently used dropped)
INDEX_SLACK = 1e-6  # relative safety on the slack (float rounding of the index computation)
TRIM = 1e-16  # mass dropped from the upper tail of every term and after each convolution
LUMP = 1e-9  # mass lumped from the lower tail of every term and after each convolution
EPS = float(np.finfo(float).eps)
_REL = 4e-15  # grid coordinates are moved this far (relative, plus 1e-12) to the safe side


EDGE = 0.01  # a core end within this share of the core's span from a finite support end moves onto it


@lru_cache(maxsize=1024)
def core(dist) -> tuple[float, float]:
    """The core [ppf(TAIL), isf(TAIL)] of a law, clipped to its support (cached per law).

    An end of the core close to a finite end of the support (mass piled against it: gamma of
    shape <= 1, a penalty truncated near its centre) is moved onto it, so that no tail is cut
    there: the support's end carries no mass beyond it (``F = 0`` below ``lower``, ``1`` above ``upper``).
    """
    lo, hi = max(dist.lower, float(dist.ppf(TAIL))), min(dist.upper, float(dist.isf(TAIL)))
    span = hi - lo
    if math.isfinite(dist.lower) and lo - dist.lower <= EDGE * (hi - dist.lower):
        lo = float(dist.lower)
    if math.isfinite(dist.upper) and dist.upper - hi <= EDGE * (dist.upper - lo):
        hi = float(dist.upper)
    return (lo, hi) if hi > lo else (lo, lo + max(span, abs(lo) * 1e-12, 1e-300))


@dataclass(frozen=True)
class Table:
    """Tabulated ``F_Z`` (left of the median) and ``P(Z > z)`` (right of it) on ``{i d}``.

    ``val[i - i0]`` is the value at ``z = i d`` for ``i0 <= i < i0 + len(val)``; ``split``
    is the first grid index ``i`` (absolute) with ``i d >= median``.
    """

    d: float
    i0: int
    split: int
    val: np.ndarray

    def coarsen(self, d: float) -> Table:
        """The same table on the coarser grid of step ``d`` (a power-of-two multiple)."""
        k = round(d / self.d)
        if k == 1:
            return self
        a = -(-self.i0 // k)  # first coarse index inside the table
        b = (self.i0 + len(self.val) - 1) // k
        idx = np.arange(a, b + 1) * k - self.i0
        return Table(d, a, -(-self.split // k), self.val[idx])


_TABLES: OrderedDict = OrderedDict()  # dist -> {step: Table}, the finest under key 0.0
_KEPT = [0]  # tabulated points of the finest tables in _TABLES (kept as a sum: no scan per insertion)
_DIRECT: dict = {}  # dist -> points read without a table so far (see read)
TABULATE_AFTER = 0.5  # a law is tabulated once the points read without a table reach this share of it


def table(dist, d: float) -> Table:
    """The table of ``dist`` at step ``d`` (a power of two), from the cache when a finer one exists."""
    ts = _TABLES.get(dist)
    if ts is not None and ts[0.0].d <= d:
        _TABLES.move_to_end(dist)
        t = ts.get(d)
        if t is None:
            t = ts[d] = ts[0.0].coarsen(d)
        return t
    i0, i1, split = _grid(dist, d)
    z = np.arange(i0, i1 + 1) * d
    s = split - i0
    val = np.empty(len(z))
    val[:s] = dist.cdf(z[:s])
    val[s:] = dist.sf(z[s:])
    val.setflags(write=False)
    t = Table(d, i0, split, val)
    if ts is not None:
        _KEPT[0] -= len(ts[0.0].val)  # a finer table replaces this law's
    _TABLES[dist] = {0.0: t, d: t}
    _KEPT[0] += len(val)
    _TABLES.move_to_end(dist)
    while len(_TABLES) > 1 and (len(_TABLES) > MAX_TABLES or _KEPT[0] > MAX_TOTAL):
        _KEPT[0] -= len(_TABLES.popitem(last=False)[1][0.0].val)
    return t


def read(dist, d: float, idx: np.ndarray) -> tuple[np.ndarray, int]:
    """The values of ``table(dist, d)`` at the absolute grid indices ``idx`` (inside its core), and its ``split``.

    Read at those points only, without a table, the values are the table's to the bit
    (``z = i d`` is the same product, ``cdf``/``sf`` act element by element; a coarsened table's
    ``(i k) d_f`` is the same float as ``i d``), at a fraction of its cost when the terms'
    lattices are coarser than the grid (by ``GRID_FRACTION`` at least) and the law serves few
    terms. A law with ``tabulate`` false is always read so. Any other law is read so until the
    points read without a table reach ``TABULATE_AFTER`` times the size of the table it would
    need; then it is tabulated (a solve that certifies a few plans, such as DepL's or the
    registry's re-check in a fresh process, evaluates a tenth of a table or less; one that
    brackets thousands, such as ``exact``, pays for at most that share of a table twice).
    """
    if dist.tabulate:
        ts = _TABLES.get(dist)
        if ts is not None and ts[0.0].d <= d:
            t = table(dist, d)
            return t.val[idx - t.i0], t.split
        i0, i1, split = _grid(dist, d)
        seen = _DIRECT.get(dist, 0) + len(idx)
        if seen >= TABULATE_AFTER * (i1 - i0 + 1):
            _DIRECT.pop(dist, None)
            t = table(dist, d)
            return t.val[idx - t.i0], t.split
        if len(_DIRECT) >= MAX_TABLES * 16:  # laws seen once (no table yet): forget them
            _DIRECT.clear()
        _DIRECT[dist] = seen
    else:
        split = _grid(dist, d)[2]
    z = idx * d
    left = idx < split
    w = np.empty(len(idx))
    w[left] = dist.cdf(z[left])
    w[~left] = dist.sf(z[~left])
    return w, split


def _grid(dist, d: float) -> tuple[int, int, int]:
    """The grid of ``dist``'s table at step ``d``: its first and last indices (one point past
    the core on each side) and ``split``, the first index with ``i d >= median``."""
    zlo, zhi = core(dist)
    i0, i1 = math.floor(zlo / d) - 1, math.ceil(zhi / d) + 1
    return i0, i1, _first_at_least(dist.median, d, i0, i1)


def _first_at_least(x: float, d: float, i0: int, i1: int) -> int:
    """``searchsorted(arange(i0, i1 + 1) * d, x) + i0``: the first ``i`` in ``[i0, i1]`` with
    ``i d >= x`` (``i1 + 1`` if none), without the array (a guess moved to the exact answer)."""
    k = min(max(math.ceil(x / d), i0), i1 + 1)
    while k > i0 and (k - 1) * d >= x:
        k -= 1
    while k <= i1 and k * d < x:
        k += 1
    return k


def clear_tables() -> None:
    """Drop every cached table (benchmarks measure cold runs with it)."""
    _TABLES.clear()
    _DIRECT.clear()
    _KEPT[0] = 0
    core.cache_clear()


def grid_step(dist, coef: float, h: float, fraction: float = GRID_FRACTION) -> float:
    """The table step for a term: the largest power of two ``<= fraction h / |c|``.

    Coarsened (more slack, reported) when the table would exceed ``MAX_TABLE`` points.
    """
    zlo, zhi = core(dist)
    d = min(fraction * h / abs(coef), (zhi - zlo) / 4)  # at least three grid points inside the core
    d = max(d, (zhi - zlo) / MAX_TABLE)
    return 2.0 ** math.floor(math.log2(d))


def slack(coef: float, h: float, d: float) -> float:
    """Upper bound on the rounding error of one term: ``h + |c| d`` with a safety factor."""
    return (h + abs(coef) * d) * (1 + INDEX_SLACK)


def _masses(t: Table, idx: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``P(z_a < Z <= z_b)`` for consecutive increasing table indices, and both tails."""
    w = t.val[idx - t.i0]
    p = int(idx.searchsorted(t.split))  # w[:p] are CDF values, w[p:] survival values
    if p == 0:
        cells = w[:-1] - w[1:]
    elif p == len(w):
        cells = np.diff(w)
    else:
        cells = np.concatenate((np.diff(w[:p]), [1.0 - w[p - 1] - w[p]], w[p:-1] - w[p + 1:]))
    below = float(w[0]) if p > 0 else 1.0 - float(w[0])
    above = float(w[-1]) if p < len(w) else 1.0 - float(w[-1])
    return np.maximum(cells, 0.0), below, above


def _tail_len(x: np.ndarray, cap: float) -> tuple[int, float]:
    """(k, mass of x[:k]) with k the most leading entries whose cumulative mass is <= cap."""
    n = len(x)
    if n == 0 or x[0] > cap:  # the usual case after a trim: no tail to take (no cumsum needed)
        return 0, 0.0
    # tails are short: a prefix first (cumsum adds in order, so its sums are those of the whole)
    m = min(n, 256)
    while True:
        c = x[:m].cumsum()
        k = int(c.searchsorted(cap, side="right"))
        if k < m or m == n:
            return k, float(c[k - 1]) if k else 0.0
        m = min(n, 8 * m)


def lump_trim(start: int, pmf: np.ndarray) -> tuple[int, np.ndarray, float, float]:
    """Lump the lower tail (cumulative mass <= LUMP) at its upper end, drop the upper tail (<= TRIM).

    Returns (start, masses, moved mass, round-off bound of the partial sums). Lumping moves
    mass up (the lattice CDF stays a lower bound of the true one), dropping moves it to
    +infinity; the moved mass goes to the budget ``beta`` (docs/evaluator.md).
    """
    n = len(pmf)
    i0, low = _tail_len(pmf, LUMP)
    i0 = min(i0, n - 1)
    k, high = _tail_len(pmf[::-1], TRIM)
    i1 = max(n - k, i0 + 1)
    high = float(pmf[i1:].sum()) if i1 < n else 0.0
    out = pmf[i0:i1]
    if i0 > 0:
        out = out.copy()
        out[0] += low  # the lumped mass sits at the first kept point
    return start + i0, out, low + high, (i0 + n - i1 + 2) * EPS


def term_pmf(dist, coef: float, h: float,
             fraction: float = GRID_FRACTION) -> tuple[int, np.ndarray, float, float, float]:
    """Lattice sub-probability of ``coef * Z`` rounded up: (start, masses, beta, err, slack).

    The table step is :func:`grid_step` (``|c| d <= fraction h``); the slack is ``h + |c| d``
    with its safety factor, and every lattice point satisfies the pointwise inequalities
    ``G(x_j) <= P(T <= x_j)`` and ``P(T <= x_j - |c| d (1 + INDEX_SLACK)) <= G(x_j) + beta``.

    ``masses[i]`` sits at lattice index ``start + i``; the mass below the core is *lumped*
    at the first lattice point whose grid index lies in the core (moved up: ``G`` stays a
    lower bound of the CDF), the mass above it is dropped, then :func:`lump_trim` applies.
    ``beta`` (the moved masses) and ``err`` (round-off) are the term's shares of the
    budgets. The masses are read-only. One term at a time, not memoised:
    :mod:`~deplbench.instances.evaluator.lattice_batch` builds and memoises the terms of a bracket
    together, bit-identical to this function (``tests/instances/evaluator/test_lattice_batch.py``).
    """
    zlo, zhi = core(dist)
    tlo, thi = sorted((coef * zlo, coef * zhi))
    if thi - tlo <= h:
        return _narrow_pmf(dist, coef, h, tlo, thi)
    d = grid_step(dist, coef, h, fraction)
    t = table(dist, d)
    j0 = math.floor(tlo / h)
    j1 = max(math.ceil(thi / h), j0) + 1  # one point past the core: its whole mass is below it
    # grid points inside the core: present in every table of step <= d, so clipping to them
    # gives the same result whatever table is cached
    lo_i, hi_i = math.ceil(zlo / d), math.floor(zhi / d)
    v = np.arange(j0, j1 + 1) * (h / (coef * d))  # x_j / (c d): grid coordinates of the lattice points
    pad = _REL * max(abs(v[0]), abs(v[-1])) + 1e-12  # > the float error of v (three roundings)
    if coef > 0:  # last grid point <= x_j / c, increasing in j
        raw = np.floor(v - pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)
        cells, below, above = _masses(t, idx)
        first = int(np.searchsorted(raw, lo_i))  # first lattice point not clipped up
    else:  # first grid point >= x_j / c, decreasing in j: P(T <= x_j) = P(Z >= z_i)
        raw = np.ceil(v + pad)
        idx = np.clip(raw, lo_i, hi_i).astype(np.int64)[::-1]
        cells, above, below = _masses(t, idx)
        cells = cells[::-1]
        first = int(np.searchsorted(-raw, -hi_i))  # first lattice point not clipped down (in Z)
    pmf = np.concatenate(([0.0], cells))
    # clipped cells before it are empty: the lower tail sits at x_first. When every lattice point
    # is clipped (a law so wide at the magnitude caps that the core's grid ends past the float
    # error of the last point), it sits at the last point: x_j1 >= the core's upper end, so the
    # mass only moves up and G stays a lower bound of the CDF
    pmf[min(first, len(pmf) - 1)] += below
    err = 4 * EPS * len(pmf)  # each cell mass: a difference of tabulated values
    j0, pmf, moved, e = lump_trim(j0, pmf)
    pmf.setflags(write=False)
    return j0, pmf, below + above + moved, err + e, slack(coef, h, d)


def _narrow_pmf(dist, coef: float, h: float, tlo: float, thi: float) -> tuple[int, np.ndarray, float, float, float]:
    """:func:`term_pmf` of a term whose core spans at most one lattice step: one mass at ``x_j* >= thi``.

    ``G = 0`` below ``x_j*`` and ``P(T <= thi)`` from it on, so ``G(x_j) <= P(T <= x_j)``; the
    upper tail is dropped (into beta) and the lower one lumped there. ``P(T <= x_j - rho) <= G(x_j)
    + beta`` with ``rho = x_j* - tlo``: below ``x_j*`` the point ``x_j - rho`` is below ``tlo``.
    Handles laws whose core is far below the table's resolution (a variance at the caps).
    """
    j = math.ceil(thi / h)
    while j * h < thi:  # the float product may round below
        j += 1
    up = _above_core(dist, coef)  # P(T > thi)
    pmf = np.array([max(1.0 - up, 0.0)])
    pmf.setflags(write=False)
    rho = (j * h - tlo) * (1 + 1e-12)
    return j, pmf, up + 4 * EPS, 4 * EPS, (h + rho) * (1 + INDEX_SLACK) if rho > 0 else h


def _above_core(dist, coef: float) -> float:
    """``P(T > thi)``: the mass of ``T = coef Z`` above its core's upper end ``thi``.

    That is ``P(Z > zhi)`` for ``coef > 0`` and ``P(Z < zlo)`` for ``coef < 0``. ``cdf(zlo)``
    is ``P(Z <= zlo)``, which equals ``P(Z < zlo)`` for a law without atoms but is the whole
    mass of a point mass at ``zlo`` (its core starts at its value): a constant is read exactly.
    """
    zlo, zhi = core(dist)
    if dist.is_constant:
        return float(dist.value > zhi) if coef > 0 else float(dist.value < zlo)
    return float(dist.sf(zhi)) if coef > 0 else float(dist.cdf(zlo))


def merge_smallest(pmfs: list[tuple[int, np.ndarray]],
                   combine: Callable[[int, np.ndarray, int, np.ndarray],
                                     tuple[int, np.ndarray, float, tuple[float, ...]]],
                   moved: float = 0.0, err: float = 0.0) -> tuple[int, np.ndarray, float, float]:
    """Combine lattice pmfs ``(start, masses)`` two at a time, the two shortest first, until one is left.

    ``combine(sa, a, sb, b)`` returns ``(start, masses, moved, errs)`` of their sum; the moved
    masses and the round-off bounds ``errs`` are added, in that order, to the running totals
    that start at ``moved`` and ``err``. Shortest first keeps every convolution small; ties go
    to the earlier pmf (the order of ``pmfs``, then of creation). Returns the last
    ``(start, masses)`` with the totals.
    """
    heap = [(len(pmf), i, j0, pmf) for i, (j0, pmf) in enumerate(pmfs)]
    heapq.heapify(heap)
    tie = len(heap)
    while len(heap) > 1:
        _, _, sa, a = heapq.heappop(heap)
        _, _, sb, b = heapq.heappop(heap)
        start, out, m, errs = combine(sa, a, sb, b)
        moved += m
        for e in errs:
            err += e
        tie += 1
        heapq.heappush(heap, (len(out), tie, start, out))
    _, _, start, pmf = heap[0]
    return start, pmf, moved, err
