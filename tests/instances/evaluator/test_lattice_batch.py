"""The batched term lattices are bit-identical to the per-term construction, whatever is cached.

``lattice_batch.batch_pmfs`` lays the terms of one law, step and sign end to end; the masses,
start, beta, round-off and slack of every term must equal ``lattice.term_pmf``'s to the bit
(positive and negative coefficients, terms narrower than a lattice step, several laws and steps
in one batch, constants). Every test runs twice: with the numpy construction and with the compiled
one of ``lattice_jit`` (used once that module is imported).
"""

from __future__ import annotations

import importlib
import math
import sys

import numpy as np
import pytest

from deplbench.instances.evaluator import lattice
from deplbench.instances.evaluator.lattice_batch import (
    JIT_MODULE,
    batch_pmfs,
    cached_pmf,
    cached_pmfs,
    clear,
)
from deplbench.instances.laws.distributions import _penalty_dist
from deplbench.instances.laws.noise import noise_dist


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def construction(request, monkeypatch):
    """The batch's two constructions: numpy's, and ``lattice_jit``'s once it is imported."""
    if request.param == "compiled":
        monkeypatch.setitem(sys.modules, JIT_MODULE, importlib.import_module(JIT_MODULE))
    else:
        monkeypatch.delitem(sys.modules, JIT_MODULE, raising=False)
    clear()
    yield request.param
    clear()


def _same(a: tuple, b: tuple) -> bool:
    return (a[0] == b[0] and a[1].dtype == b[1].dtype and a[1].shape == b[1].shape
            and a[1].tobytes() == b[1].tobytes() and a[2:] == b[2:])


def _laws():
    return ([noise_dist(f, 1.0, s) for f in ("invgamma", "gamma", "lognormal", "normal") for s in (0.03, 0.3)]
            + [_penalty_dist("normal", 0.0, 0.4, None, 0.1, 0.2, None), _penalty_dist("t", -0.1, 0.3, 3.0, 0.05, 0.1, None)])


# 0: every law tabulated at once; inf: every law read at its points only; the default in between
@pytest.mark.parametrize("after", [0.0, lattice.TABULATE_AFTER, math.inf])
@pytest.mark.parametrize("fraction", [lattice.GRID_FRACTION, 0.25])
@pytest.mark.parametrize("h", [0.013, 1e-3, 0.4])
def test_batch_equals_the_per_term_construction(h, fraction, after, monkeypatch):
    """Whether a law is tabulated or read at its points (``lattice.read``), the batch gives the
    per-term construction's lattices, which always read a table, to the bit."""
    monkeypatch.setattr(lattice, "TABULATE_AFTER", after)
    rng = np.random.default_rng(7)
    laws = _laws()
    keys = []
    for law in laws:
        # many coefficients of both signs per law (groups of several terms), a few tiny ones (narrow terms)
        coefs = np.concatenate((rng.uniform(0.05, 4.0, 6), -rng.uniform(0.05, 4.0, 5), [1e-9, -3e-8]))
        keys += [(law, float(c), h, fraction) for c in coefs]
    rng.shuffle(keys)
    lattice.clear_tables()
    batch = batch_pmfs(keys)
    lattice.clear_tables()
    one = [lattice.term_pmf(*k) for k in keys]
    bad = [k for k, a, b in zip(keys, batch, one, strict=True) if not _same(a, b)]
    assert not bad, f"{len(bad)} of {len(keys)} terms differ, e.g. {bad[0]}"
    assert any(len(r[1]) > 50 for r in batch) and any(len(r[1]) == 1 for r in batch)


def test_memo_returns_the_same_lattices_in_any_order():
    laws = _laws()[:3]
    pairs = [(law, c) for law in laws for c in (0.7, -1.3, 2.2, 0.7)]  # a repeated term too
    h = 0.01
    lattice.clear_tables()
    clear()
    first = cached_pmfs(pairs, h)
    lattice.clear_tables()
    clear()
    single = [cached_pmf(d, c, h) for d, c in reversed(pairs)][::-1]
    assert all(_same(a, b) for a, b in zip(first, single, strict=True))
    assert all(_same(a, lattice.term_pmf(d, c, h)) for a, (d, c) in zip(first, pairs, strict=True))
    assert all(not r[1].flags.writeable for r in first)


