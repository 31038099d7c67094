"""The SAA scenario sampler and evaluate_on_scenarios."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan, Segment
from deplbench.instances.scenarios import (
    allowed_violations,
    evaluate_on_scenarios,
    sample_scenarios,
    scenario_losses,
)
from deplbench.instances.semantics import data_effect, progress

from builders import tiny_dict


@pytest.mark.parametrize("omega, S, allowed", [(0.9, 10, 1), (0.99, 200, 2), (0.99, 100, 1), (0.95, 1000, 50),
                                                (0.99, 50, 0), (0.5, 3, 1)])
def test_allowed_violations(omega, S, allowed):
    assert allowed_violations(omega, S) == allowed


@pytest.mark.parametrize("mode", ["per_epoch", "per_run"])
def test_sampling_is_seeded_and_shaped(mode):
    inst = instance_from_dict(tiny_dict(mode))
    a, b, c = (sample_scenarios(inst, 50, s) for s in (1, 1, 2))
    assert a.x.shape == (50, 2, inst.max_epochs) and a.penalty.shape == (50, 1, inst.max_epochs)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.penalty, b.penalty)
    assert not np.array_equal(a.x, c.x)
    const_over_k = np.allclose(a.x, a.x[:, :, :1])
    assert const_over_k == (mode == "per_run")
    assert (a.penalty >= 0).all() and (a.penalty <= 1).all()  # truncated to [low, high]


def test_scenario_loss_by_hand():
    inst = instance_from_dict(tiny_dict("per_epoch"))
    sc = sample_scenarios(inst, 5, 0)
    plan = Plan(("d1",), (Segment("full", "A", 1.0, 2), Segment("pruned", "B", 1.0, 1)))
    g = data_effect(inst, plan.datasets).g
    full, pruned = inst.model_by_id["full"], inst.model_by_id["pruned"]
    expect = (10 - g * progress(full, 1) * sc.x[:, 0, 0] - g * progress(full, 2) * sc.x[:, 0, 1]
              - g * progress(pruned, 3) * sc.x[:, 1, 2] + sc.penalty[:, 0, 2])
    assert np.allclose(scenario_losses(inst, plan, sc), expect)


@pytest.mark.parametrize("mode", ["per_epoch", "per_run"])
def test_scenario_distribution_matches_model(mode):
    inst = instance_from_dict(tiny_dict(mode))
    plan = Plan(("d1", "d2"), (Segment("full", "A", 1.0, 3), Segment("pruned", "A", 1.0, 3)))
    sc = sample_scenarios(inst, 40_000, 5)
    losses = scenario_losses(inst, plan, sc)
    terms = loss_terms(inst, plan.models(), data_effect(inst, plan.datasets).g)
    assert losses.mean() == pytest.approx(terms.mean, abs=4 * math.sqrt(terms.var / len(losses)))
    assert losses.var() == pytest.approx(terms.var, rel=0.05)


def test_evaluate_on_scenarios_counts():
    d = tiny_dict("per_run")
    inst = instance_from_dict(d)
    sc = sample_scenarios(inst, 200, 3)
    plan = Plan(("d1",), (Segment("full", "A", 1.0, 4),))
    losses = scenario_losses(inst, plan, sc)
    chk = evaluate_on_scenarios(inst, plan, sc)
    assert chk.n_violated == int(np.sum(losses > inst.loss.target + 1e-9))
    assert chk.allowed == allowed_violations(0.9, 200) == 20
    assert chk.ok == (chk.n_violated <= 20)
    # a target at the 95% empirical quantile allows the plan; at the 80% one it does not
    for q, ok in ((0.95, True), (0.8, False)):
        d2 = tiny_dict("per_run")
        d2["loss"]["target"] = float(np.quantile(losses, q))
        assert evaluate_on_scenarios(instance_from_dict(d2), plan, sc).ok is ok
