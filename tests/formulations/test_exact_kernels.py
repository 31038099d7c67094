"""Compiled loops of ``exact`` against the numpy code they replaced, bit for bit.

Each reference below is the code of ``f473b0c`` (before the loops were compiled), kept here as the
statement of what the loop must give: the region keys' knapsack of a support (``_rows`` and
``_support``), the label store's dominance scan and the lifted laws' table reads. The lattice
bracket's compiled loops are tests/instances/evaluator/test_lattice_jit.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.formulations.exact import exact as exact_mod
from deplbench.formulations.exact import labels
from deplbench.formulations.exact.fractional import EMPTY, MANY, MET, ONE, fractional, lagrangian
from deplbench.formulations.exact.labels import LabelStore
from deplbench.formulations.exact.lifted import Rounded, lifted
from deplbench.instances.laws.noise import noise_dist
from deplbench.numeric import matvec
from deplbench.registry import generate

# ---- the region keys' knapsack of a support ---------------------------------------------------

def _rows_ref(reg, c, lo: np.ndarray, room: int, free: list[int]) -> tuple[float, list[np.ndarray]]:
    """``RegionBound._rows`` of f473b0c."""
    M = reg.M
    n = lo.tolist()
    if c.beta is None:
        return (float(sum(c.h[m, n[m]] for m in range(M))), [c.inc[m, n[m]: n[m] + room] for m in free])
    a, cum = reg.a, reg.cum
    off = [0] * M
    run = 0
    for m in reg._order(c.rank, lo):
        if n[m] > 0:
            off[m] = run
            run += n[m]
    total = 0.0
    for m in range(M):
        if n[m] > 0:
            total += c.beta[m] * (cum[m, off[m] + n[m]] - cum[m, off[m]]) + c.sep[m, n[m]]
    incs = [c.beta[m] * a[m, off[m] + n[m]: off[m] + n[m] + room] + c.sep_inc[m, n[m]: n[m] + room] for m in free]
    return float(total), incs


def _support_ref(reg, c, lo: np.ndarray, room: int, free: list[int], base: np.ndarray) -> tuple[int, np.ndarray]:
    """``RegionBound._support`` of f473b0c, with the outcome it took."""
    total, incs = _rows_ref(reg, c, lo, room, free)
    rest = c.need_for(lo > 0) - total
    if rest <= 0:
        return MET, base
    if room == 0 or not free:
        return EMPTY, np.full(len(reg.lam), math.inf)
    d = np.concatenate(incs)
    if d.sum() < rest - reg.tol:
        return EMPTY, np.full(len(reg.lam), math.inf)
    if len(free) == 1:
        cd = np.cumsum(d)
        last = min(int(np.searchsorted(cd, rest)), len(d) - 1)
        prev = cd[last - 1] if last else 0.0
        frac = min(max((rest - prev) / d[last], 0.0), 1.0) if d[last] > 0 else 1.0
        return ONE, base + reg.phi[free[0]] * (last + frac) * (1 - 1e-9) - 1e-9
    who = np.repeat(np.asarray(free, dtype=np.int64), [len(x) for x in incs])
    return MANY, base + fractional(d.astype(float, copy=False), who, reg.phi, float(rest)) * (1 - 1e-9) - 1e-9


@pytest.mark.parametrize("mode,params", [("per_run", {"models": 4, "epochs": 20}),
                                         ("per_epoch", {"models": 3, "epochs": 24}),
                                         ("per_run", {"models": 3, "epochs": 16, "levels": 1})])
def test_support_knapsack_is_the_numpy_code(mode, params):
    """Random supports, counts, rooms and multipliers of every condition of a region: the same
    outcome, total and key, to the bit (ties of increments included: the conditions' rows repeat)."""
    inst = generate("random", {**params, "noise_mode": mode}, seed=2)
    bb = exact_mod._BranchAndBound(inst, math.inf, 10**6)
    bb.build_regions()
    rng = np.random.default_rng(5)
    seen = {MET: 0, EMPTY: 0, ONE: 0, MANY: 0}
    for reg in bb.regions:
        conds = [c for s in reg.conds for group in reg.conds[s].values() for c in group]
        assert conds
        for _ in range(150):
            c = conds[int(rng.integers(len(conds)))]
            M, K = reg.M, reg.K
            lo = np.zeros(M, dtype=np.int64)
            used = rng.choice(M, size=int(rng.integers(1, M + 1)), replace=False)
            lo[used] = rng.integers(1, max(2, K // len(used)), size=len(used))
            if lo.sum() > K:
                continue
            room = int(rng.integers(0, K - lo.sum() + 1))
            free = sorted(int(m) for m in used if rng.random() < 0.7)
            base = rng.uniform(-5, 5, len(reg.lam))
            kind, want = _support_ref(reg, c, lo, room, free, base)
            got_kind, total, got = reg._knapsack(c, lo, room, np.array(free, dtype=np.int64), base)
            assert got_kind == kind
            assert total == _rows_ref(reg, c, lo, room, free)[0]
            if kind in (ONE, MANY):
                assert np.array_equal(got, want)
            seen[kind] += 1
    assert all(v > 0 for v in seen.values()), seen  # every outcome was compared


def test_lagrangian_is_matvec_less_the_budget():
    """The region keys' Lagrangian cost per multiplier: ``matvec(lo, phi) - lam * limit``, to the bit."""
    rng = np.random.default_rng(8)
    for M, L in [(1, 1), (3, 12), (5, 64), (6, 200)]:
        for _ in range(20):
            lo = rng.integers(0, 40, M).astype(np.int64)
            phi = rng.standard_normal((M, L)) * 10.0 ** rng.integers(-3, 4, (M, L))
            lam, limit = rng.uniform(0, 50, L), float(rng.uniform(1, 500))
            assert np.array_equal(lagrangian(lo, phi, lam, limit), matvec(lo, phi) - lam * limit)


def test_short_dot_is_numpys_dot():
    """The placed sums' prefix part in plain floats: numpy's ``dot`` of fewer than 8 terms, to the bit."""
    from deplbench.formulations.exact.placed import _dot
    from deplbench.numeric import dot

    rng = np.random.default_rng(12)
    for _ in range(3000):
        n = int(rng.integers(1, 8))
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
        y = tuple(float(v) for v in rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n))
        assert _dot(x.tolist(), y) == dot(x, y)


# ---- the label store's dominance ----------------------------------------------------------------

def _dominated_ref(cs: list, ns: list, c: np.ndarray, n: np.ndarray) -> bool:
    """Some label ``(c', n')`` of the lists with ``c' >= c`` and ``n' <= n``: the plain numpy statement."""
    if not cs:
        return False
    return bool(((np.array(cs) >= c).all(axis=1) & (np.array(ns) <= n).all(axis=1)).any())


def _fill_and_ask(monkeypatch, M: int, P: int, cap: int, adds: int, seed: int):
    """A store with a small recent part (many rebuilds of its tree), asked after every third label
    on both sides of it; yields (answer, the plain statement's over the labels it must keep)."""
    monkeypatch.setattr(labels, "LABEL_RECENT", 128)
    rng = np.random.default_rng(seed)
    store = LabelStore(M, P, cap=cap)
    cs, ns, built = [], [], 0
    for t in range(adds):
        c = rng.integers(0, 6, M).astype(float)
        n = rng.integers(0, 3, max(P, 1))
        store.add(c, n)
        cs.append(c)
        ns.append(n[:P] if P else n[:0])
        if store.r == 0:
            built = len(cs)  # a rebuild: the tree keeps the newest ``cap`` labels so far
        if t % 3 == 0:
            q = c + rng.integers(-1, 2, M)
            qn = n + rng.integers(-1, 2, len(n))
            keep = slice(max(built - cap, 0), None)
            yield store.dominated(q, qn), _dominated_ref(cs[keep], ns[keep], q, qn[:P] if P else qn[:0])


@pytest.mark.parametrize("M,P", [(1, 0), (4, 0), (4, 3), (5, 9)])
def test_label_store_answers_the_plain_statement(monkeypatch, M, P):
    """Labels in a small grid (many dominances), past several rebuilds of the tree: the blocks' and
    the subtrees' boxes skip no dominating label."""
    got = list(_fill_and_ask(monkeypatch, M, P, cap=1 << 17, adds=1500, seed=M + P))
    assert all(a == b for a, b in got)
    hits = sum(b for _, b in got)
    assert 0 < hits < len(got)


def test_label_store_drops_the_oldest_labels_beyond_its_cap(monkeypatch):
    """With ``cap`` 300 the tree keeps the newest 300 labels at each rebuild (plus the recent ones)."""
    got = list(_fill_and_ask(monkeypatch, 3, 2, cap=300, adds=1500, seed=5))
    assert all(a == b for a, b in got)


def test_label_store_tree_boxes_hold_their_slots():
    """Every node's box is the largest ``c`` and least ``n`` of its slots, its children split its slots."""
    rng = np.random.default_rng(3)
    c = rng.random((3, 1000))
    n = rng.integers(0, 4, (2, 1000)).astype(np.int32)
    t = labels._Tree.build(c, n, np.arange(1000))
    assert sorted(t.age.tolist()) == list(range(1000))  # a permutation of the labels
    for v, (lo, hi, left, right) in enumerate(t.nodes):
        assert np.array_equal(t.bc[v], t.c[:, lo:hi].max(axis=1))
        assert np.array_equal(t.bn[v], t.n[:, lo:hi].min(axis=1))
        if left < 0:
            assert right < 0 and hi - lo <= labels.LABEL_LEAF
        else:
            assert (t.nodes[left, 0], t.nodes[right, 1]) == (lo, hi) and t.nodes[left, 1] == t.nodes[right, 0]


# ---- the lifted laws' reads ---------------------------------------------------------------------

def _lifted_cdf_ref(r: Rounded, a: float, e: float, c: float, y: np.ndarray, survival: bool) -> np.ndarray:
    """``lifted(...).cdf`` (``.sf``) of f473b0c: ``finv`` by ``np.where``, then the grid index by
    ``searchsorted`` (what ``Rounded.index`` returned) and the table."""
    if a > e:
        y0, s1, s2 = a * c, a - e, a + e
    else:
        y0, s1, s2 = 0.05 * (a + e) * c, 0.05 * (a + e), a + e
    y = np.asarray(y, dtype=float)
    x = np.where(y < y0, c + (y - y0) / s1, c + (y - y0) / s2)
    i = np.searchsorted(r.xs, x, side="right") - 1
    i = np.where(np.isnan(x), len(r.xs) - 1, i)
    table, below = (r.S, 1.0) if survival else (r.F, 0.0)
    return np.where(i >= 0, table[np.maximum(i, 0)], below)


@pytest.mark.parametrize("a,e,c", [(1.3, 0.4, 0.9), (0.2, 0.5, 1.1), (2.0, 0.0, 1.0)])
def test_lifted_reads_are_the_table_at_the_inverse(a, e, c):
    """On the grid's images, next to them, off the grid, at the kink and at inf/NaN."""
    r = Rounded(noise_dist("invgamma", 1.02, 0.031))
    law = lifted(r, a, e, c)
    f = law.ppf  # only to find the images of grid points
    rng = np.random.default_rng(1)
    ys = np.asarray(f(np.linspace(0.001, 0.999, 500)), dtype=float)
    y = np.concatenate((ys, np.nextafter(ys, -np.inf), np.nextafter(ys, np.inf), rng.uniform(-1, 6, 5000),
                        [a * c, 0.05 * (a + e) * c, -np.inf, np.inf, np.nan]))
    assert np.array_equal(law.cdf(y), _lifted_cdf_ref(r, a, e, c, y, False))
    assert np.array_equal(law.sf(y), _lifted_cdf_ref(r, a, e, c, y, True))
    assert float(law.cdf(ys[3])) == float(_lifted_cdf_ref(r, a, e, c, ys[3:4], False)[0])  # a scalar


def test_rounded_quantiles_are_the_laws():
    """The remembered quantiles of a rounded law are its law's, for scalars (remembered) and arrays."""
    d = noise_dist("invgamma", 1.02, 0.031)
    r = Rounded(d)
    for q in (1e-10, 0.3, 1e-10, 0.3):
        assert float(r.ppf(q)) == float(d.ppf(q)) and float(r.isf(q)) == float(d.isf(q))
    qs = np.array([1e-10, 0.5, 0.9])
    assert np.array_equal(r.ppf(qs), d.ppf(qs)) and np.array_equal(r.isf(qs), d.isf(qs))