def test_lump_trim_many_equals_lump_trim():
    """Tails shorter and longer than the 256-entry prefix, single entries, a pmf of one tail only."""
    from deplbench.instances.evaluator.lattice_batch import lump_trim_many

    rng = np.random.default_rng(3)
    pmfs = [np.array([1.0]), np.array([0.0, 1e-12, 1.0]), np.full(5, 1e-20)]
    for n in (2, 40, 300, 2000):
        body = rng.dirichlet(np.ones(n))
        pmfs.append(body)
        pmfs.append(np.concatenate((np.full(400, 1e-13), body, np.full(700, 1e-19))))  # both tails past 256
    starts = list(range(-5, len(pmfs) - 5))
    for (a0, a, am, ae), (b0, b, bm, be) in zip(lump_trim_many(starts, pmfs),
                                                [lattice.lump_trim(s, p) for s, p in zip(starts, pmfs, strict=True)],
                                                strict=True):
        assert (a0, am, ae) == (b0, bm, be) and a.tobytes() == b.tobytes()


def test_table_cache_keeps_its_point_count_and_limits(monkeypatch):
    """The cache's running count of tabulated points equals their sum after insertions, refinements
    (a finer table replaces a law's) and evictions, and both limits hold."""
    monkeypatch.setattr(lattice, "MAX_TABLES", 5)
    monkeypatch.setattr(lattice, "MAX_TOTAL", 6000)
    lattice.clear_tables()
    laws = [noise_dist(f, m, 0.1) for f in ("invgamma", "gamma", "lognormal") for m in (0.5, 1.0, 2.0)]
    for step in (2.0 ** -6, 2.0 ** -9, 2.0 ** -7):
        for law in laws:
            lattice.table(law, step)
            kept = sum(len(ts[0.0].val) for ts in lattice._TABLES.values())
            assert lattice._KEPT[0] == kept
            assert len(lattice._TABLES) <= 5 and (kept <= 6000 or len(lattice._TABLES) == 1)
    lattice.clear_tables()
    assert lattice._KEPT[0] == 0 and not lattice._TABLES


@pytest.mark.parametrize("h", [0.013, 1e-3])
def test_an_untabulated_law_gives_the_tabulated_lattices(h):
    """A law read at the needed points (``tabulate`` false: the covers' lifted laws) gives the
    very lattices of its tabulated twin, for coefficients of both signs and several steps."""
    from dataclasses import replace

    from deplbench.formulations.exact.lifted import Rounded, lifted

    r = Rounded(noise_dist("invgamma", 0.95, 0.03))
    for a, e, c in ((0.5, 0.1, 0.9), (0.05, 0.2, 1.1)):
        read = lifted(r, a, e, c)
        assert not read.tabulate
        tab = replace(read, tabulate=True)
        keys = [(read, coef, h, lattice.GRID_FRACTION) for coef in (0.37, 1.0, 2.9, -0.8, -3.1)]
        lattice.clear_tables()
        clear()
        got = batch_pmfs(keys)
        assert not lattice._TABLES  # nothing tabulated
        want = batch_pmfs([(tab, *k[1:]) for k in keys])
        assert all(_same(x, y) for x, y in zip(got, want, strict=True))
        assert all(_same(x, lattice.term_pmf(tab, *k[1:])) for x, k in zip(got, keys, strict=True))


