"""Loss floor (MODEL.md section 4, erratum 12): validation, floored expected loss and trajectories."""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.benchmarks.report.paper_figures import loss_paths
from deplbench.errors import InputError
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan
from deplbench.registry import generate

NAME = "paper-alexnet-per_run-t5"
# a long fast-unsteady run: its per_run loss goes far below 0 in the lower tail
PLAN = Plan.from_epochs(("cifar10",), [("fast-unsteady", "A-class", 1.0)] * 40)


def without_floor(inst):
    return inst.model_copy(update={"loss": inst.loss.model_copy(update={"floor": None})})


def test_shipped_families_set_floor_zero():
    assert all(load_paper(n).loss.floor == 0.0 for n in canonical_names())
    assert generate("random", {}, seed=3).loss.floor == 0.0


@pytest.mark.parametrize("floor, msg", [(9.0, "must be below target"), (12.5, "must be below target"),
                                        (float("nan"), "finite"), ("0", "valid number")])
def test_floor_validation(floor, msg):
    data = load_paper("paper-alexnet-per_run-t9").to_json_dict()
    data["loss"] = {**data["loss"], "floor": floor}
    with pytest.raises(InputError, match=msg) as e:
        instance_from_dict(data, "inst.json")
    assert "$.loss" in str(e.value)


def test_floored_trajectories():
    inst = load_paper(NAME)
    floored = loss_paths(inst, PLAN, 5000, seed=1)
    raw = loss_paths(without_floor(inst), PLAN, 5000, seed=1)
    assert raw.min() < -5  # the floor is active on this plan
    assert floored.min() == 0.0
    np.testing.assert_array_equal(floored, np.maximum(raw, 0.0))


def test_floored_expected_loss_and_unchanged_verdict():
    inst = load_paper(NAME)
    ev, ev0 = evaluate(inst, PLAN, samples=20000), evaluate(without_floor(inst), PLAN, samples=20000)
    assert ev.feasible == ev0.feasible and ev.quantile_bounds == ev0.quantile_bounds  # quantile > floor
    assert ev0.loss_mean < 0 < ev.loss_mean
    terms = loss_terms(inst, PLAN.models(), ev.g)
    mc = np.maximum(terms.sample(np.random.default_rng(5), 200_000), 0.0).mean()
    assert ev.loss_mean == pytest.approx(mc, abs=0.02)
