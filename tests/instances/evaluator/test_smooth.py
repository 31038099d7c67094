"""The histogram (Kolmogorov) bracket of instances/evaluator/smooth.py: its per-term bound, its pieces, its brackets.

Checks each ingredient of the proof in docs/evaluator.md against a dense evaluation: the
laws' densities and peaks, the per-term L1 bound of a histogram against the true CDF, the
density bound of a sum (Rogozin + Ball), the exact Irwin-Hall values; then the brackets of
many-term sums against the lattice construction and a 400,000-sample Monte-Carlo quantile,
and the decision against the full bracket on 60-epoch plans.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import fft, stats

from deplbench.instances.evaluator import lattice, smooth
from deplbench.instances.evaluator.evaluate import certify
from deplbench.instances.evaluator.loss import LossTerms, loss_terms
from deplbench.instances.evaluator.quantile import _bracket, _convolve
from deplbench.instances.families.paper import load_paper
from deplbench.instances.families.random import random_instance
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import noise_dist
from deplbench.instances.schema import Penalty
from deplbench.instances.semantics import data_effect

LAWS = {
    "invgamma": noise_dist("invgamma", 1.0, 0.03),
    "gamma": noise_dist("gamma", 1.0, 0.03),
    "gamma-2": noise_dist("gamma", 1.0, 0.5),
    "exponential": noise_dist("gamma", 1.0, 1.0),
    "lognormal": noise_dist("lognormal", 1.0, 0.05),
    "normal": noise_dist("normal", 1.0, 0.02),
    "truncated-t": penalty_dist(Penalty(family="t", df=5, loc=0.5, scale=0.15, low=0.0, high=2.0)),
    "truncated-normal": penalty_dist(Penalty(family="normal", loc=-0.2, scale=0.3, low=-0.5, high=0.4)),
}


@pytest.mark.parametrize("name", sorted(LAWS))
def test_density_and_peak(name):
    """pdf is the derivative of the cdf, and peak = pdf(mode) bounds it everywhere (unimodal)."""
    d = LAWS[name]
    lo, hi = lattice.core(d)
    z = np.linspace(lo, hi, 400_001)
    mid = 0.5 * (z[1:] + z[:-1])
    slope = np.diff(d.cdf(z)) / np.diff(z)
    f = d.pdf(mid)
    inside = (mid > d.lower + 1e-3) & (mid < d.upper - 1e-3)  # away from jumps at the support's ends
    assert np.max(np.abs(slope - f)[inside]) <= 1e-5 * d.peak
    assert np.all(f <= d.peak * (1 + 1e-9))
    assert np.max(f) >= d.peak * (1 - 1e-3)
    up = np.flatnonzero(np.diff(f) < 0)  # unimodal: increases, then decreases
    assert len(up) == 0 or np.all(np.diff(f)[up[0]:] <= 1e-12 * d.peak)


@pytest.mark.parametrize("name", sorted(LAWS))
@pytest.mark.parametrize("coef", [-1.7, -0.3, 0.45, 2.0])
def test_histogram_l1_bound_against_the_true_cdf(name, coef):
    """int (F_A - F)^+ and int (F - F_A(. + rho) - b)^+ are within the bounds of term_l1 (dense check).

    F_A is the linear interpolation of the term's lattice CDF (its histogram), F the true CDF of
    T = coef Z, rho the table shift, b the term's tail budget.
    """
    d = LAWS[name]
    sd = abs(coef) * math.sqrt(d.var)
    for h in (sd / 7, sd / 40):
        j0, pmf, b, _, _ = lattice.term_pmf(d, coef, h, smooth.FRACTION)
        rho = smooth.term_shift(d, coef, h)  # its lattice slack minus h
        xj = (j0 - 1 + np.arange(len(pmf) + 1)) * h  # G = 0 at the point before the first mass
        G = np.concatenate(([0.0], np.cumsum(pmf)))
        lo, hi = xj[0] - 3 * h, xj[-1] + 3 * h
        x = np.linspace(lo, hi, 300_001)
        dx = x[1] - x[0]
        F = d.cdf(x / coef) if coef > 0 else d.sf(x / coef)
        FA = np.interp(x, xj, G, left=0.0, right=G[-1])
        FAs = np.interp(x + rho, xj, G, left=0.0, right=G[-1])
        lo_bound, up_bound = smooth.term_l1(d, coef, h, rho)
        assert lo_bound <= h * h * 7 / 24 * smooth.density_cap(d, coef) * (1 + 1e-6)
        assert np.sum(np.maximum(FA - F, 0.0)) * dx <= lo_bound * 1.001 + 1e-12
        assert np.sum(np.maximum(F - FAs - b, 0.0)) * dx <= up_bound * 1.001 + 1e-12
        # the pointwise inequalities the proof starts from
        P = d.cdf(xj / coef) if coef > 0 else d.sf(xj / coef)
        Ps = d.cdf((xj - rho) / coef) if coef > 0 else d.sf((xj - rho) / coef)
        assert np.all(G <= P + 1e-13)
        assert np.all(Ps <= G + b + 1e-13)


def test_rest_density_bounds_the_density_of_sums():
    """Rogozin + Ball: the density of a sum is at most sqrt(2 / sum M_j^-2); tight for two equal uniforms."""
    caps = [2.0, 2.0]
    assert smooth.rest_density(caps + [math.inf]) [2] == pytest.approx(2.0)  # two U(0, 1/2): triangle of peak 2
    sds = [0.3, 0.5, 0.2, 0.4]
    caps = [1 / (s * math.sqrt(2 * math.pi)) for s in sds]
    rest = smooth.rest_density(caps)
    for i in range(len(sds)):
        s = math.sqrt(sum(x * x for j, x in enumerate(sds) if j != i))
        assert 1 / (s * math.sqrt(2 * math.pi)) <= rest[i]  # the true peak of the normal sum


@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_irwin_hall_exact(k):
    K = smooth.irwin_hall(k)
    r = K.shape[1]
    u = np.array([[m - t / r for t in range(r)] for m in range(1, k + 1)])
    if k == 1:
        np.testing.assert_allclose(K, 1.0 - u, atol=1e-15)
    x = np.random.default_rng(k).random((400_000, k)).sum(axis=1)
    emp = np.array([[np.mean(x >= v) for v in row] for row in u])
    np.testing.assert_allclose(K, emp, atol=5 * math.sqrt(0.25 / 400_000))
    order = np.argsort(u.ravel())
    assert np.all(np.diff(K.ravel()[order]) <= 0)  # P(S >= u) decreases in u


@pytest.mark.parametrize("k", [1, 3, 9, 20])
def test_irwin_hall_is_the_textbook_sum_rounded_once(k):
    """Every entry is the exact rational sum of the Irwin-Hall CDF formula, rounded once."""
    r = smooth.RES
    K = smooth.irwin_hall.__wrapped__(k)
    for m in range(1, k + 1):
        for t in range(r):
            x = Fraction(k - m) + Fraction(t, r)  # P(S >= m - t/r) = P(S <= k - m + t/r)
            exact = sum((-1) ** j * math.comb(k, j) * (x - j) ** k for j in range(math.floor(x) + 1))
            assert K[m - 1, t] == float(exact / math.factorial(k)), (m, t)


def _mixed_terms(seed: int, n: int) -> LossTerms:
    """n terms of mixed laws and coefficients (some without a bounded density: the lattice form)."""
    rng = np.random.default_rng(seed)
    names = sorted(LAWS) + ["gamma-half"]
    dists, coefs = [], []
    for _ in range(n):
        nm = names[int(rng.integers(len(names)))]
        d = noise_dist("gamma", 1.0, 2.0) if nm == "gamma-half" else LAWS[nm]
        dists.append(d)
        coefs.append(float(rng.choice([-1, 1]) * rng.uniform(0.1, 1.0)))
    return LossTerms(10.0, tuple(dists), tuple(coefs))


def _mc_contains(terms: LossTerms, omega: float, lo: float, hi: float, n: int = 400_000) -> None:
    x = terms.sample(np.random.default_rng(11), n)
    se = math.sqrt(omega * (1 - omega) / n)
    assert np.mean(x <= hi) >= omega - 5 * se
    assert np.mean(x < lo) <= omega + 5 * se


def _lattice_bracket(terms, omega, width, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(smooth, "MIN_TERMS", 10**9)
        return _bracket(terms, omega, width)


@pytest.mark.parametrize("seed", range(3))
def test_mixed_laws_bracket(seed, monkeypatch):
    terms = _mixed_terms(seed, 24)
    omega = 0.95
    w = 2e-3 * 10.0
    br = _bracket(terms, omega, w)
    assert br.kolmogorov > 0  # the histogram bracket
    assert br.width <= w
    old = _lattice_bracket(terms, omega, w, monkeypatch)
    assert old.kolmogorov == 0
    assert max(old.lo, br.lo) <= min(old.hi, br.hi)
    _mc_contains(terms, omega, br.lo, br.hi)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_random_per_epoch_plans(seed, monkeypatch):
    """Random per_epoch plans: the histogram bracket is as narrow as asked, overlaps the lattice one
    and contains the Monte-Carlo quantile."""
    inst = random_instance(seed=seed, epochs=40, noise_mode="per_epoch")
    g = data_effect(inst, inst.dataset_ids).g
    rng = np.random.default_rng(seed)
    ids = inst.model_ids
    seq = [ids[int(rng.integers(len(ids)))]]
    while len(seq) < 40:
        nxt = [m for m in ids if m == seq[-1] or inst.allowed(seq[-1], m)]
        seq.append(seq[-1] if rng.random() < 0.85 else nxt[int(rng.integers(len(nxt)))])
    terms = loss_terms(inst, seq, g)
    omega = inst.loss.quantile
    for rtol in (1e-2, 1e-3):
        w = rtol * inst.loss.initial
        br = _bracket(terms, omega, w)
        assert br.kolmogorov > 0 or rtol > 1e-3  # coarse: the lattice bracket may be as cheap
        assert br.width <= w
        old = _lattice_bracket(terms, omega, w, monkeypatch)
        assert max(old.lo, br.lo) <= min(old.hi, br.hi)
    _mc_contains(terms, omega, br.lo, br.hi)


def test_sixty_epoch_decisions_agree_with_the_full_bracket():
    inst = load_paper("paper-alexnet-per_epoch-t9")
    g = data_effect(inst, ("cifar10",)).g
    rng = np.random.default_rng(5)
    ids = inst.model_ids
    l0 = inst.loss.initial
    rtol = 1e-3
    for _ in range(4):
        seq = [ids[int(rng.integers(len(ids)))]]
        while len(seq) < 60:
            nxt = [m for m in ids if m == seq[-1] or inst.allowed(seq[-1], m)]
            seq.append(seq[-1] if rng.random() < 0.9 else nxt[int(rng.integers(len(nxt)))])
        terms = loss_terms(inst, seq, g)
        full = certify(inst, None, rtol, terms=terms)
        assert full.kolmogorov > 0
        w = full.width
        for t in (full.lo - 0.5 * w, full.lo - 1e-9 * l0, full.hi, full.hi + 0.3 * w, full.hi + 9 * w):
            fast = certify(inst, None, rtol, decide=t, terms=terms)
            assert not fast.lo <= t < fast.hi  # decided
            assert (fast.hi <= t) == (full.hi <= t)
            assert max(fast.lo, full.lo) <= min(fast.hi, full.hi)


def test_normal_sum_is_exactly_bracketed():
    """A sum of normals has a closed-form quantile: the bracket contains it."""
    sds = np.linspace(0.05, 0.4, 30)
    terms = LossTerms(0.0, tuple(noise_dist("normal", 0.0 + 1.0, float(s * s)) for s in sds),
                      tuple(1.0 for _ in sds))
    q = stats.norm.ppf(0.99, loc=30.0, scale=math.sqrt(np.sum(sds ** 2)))
    br = _bracket(terms, 0.99, 1e-3)
    assert br.kolmogorov > 0
    assert br.lo <= q <= br.hi
    assert br.width <= 1e-3


def test_batched_convolutions_equal_each_pairs_own_transform():
    """``smooth._batch`` (all factors in one forward FFT call) gives each pair, bit for bit, the
    convolution of its own transforms at the batch's length, within ``fft_error`` of the direct one."""
    rng = np.random.default_rng(3)
    pairs = []
    for la, lb in ((7, 300), (120, 118), (1, 40), (257, 260), (33, 2)):
        a, b = rng.random(la), rng.random(lb)
        pairs.append((int(rng.integers(-50, 50)), a / a.sum(), int(rng.integers(-50, 50)), b / b.sum()))
    out = smooth._batch(pairs)
    N = fft.next_fast_len(max(len(a) + len(b) - 1 for _, a, _, b in pairs), real=True)
    for (sa, a, sb, b), (start, c, e) in zip(pairs, out, strict=True):
        n = len(a) + len(b) - 1
        own = np.maximum(fft.irfft(fft.rfft(a, N) * fft.rfft(b, N), N)[:n], 0.0)
        assert start == sa + sb and len(c) == n
        assert np.array_equal(c, own)
        assert e == smooth.fft_error(N)
        assert np.abs(c - np.convolve(a, b)).sum() <= e


@pytest.mark.parametrize("la,lb", [(9, 9), (20, 600), (513, 1024), (4000, 3001)])
def test_lattice_convolution_is_scipys_transform_to_the_bit(la, lb):
    """``quantile._convolve`` transforms with ``numpy.fft`` (cheaper to call) and gives scipy.fft's
    bits: switching the two left every bracket unchanged; within its bound of the direct sum."""
    rng = np.random.default_rng(la + lb)
    a, b = rng.random(la), rng.random(lb)
    a, b = a / a.sum(), b / b.sum()
    n = la + lb - 1
    N = fft.next_fast_len(n, real=True)
    out, e = _convolve(a, b)
    assert np.array_equal(out, np.maximum(fft.irfft(fft.rfft(a, N) * fft.rfft(b, N), N)[:n], 0.0))
    assert np.abs(out - np.convolve(a, b)).sum() <= e