def test_a_law_is_tabulated_once_its_direct_reads_reach_the_share():
    """Reads without a table are counted per law; the table comes when they reach
    ``TABULATE_AFTER`` of its size, and every read, before and after, gives the table's values."""
    law = noise_dist("invgamma", 1.0, 0.1)
    d = 2.0 ** -9
    lattice.clear_tables()
    i0, i1, split = lattice._grid(law, d)
    size = i1 - i0 + 1
    rng = np.random.default_rng(5)
    chunk = max(size // 16, 1)
    reads = 0
    while not lattice._TABLES:
        idx = np.sort(rng.integers(i0, i1 + 1, chunk))
        got, s = lattice.read(law, d, idx)
        reads += chunk
        assert s == split
        assert (reads >= lattice.TABULATE_AFTER * size) == bool(lattice._TABLES)
        t = lattice.Table(d, i0, split, np.concatenate((law.cdf(np.arange(i0, split) * d),
                                                        law.sf(np.arange(split, i1 + 1) * d))))
        assert got.tobytes() == t.val[idx - i0].tobytes()
    assert law not in lattice._DIRECT  # counted no more
    coarse = np.arange(i0 // 4 + 1, i1 // 4, 8)  # an eighth of a coarse table: read directly when cold
    got, s = lattice.read(law, 4 * d, coarse)  # a coarser step: the table, coarsened
    lattice.clear_tables()
    assert not lattice._DIRECT
    want, s2 = lattice.read(law, 4 * d, coarse)  # read directly again
    assert not lattice._TABLES and s == s2 and got.tobytes() == want.tobytes()


def test_first_at_least_is_searchsorted():
    rng = np.random.default_rng(5)
    for _ in range(2000):
        d = 2.0 ** int(rng.integers(-20, 3))
        i0 = int(rng.integers(-50, 50))
        i1 = i0 + int(rng.integers(0, 60))
        z = np.arange(i0, i1 + 1) * d
        for x in (float(rng.uniform(z[0] - 3 * d, z[-1] + 3 * d)), float(z[rng.integers(len(z))])):
            assert lattice._first_at_least(x, d, i0, i1) == int(np.searchsorted(z, x)) + i0


def test_the_compiled_construction_is_used_once_imported(construction, monkeypatch):
    """The switch is real: the compiled path runs its own code (a broken kernel shows)."""
    jit = importlib.import_module(JIT_MODULE)
    if construction == "numpy":
        monkeypatch.delitem(sys.modules, JIT_MODULE)
    law = noise_dist("gamma", 1.0, 0.3)
    calls = []
    real = jit.group_pieces
    jit.group_pieces = lambda *a: calls.append(1) or real(*a)
    try:
        batch_pmfs([(law, 1.7, 0.01, lattice.GRID_FRACTION), (law, -0.6, 0.01, lattice.GRID_FRACTION)])
    finally:
        jit.group_pieces = real
    assert bool(calls) == (construction == "compiled")


def test_the_compiled_tail_sum_is_numpys_pairwise_sum():
    """``ndarray.sum`` adds by numpy's pairwise algorithm; the compiled trim's sum of a dropped
    tail must give its bits for every length (below 8, one block, several halvings) and offset."""
    jit = importlib.import_module(JIT_MODULE)
    rng = np.random.default_rng(11)
    for n in [*range(0, 300), 1000, 4099, 9000]:
        x = rng.random(n + 4) * 10.0 ** rng.integers(-19, 0, n + 4)
        off = int(rng.integers(0, 4))
        assert jit.pairwise_sum(x, off, n) == float(x[off:off + n].sum()), n


def test_tails_past_the_prefix_give_the_per_term_lattices(monkeypatch):
    """Lattices of about 200,000 points, whose tails below ``LUMP`` are longer than the 256-entry
    prefix, go back to ``lump_trim`` (in both paths) and give the per-term lattices."""
    law = noise_dist("lognormal", 1.0, 0.3)
    keys = [(law, c, 1e-4, lattice.GRID_FRACTION) for c in (1.0, -1.0, 0.5)]
    lattice.clear_tables()
    real, back = lattice.lump_trim, []
    monkeypatch.setattr(lattice, "lump_trim", lambda *a: back.append(1) or real(*a))
    got = batch_pmfs(keys)
    assert len(back) == 2  # the two long ones
    monkeypatch.setattr(lattice, "lump_trim", real)
    lattice.clear_tables()
    assert all(_same(a, lattice.term_pmf(*k)) for a, k in zip(got, keys, strict=True))


def test_the_memo_keeps_reused_laws_only_within_its_bytes(monkeypatch):
    """A law built for a few brackets (``tabulate`` false) is not kept; the others are, until their
    masses pass ``MAX_PMF_BYTES`` (the least recently used dropped); what comes back is
    ``term_pmf``'s, kept or not."""
    import dataclasses

    from deplbench.instances.evaluator import lattice_batch

    d = noise_dist("invgamma", 1.0, 0.03)
    once = dataclasses.replace(d, tabulate=False)
    h = 0.01
    for law in (once, d):
        got = cached_pmfs([(law, -3.0)], h)[0]
        want = lattice.term_pmf(law, -3.0, h)
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert [k[0].tabulate for k in lattice_batch._PMFS] == [True]
    one = lattice_batch._BYTES[0]
    assert one == cached_pmf(d, -3.0, h)[1].nbytes > 0
    monkeypatch.setattr(lattice_batch, "MAX_PMF_BYTES", 3 * one)
    for c in (-3.001, -3.002, -3.003, -3.004, -3.005):
        cached_pmfs([(d, c)], h)
    kept = list(lattice_batch._PMFS.values())
    assert lattice_batch._BYTES[0] == sum(r[1].nbytes for r in kept) <= 3.2 * one
    assert (d, -3.005, h, lattice.GRID_FRACTION) in lattice_batch._PMFS  # the newest stays
    assert (d, -3.0, h, lattice.GRID_FRACTION) not in lattice_batch._PMFS  # the oldest went
