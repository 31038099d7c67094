"""The ``random`` family: seeded, valid, sized as asked, feasible by construction."""

from __future__ import annotations

import pytest

from deplbench.errors import InputError
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan, Segment
from deplbench.registry import generate


def ref_plan(inst):
    m = inst.metadata
    return Plan(tuple(m["reference_datasets"]), tuple(Segment(**s) for s in m["reference_plan"]))


@pytest.mark.parametrize("params", [
    {}, {"models": 1, "clusters": 1, "levels": 1, "epochs": 1},
    {"models": 6, "clusters": 4, "datasets": 3, "epochs": 60, "noise_mode": "per_epoch", "transfer": 5.0},
    {"density": 0.0}, {"density": 1.0, "quantile": 0.99},
])
def test_sizes_validity_and_reference_plan(params):
    inst = generate("random", params, seed=7)
    p = {"models": 3, "clusters": 2, "levels": 5, "datasets": 1, "epochs": 20, "noise_mode": "per_run",
         "density": 0.5, "quantile": 0.95, **params}
    assert len(inst.models) == p["models"] and len(inst.clusters) == p["clusters"]
    assert len(inst.datasets) == p["datasets"] and inst.max_epochs == p["epochs"]
    assert all(len(c.levels) == p["levels"] and c.levels[-1] == 1.0 for c in inst.clusters)
    assert inst.noise_mode == p["noise_mode"] and inst.loss.quantile == p["quantile"]
    # valid per MODEL.md: the JSON round trip re-validates
    again = instance_from_dict(inst.to_json_dict(), "roundtrip")
    assert again == inst
    ev = evaluate(inst, ref_plan(inst), samples=0)
    assert ev.feasible, ev.details
    assert ev.cost == pytest.approx(inst.metadata["reference_cost"])
    assert 0 < inst.loss.target < inst.loss.initial
    # the chain towards more pruning is always allowed
    for i in range(p["models"] - 1):
        assert inst.allowed(f"m{i}", f"m{i + 1}")


def test_seeded_and_distinct():
    a, b, c = generate("random", {}, seed=1), generate("random", {}, seed=1), generate("random", {}, seed=2)
    assert a.to_json_dict() == b.to_json_dict()
    assert a.to_json_dict()["models"] != c.to_json_dict()["models"] and a.name != c.name


def test_density_controls_the_switch_graph():
    n = 8
    pairs = n * (n - 1)
    sparse = len(generate("random", {"models": n, "density": 0.0}, seed=0).switches)
    full = len(generate("random", {"models": n, "density": 1.0}, seed=0).switches)
    assert sparse == n - 1 and full == pairs


def test_a_cheaper_plan_can_exist():
    # the budget and target leave room: the reference plan is not trivially the only option
    inst = generate("random", {}, seed=3)
    assert inst.time_budget > evaluate(inst, ref_plan(inst), samples=0).time


@pytest.mark.parametrize("params", [{"models": 0}, {"density": 1.5}, {"noise_mode": "daily"},
                                    {"quantile": 1.0}, {"transfer": -1.0}, {"colour": 1}])
def test_bad_parameters(params):
    with pytest.raises(InputError):
        generate("random", params, seed=0)
