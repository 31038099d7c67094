"""The fast certifier: tabulated term lattices, lumped tails, and the decision ladder.

Checks the per-term inequalities of docs/evaluator.md point by point, that a bracket does
not depend on what is cached, and that the decision ``certify(..., decide=t)`` (coarse
brackets first) agrees with the full bracket and with the evaluator's verdict on many
random plans, targets on both sides and inside the bracket.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.instances.evaluator import lattice, lattice_batch
from deplbench.instances.evaluator.evaluate import certify, quantile_verdict
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.plain_quantile import plain_bracket
from deplbench.instances.evaluator.quantile import _bracket
from deplbench.instances.families.paper import load_paper
from deplbench.instances.families.random import random_instance
from deplbench.instances.laws.noise import noise_dist
from deplbench.instances.semantics import data_effect


def _lattice_cdf(dist, coef, h):
    j0, pmf, beta, _, s = lattice.term_pmf(dist, coef, h)
    x = (j0 + np.arange(len(pmf))) * h
    return x, np.cumsum(pmf), beta, s


@pytest.mark.parametrize("family", ["invgamma", "gamma", "lognormal", "normal"])
@pytest.mark.parametrize("coef", [-2.0, -0.37, 0.8, 3.1])
def test_term_lattice_bounds_the_term_cdf(family, coef):
    """G(x) <= P(T <= x) and P(T <= x - s) <= G(x) + beta at every lattice point (T = coef Z)."""
    d = noise_dist(family, 1.0, 0.03)
    h = 0.013
    x, G, beta, s = _lattice_cdf(d, coef, h)
    P = d.cdf(x / coef) if coef > 0 else d.sf(x / coef)  # P(T <= x)
    Ps = d.cdf((x - s) / coef) if coef > 0 else d.sf((x - s) / coef)
    assert np.all(G <= P + 1e-13)
    assert np.all(Ps <= G + beta + 1e-13)
    assert G[-1] == pytest.approx(1.0, abs=1e-9)
    assert h < s <= h * (1 + lattice.GRID_FRACTION) * (1 + 1e-5)


def test_bracket_does_not_depend_on_the_cache():
    inst = load_paper("paper-alexnet-per_epoch-t9")
    g = data_effect(inst, ("cifar10",)).g
    terms = loss_terms(inst, ["fast-unsteady"] * 10 + ["intermediate"] * 10, g)
    lattice.clear_tables()
    lattice_batch.clear()
    fine_first = [_bracket(terms, 0.99, w) for w in (1e-3, 2e-2, 5e-3)]
    lattice.clear_tables()
    lattice_batch.clear()
    coarse_first = [_bracket(terms, 0.99, w) for w in (2e-2, 5e-3, 1e-3)]
    assert fine_first == [coarse_first[2], coarse_first[0], coarse_first[1]]


@pytest.mark.parametrize("seed", range(4))
def test_bracket_overlaps_the_plain_construction(seed):
    inst = random_instance(seed=seed, epochs=8, noise_mode="per_epoch")
    rng = np.random.default_rng(seed)
    ids = inst.model_ids
    g = data_effect(inst, inst.dataset_ids).g
    for _ in range(3):
        models = [ids[int(rng.integers(len(ids)))]] * 3 + [ids[int(rng.integers(len(ids)))]] * 5
        if any(not inst.allowed(a, b) for a, b in zip(models, models[1:], strict=False)):
            continue
        terms = loss_terms(inst, models, g)
        w = 2e-3 * inst.loss.initial
        br = _bracket(terms, inst.loss.quantile, w)
        lo, hi = plain_bracket(terms, inst.loss.quantile, w)
        assert max(lo, br.lo) <= min(hi, br.hi)  # both contain the true quantile
        assert br.width <= w * 1.01


def _random_plans(inst, rng, n: int, epochs: int):
    """Random per-epoch model sequences of ``epochs`` epochs following allowed switches."""
    ids = inst.model_ids
    out = []
    while len(out) < n:
        seq = [ids[int(rng.integers(len(ids)))]]
        while len(seq) < epochs:
            nxt = [m for m in ids if m == seq[-1] or inst.allowed(seq[-1], m)]
            stay = rng.random() < 0.8
            seq.append(seq[-1] if stay else nxt[int(rng.integers(len(nxt)))])
        out.append(seq)
    return out


@pytest.mark.parametrize("source", ["paper", "random"])
def test_fast_decision_agrees_with_the_full_bracket(source):
    if source == "paper":
        inst = load_paper("paper-alexnet-per_epoch-t9")
        ds = ("cifar10",)
    else:
        inst = random_instance(seed=3, epochs=20, noise_mode="per_epoch")
        ds = inst.dataset_ids
    g = data_effect(inst, ds).g
    rng = np.random.default_rng(7)
    rtol = 2e-3
    l0 = inst.loss.initial
    checked = {"feasible": 0, "infeasible": 0, "inside": 0}
    for models in _random_plans(inst, rng, 12, 20):
        terms = loss_terms(inst, models, g)
        full = certify(inst, None, rtol, terms=terms)  # the bracket at rtol, no decision
        w = full.width
        targets = [full.lo - 3 * l0 * rtol, full.lo - 0.3 * w, full.lo + 0.5 * w, full.hi - 1e-9 * l0,
                   full.hi + 0.2 * w, full.hi + 5 * l0 * rtol, full.hi + 0.2 * l0]
        for t in targets:
            fast = certify(inst, None, rtol, decide=t, terms=terms)
            yes = fast.hi <= t
            ok, br = quantile_verdict(inst, terms, rtol, target=t)
            assert ok == yes  # the evaluator's verdict is the decision
            assert max(fast.lo, full.lo) <= min(fast.hi, full.hi)  # both contain the quantile
            if full.hi <= t:
                assert yes
                checked["feasible"] += 1
            elif full.lo > t:
                assert not yes
                assert fast.lo > t
                checked["infeasible"] += 1
            else:
                checked["inside"] += 1
    assert min(checked.values()) > 0


@pytest.mark.slow
@pytest.mark.parametrize("family", ["invgamma", "gamma", "lognormal", "normal"])
@pytest.mark.parametrize("mean,var", [(1.0, 1e-12), (1.0, 1e12), (1e-12, 1e-12), (1e12, 1e12), (1.0, 2.0)])
def test_laws_at_the_caps_give_finite_brackets(family, mean, var):
    """Laws far below or above the lattice's resolution (variances at the caps, gamma of shape < 1)
    are bracketed by the construction itself: finite, and containing the Monte-Carlo quantile."""
    from deplbench.instances.evaluator.loss import LossTerms

    d = noise_dist(family, mean, var)
    n = 20_000
    se = 5 * np.sqrt(0.09 / n)
    # every size, sign and width for one and three terms; twelve terms (3-7 s a bracket at the caps)
    # once, with a negative coefficient at the finer width
    cases = [(k, c, w) for k in (1, 3) for c in (-2.0, 0.5) for w in (1e-2, 1e-3)] + [(12, -2.0, 1e-3)]
    for k, c, w in cases:
        terms = LossTerms(10.0, (d,) * k, tuple(c * (1 + 0.1 * i) for i in range(k)))
        x = terms.sample(np.random.default_rng(k), n)
        br = _bracket(terms, 0.9, w)
        assert np.isfinite(br.lo) and np.isfinite(br.hi)
        assert br.n_points > 0  # its own construction (no fall back)
        assert np.mean(x <= br.hi) >= 0.9 - se
        assert np.mean(x < br.lo) <= 0.9 + se


def test_normal_guess_is_the_quantile_of_a_normal_sum():
    from scipy import stats

    from deplbench.instances.evaluator.evaluate import normal_guess
    from deplbench.instances.evaluator.loss import LossTerms

    laws = (noise_dist("normal", 1.0, 0.04), noise_dist("normal", 2.0, 0.25))
    terms = LossTerms(5.0, laws, (-1.5, 0.7))
    sd = ((1.5 ** 2) * 0.04 + (0.7 ** 2) * 0.25) ** 0.5
    assert normal_guess(terms, 0.9) == pytest.approx(stats.norm.ppf(0.9, terms.mean, sd), rel=1e-12)
    assert np.isnan(normal_guess(terms, 1.0))


def test_ladder_skips_the_steps_the_guess_says_would_straddle(monkeypatch):
    """Near the target ``certify`` computes only the ``rtol`` bracket (the normal guess lies within
    the ladder's widths); far from it the ``64 rtol`` step decides alone; with the guess off
    every step is tried, and each decision is the same."""
    from deplbench.instances.evaluator import evaluate as ev

    inst = load_paper("paper-alexnet-per_epoch-t9")
    models = ["fast-unsteady"] * 20 + ["intermediate"] * 20 + ["slow-steady"] * 20
    terms = loss_terms(inst, models, data_effect(inst, ("cifar10",)).g)
    rtol, l0 = 1e-3, inst.loss.initial
    full = certify(inst, None, rtol, terms=terms)
    mid, w = 0.5 * (full.lo + full.hi), full.width
    widths: list[float] = []
    bracket = ev.quantile_bracket
    monkeypatch.setattr(ev, "quantile_bracket", lambda t, o, width: widths.append(width) or bracket(t, o, width))

    def steps(target: float) -> tuple[list[float], bool]:
        """The widths computed (in units of ``rtol``) and the decision."""
        widths.clear()
        yes = certify(inst, None, rtol, decide=target, terms=terms).hi <= target
        return [x / (rtol * l0) for x in widths], yes

    near, far = mid + 0.75 * w, mid - 100 * w
    assert steps(near) == ([pytest.approx(1.0)], True)
    assert steps(far) == ([pytest.approx(64.0)], False)
    monkeypatch.setattr(ev, "normal_guess", lambda *a: float("nan"))
    tried, yes = steps(near)
    assert tried[0] == pytest.approx(64.0) and yes
