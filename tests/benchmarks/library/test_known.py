"""Family proofs of library references: the knapsack reduction's dynamic programs (Property 1)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from deplbench.benchmarks.library.build import _known, grade, true_reference
from deplbench.benchmarks.library.known import known_reference
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import instance_from_dict
from deplbench.registry import generate, solve
from deplbench.results import Status

SMALL = {"items": 3, "capacity": 12, "max_weight": 5, "max_value": 10}


def _knapsack(seed: int, **params):
    return generate("knapsack", {**SMALL, **params}, seed)


def test_knapsack_proof_equals_bruteforce_on_both_answers():
    seen = set()
    for seed in range(1, 13):
        inst = _knapsack(seed)
        known = known_reference(inst)
        r = solve("bruteforce", inst, {"time_limit": 60.0})
        assert known is not None and r.status in (Status.OPTIMAL, Status.INFEASIBLE), inst.name
        assert known.status == str(r.status), inst.name
        if known.status == "optimal":
            assert known.cost == r.evaluation.cost
            ev = evaluate(inst, known.plan, samples=0)
            assert ev.feasible and ev.cost == known.cost
        seen.add(known.status)
    assert seen == {"optimal", "infeasible"}


def test_metadata_that_lies_gives_no_proof():
    inst = _knapsack(1)
    d = inst.to_json_dict()
    d["metadata"] = json.loads(json.dumps(d["metadata"]))
    d["metadata"]["knapsack"]["threshold"] += 1  # no longer the data this instance reduces
    assert known_reference(instance_from_dict(d)) is None
    d = inst.to_json_dict()
    d["time_budget"] = d["time_budget"] + 1.0  # the instance edited, the metadata kept
    assert known_reference(instance_from_dict(d)) is None
    assert known_reference(generate("random", {}, 0)) is None  # no family proof


def test_a_disagreement_with_a_search_stops_the_build():
    inst = _knapsack(1)
    known = known_reference(inst)
    other = Status.INFEASIBLE if known.status == "optimal" else Status.OPTIMAL
    fake = SimpleNamespace(status=other, solver="exact", evaluation=SimpleNamespace(cost=1.0))
    with pytest.raises(RuntimeError, match="prove different references"):
        _known(inst, fake)


def test_the_proof_closes_an_instance_the_search_leaves_open():
    inst = generate("knapsack", {"items": 6, "capacity": 30, "max_weight": 10, "max_value": 20}, 1)
    tr = true_reference(inst, 60.0, 10)  # 10 work units: exact stops; bruteforce refuses 6^30 sequences
    assert tr["runs"]["exact"]["status"] == "timeout"
    assert tr["method"] == "knapsack-dp" and tr["ref"].kind == "opt" and tr["ref"].value == 30.0
    assert grade(tr["proof_work"], True) == "medium"  # proven, but not by a search within the easy work
    assert evaluate(inst, tr["plan"], samples=0).feasible
    full = true_reference(inst, 60.0, 150_000)  # the search proves it too, and agrees
    assert full["method"] == "exact" and full["ref"] == tr["ref"]
