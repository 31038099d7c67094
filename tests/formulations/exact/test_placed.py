"""The remembered placed sums and product bound of ``exact`` against the direct computation, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.knobs import PRODUCT_SKEW
from deplbench.formulations.exact.prefix import Prefix
from deplbench.formulations.exact.product import ProductBounds
from deplbench.numeric import dot
from deplbench.registry import generate


def _direct_sum(b: Bounder, p: Prefix, x: np.ndarray, with_prefix: bool = True) -> float:
    """``Bounder._placed_sum`` as written before it was remembered (772f762)."""
    total = dot(x, p.s) if with_prefix else 0.0
    pos = p.k
    order = np.argsort(-(x * b.shape), kind="stable")
    where = b.walks.where(p.r) if p.last >= 0 else None
    if where is not None:
        order = sorted((m for m in order if p.r[m]), key=where.__getitem__)
    for m in order:
        if p.r[m] > 0:
            total += x[m] * (b.cum[m, pos + p.r[m]] - b.cum[m, pos])
            pos += p.r[m]
    return total


def _direct_product(b: Bounder, g: float, p: Prefix) -> float:
    """``ProductBounds.placed_bound`` as written before its levels were remembered (772f762)."""
    pens = b._penalty_laws(p)
    used = [m for m in range(b.M) if p.s[m] > 0 or p.r[m] > 0]
    tail = (1 - b.omega) * (1 + 1e-9)
    fixed = b.l0 + b.low * sum(p.r) + sum(d.value for d in pens if d.is_constant)
    rand = [d for d in pens if not d.is_constant]
    best = -math.inf
    for dom in used:
        others = len(used) - 1 + len(rand)
        for rho in PRODUCT_SKEW if others else (1.0,):
            lead = tail / rho
            if lead >= 1.0:
                continue
            lv = rho ** (1.0 / others) if others else 1.0
            x = np.array([b.quantile_at(b.noise[m], lead if m == dom else lv, True) if m in used else 0.0
                          for m in range(b.M)])
            v = fixed + sum(b.quantile_at(d, lv, False) for d in rand) - g * _direct_sum(b, p, x)
            best = max(best, v)
    return best


def _prefixes(b: Bounder, rng: np.random.Generator, count: int):
    """Random prefixes of random count vectors, each along allowed switches (walks of the switch graph)."""
    for _ in range(count):
        n = rng.integers(0, 9, size=b.M)
        n[rng.integers(b.M)] += 1
        r, s, sw, seq = list(map(int, n)), [0.0] * b.M, [], []
        for k in range(int(rng.integers(0, sum(r) + 1))):
            last = seq[-1] if seq else -1
            can = [m for m in range(b.M) if r[m] and (last < 0 or m == last or (last, m) in b.sw_index)]
            if not can:
                break
            m = int(rng.choice(can))
            if last >= 0 and m != last:
                sw.append(b.sw_index[(last, m)])
            r[m] -= 1
            s[m] += b.a[m, k]
            seq.append(m)
        yield Prefix(len(seq), seq[-1] if seq else -1, tuple(r), tuple(s), tuple(sw), tuple(seq))


@pytest.mark.parametrize("seed", [0, 3, 9])
def test_placed_sums_and_product_bound_keep_their_bits(seed):
    inst = generate("random", {"noise_mode": "per_run", "models": 5, "epochs": 40}, seed)
    b = Bounder(inst, {"cantelli": 0, "brackets": 0, "product": 0, "pruned_dominance": 0})
    assert b.shape is not None
    rng = np.random.default_rng(seed)
    xs = [b.nmean * (1 + 1e-12), rng.uniform(0.0, 2.0, b.M), rng.choice([0.0, 1.0], b.M)]  # ties in the last
    checked = 0
    for p in _prefixes(b, rng, 300):
        if not any(p.r):
            continue
        for x in xs:
            for with_prefix in (True, False):
                assert b._placed_sum(p, x, with_prefix) == _direct_sum(b, p, x, with_prefix)
        got, want = b.product.placed_bound(0.9, p), _direct_product(b, 0.9, p)
        assert got == want, (p, got, want)
        checked += 1
    assert checked > 200



def test_the_placed_product_bound_below_the_root_is_asked_only_while_it_pays(monkeypatch):
    """Lemma 9's bound is asked for every count vector (empty prefix), and for deeper prefixes
    during a trial, then only while it refutes one in ``PRODUCT_RATE`` (docs/exact.md). On this
    instance it refutes none of its 99 deeper prefixes, so a trial of 10 asks exactly 10."""
    from deplbench.formulations.exact import product
    from deplbench.registry import solve

    asked: list[int] = []
    real = ProductBounds.placed_bound

    def spy(self, g, p):
        asked.append(p.last)
        return real(self, g, p)

    monkeypatch.setattr(ProductBounds, "placed_bound", spy)
    inst = generate("random", {"noise_mode": "per_run"}, 1)
    monkeypatch.setattr(product, "PRODUCT_TRIAL", 10)
    res = solve("exact", inst, {"time_limit": 120})
    assert res.status.value == "optimal"
    deep = [last for last in asked if last >= 0]
    assert len(deep) == 10 and len(asked) > len(deep)
    asked.clear()
    monkeypatch.setattr(product, "PRODUCT_TRIAL", 10**9)  # always asked: the other prefixes too
    solve("exact", inst, {"time_limit": 120})
    assert sum(last >= 0 for last in asked) > 10
