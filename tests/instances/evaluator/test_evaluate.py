"""The evaluator: exact cost and time, violations, and the certified quantile bracket."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.instances.evaluator.evaluate import certify, evaluate
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.families.paper import load_paper
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan, Segment
from deplbench.instances.semantics import data_effect

from builders import MODEL_EXAMPLE_PLAN, tiny_dict


def test_model_md_example_plan():
    inst = load_paper("paper-alexnet-per_run-t9")
    ev = evaluate(inst, MODEL_EXAMPLE_PLAN, samples=0)
    assert ev.cost == pytest.approx(1090.0, abs=1e-9)
    assert ev.time == pytest.approx(99.62, abs=0.005)
    assert ev.feasible and ev.violations == []
    lo, hi = ev.quantile_bounds
    assert 8.9 < lo <= hi < 8.95  # MODEL.md: about 8.92


def test_cost_and_time_by_hand(tiny):
    # d1 + d2: Q = 1500, Q_eff = 1250, g = 1 + 0.3 ln(1.25)
    plan = Plan(("d1", "d2"), (Segment("full", "A", 0.5, 2), Segment("pruned", "B", 1.0, 3)))
    ev = evaluate(tiny, plan, samples=0)
    # epoch on A at 0.5: x = 5, nodes 2: time = 0.04*1500/(2*5) + 2/4 = 6.5, cost = 1*5*2 = 10
    # epoch on B at 1.0: x = 8, nodes 1: time = 0.02*1500/8 + 0.5/2 = 4.0, cost = 0.5*8 = 4
    assert ev.compute_cost == pytest.approx(2 * 10 + 3 * 4)
    # transfer: both clusters used: d1->B 3.0 + d2->A 1.5 (missing pairs cost 0)
    assert ev.transfer_cost == pytest.approx(4.5)
    assert ev.cost == pytest.approx(36.5)
    assert ev.time == pytest.approx(2 * 6.5 + 3 * 4.0)
    assert ev.g == pytest.approx(1 + 0.3 * math.log(1.25))
    # expected loss: l0 - g sum a(k) E[X] + E[penalty] (one switch at epoch 3)
    g = ev.g
    a = [2 / math.sqrt(1), 2 / math.sqrt(2), 1.2 / math.sqrt(4), 1.2 / math.sqrt(5), 1.2 / math.sqrt(6)]
    pen = loss_terms(tiny, plan.models(), g)
    e_pen = [d.mean for d, c in zip(pen.dists, pen.coefs, strict=False) if c == 1.0][0]
    assert 0.3 < e_pen < 0.35
    assert ev.loss_mean == pytest.approx(10 - g * sum(a) + e_pen, rel=1e-9)


@pytest.mark.parametrize("mutate, violation", [
    (lambda p: Plan(p.datasets, (Segment("pruned", "A", 1.0, 1), Segment("full", "A", 1.0, 1))), "switch"),
    (lambda p: Plan(p.datasets, (Segment("full", "A", 1.0, 7),)), "epochs"),
    (lambda p: Plan((), p.segments), "data"),
    (lambda p: Plan(p.datasets, (Segment("full", "A", 0.7, 2),)), "level"),
    (lambda p: Plan(p.datasets, (Segment("full", "B", 0.25, 6),)), "time"),
    (lambda p: Plan(p.datasets, (Segment("pruned", "A", 1.0, 1),)), "quantile"),
])
def test_each_violation(tiny, mutate, violation):
    base = Plan(("d1",), (Segment("full", "A", 1.0, 3),))
    ev = evaluate(tiny, mutate(base), samples=0)
    assert violation in ev.violations
    assert not ev.feasible


def test_data_violation_when_g_not_positive():
    d = tiny_dict()
    d["data_effect"]["alpha"] = 2.0
    d["datasets"][1]["quality"] = 0.1  # d2 alone: Q_eff = 50, g = 1 + 2 ln(0.05) < 0
    inst = instance_from_dict(d)
    ev = evaluate(inst, Plan(("d2",), (Segment("full", "A", 1.0, 2),)), samples=0)
    assert "data" in ev.violations


def test_level_matched_within_tolerance(tiny):
    ev = evaluate(tiny, Plan(("d1",), (Segment("full", "A", 0.5 + 5e-10, 2),)), samples=0)
    assert "level" not in ev.violations
    assert ev.compute_cost == pytest.approx(20.0, abs=1e-12)  # the instance's value is used


def _mc_check(inst, plan, n=400_000, seed=7):
    """The certified bracket must contain the true quantile: check against a large MC sample."""
    g = data_effect(inst, plan.datasets).g
    terms = loss_terms(inst, plan.models(), g)
    br = certify(inst, plan)
    x = terms.sample(np.random.default_rng(seed), n)
    w = inst.loss.quantile
    se = math.sqrt(w * (1 - w) / n)
    # P(l <= hi) >= w and P(l < lo) <= w, up to 5 standard errors of the estimate
    assert np.mean(x <= br.hi) >= w - 5 * se
    assert np.mean(x < br.lo) <= w + 5 * se
    return br


@pytest.mark.parametrize("mode", ["per_epoch", "per_run"])
@pytest.mark.parametrize("family", ["invgamma", "gamma", "lognormal", "normal", "constant"])
def test_bracket_contains_monte_carlo(mode, family):
    inst = instance_from_dict(tiny_dict(mode, family))
    plan = Plan(("d1", "d2"), (Segment("full", "A", 1.0, 3), Segment("pruned", "A", 1.0, 3)))
    br = _mc_check(inst, plan)
    assert br.width < 1e-2 * inst.loss.initial


@pytest.mark.parametrize("mode", ["per_epoch", "per_run"])
def test_bracket_contains_monte_carlo_on_paper_plan(mode):
    inst = load_paper(f"paper-mobilenet-{mode}-t9")
    plan = Plan(("cifar10",), (Segment("fast-unsteady", "A-class", 1.0, 8),
                               Segment("intermediate", "B-class", 1.0, 10),
                               Segment("slow-steady", "A-class", 0.5, 12)))
    _mc_check(inst, plan, n=200_000)


def test_penalty_normal_and_constant_families():
    d = tiny_dict("per_epoch")
    d["switches"][0]["penalty"] = {"family": "normal", "loc": -0.2, "scale": 0.3, "low": -0.5, "high": 0.4}
    d["models"].append({"id": "third", "size": 0.1, "work": 0.01, "progress": {"A": 0.5, "B": 0, "p": 1},
                        "noise": {"family": "gamma", "mean": 0.9, "var": 0.05}})
    d["switches"].append({"from": "pruned", "to": "third",
                          "penalty": {"family": "constant", "value": 0.25, "low": 0.0, "high": 1.0}})
    inst = instance_from_dict(d)
    plan = Plan(("d1",), (Segment("full", "A", 1.0, 2), Segment("pruned", "A", 1.0, 2),
                          Segment("third", "A", 1.0, 2)))
    _mc_check(inst, plan)


@pytest.mark.parametrize("mode", ["per_epoch", "per_run"])
def test_bracket_narrows_with_grid(mode):
    inst = load_paper(f"paper-alexnet-{mode}-t9")
    plan = Plan(("cifar10",), (Segment("fast-unsteady", "A-class", 1.0, 20),
                               Segment("intermediate", "A-class", 1.0, 10)))
    widths = []
    brackets = []
    for rtol in (4e-3, 1e-3, 2.5e-4):
        br = certify(inst, plan, rtol=rtol)
        widths.append(br.width)
        brackets.append(br)
        assert br.width <= rtol * inst.loss.initial * 1.01
    assert widths[0] > widths[1] > widths[2]
    # every bracket contains the truth, so they all overlap
    assert max(b.lo for b in brackets) <= min(b.hi for b in brackets)


def test_refinement_decides_near_target():
    inst = load_paper("paper-alexnet-per_run-t9")
    br = certify(inst, MODEL_EXAMPLE_PLAN, rtol=1e-2)
    target = (br.lo + br.hi) / 2  # a target inside the coarse bracket
    fine = certify(inst, MODEL_EXAMPLE_PLAN, rtol=1e-2, decide=target)
    assert fine.width < br.width
    assert not (fine.lo <= target < fine.hi) or fine.width <= 1e-6 * inst.loss.initial * 1.01


def test_monte_carlo_ci_and_reproducibility(tiny):
    plan = Plan(("d1",), (Segment("full", "A", 1.0, 4),))
    a = evaluate(tiny, plan, samples=5000, seed=3)
    b = evaluate(tiny, plan, samples=5000, seed=3)
    c = evaluate(tiny, plan, samples=5000, seed=4)
    assert a.mc_quantile == b.mc_quantile != c.mc_quantile
    assert a.mc_ci[0] <= a.mc_quantile <= a.mc_ci[1]


def test_deterministic_loss_is_exact():
    inst = instance_from_dict(tiny_dict("per_run", "constant"))
    d = tiny_dict("per_run", "constant")
    d["switches"][0]["penalty"] = {"family": "constant", "value": 0.5, "low": 0.0, "high": 1.0}
    inst = instance_from_dict(d)
    plan = Plan(("d1",), (Segment("full", "A", 1.0, 1), Segment("pruned", "A", 1.0, 1)))
    ev = evaluate(inst, plan, samples=100)
    expect = 10 - 2.0 - 1.2 / math.sqrt(3) + 0.5
    assert ev.quantile_bounds == (pytest.approx(expect), pytest.approx(expect))
    assert ev.loss_mean == pytest.approx(expect)


def test_loss_moments_are_the_sums_of_their_definition():
    """``LossTerms.mean``/``var`` add the very products of ``sum(c * d.mean ...)`` in the same
    order (bit for bit), with numpy and Python coefficients alike."""
    from deplbench.instances.evaluator.loss import LossTerms
    from deplbench.instances.laws.distributions import penalty_dist

    inst = load_paper("paper-alexnet-per_epoch-t9")
    laws = [penalty_dist(s.penalty) for s in inst.switches][:3]
    rng = np.random.default_rng(5)
    for n in (1, 7, 60):
        cs = rng.normal(0.0, 3.0, n)
        ds = tuple(laws[i] for i in rng.integers(0, len(laws), n))
        for coefs in (tuple(cs), tuple(float(c) for c in cs)):
            t = LossTerms(1.25, ds, coefs)
            assert t.mean == 1.25 + sum(c * d.mean for c, d in zip(coefs, ds, strict=True))
            assert t.var == sum(c * c * d.var for c, d in zip(coefs, ds, strict=True))
            assert type(t.mean) is type(1.25 + sum(c * d.mean for c, d in zip(coefs, ds, strict=True)))
    with pytest.raises(ValueError, match="2 laws but 1 coefficients"):  # never a silently shorter sum
        LossTerms(0.0, tuple(laws[:2]), (1.0,))


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_cantelli_lower_bound_never_passes_a_certified_bracket(mode):
    """``cantelli_lower`` is below the quantile, so below every certified ``hi`` (at low, middle and
    the instance's levels); DepL refutes with it exactly when certify() would (hi > target), and it
    does refute plans far from the target."""
    from deplbench.instances.evaluator.evaluate import cantelli_lower
    from deplbench.instances.evaluator.quantile import quantile_bracket
    from deplbench.registry import generate

    rng = np.random.default_rng(3)
    refuted = 0
    for seed in range(3):
        inst = generate("random", {"noise_mode": mode}, seed=seed)
        g = data_effect(inst, inst.dataset_ids).g
        ids = inst.model_ids
        for n in range(12):
            k = int(rng.integers(1, inst.max_epochs + 1))
            models = [ids[int(rng.integers(len(ids)))]] * k
            if n % 2 and inst.switches and k > 1:  # two runs joined by a listed switch: a penalty term
                sw = inst.switches[int(rng.integers(len(inst.switches)))]
                cut = int(rng.integers(1, k))
                models = [sw.from_] * cut + [sw.to] * (k - cut)
            terms = loss_terms(inst, models, g)
            for omega in (0.02, 0.5, inst.loss.quantile):
                br = quantile_bracket(terms, omega, 1e-4 * inst.loss.initial)
                assert cantelli_lower(terms.mean, terms.var, omega, inst.loss.initial) <= br.hi, (inst.name, models, omega, br)
            if cantelli_lower(terms.mean, terms.var, inst.loss.quantile, inst.loss.initial) > inst.loss.target:
                refuted += 1
                plan = Plan.from_epochs(inst.dataset_ids, [(m, inst.clusters[0].id, inst.clusters[0].levels[-1])
                                                           for m in models])
                assert certify(inst, plan, 2e-3, decide=inst.loss.target).hi > inst.loss.target
    assert refuted > 0
