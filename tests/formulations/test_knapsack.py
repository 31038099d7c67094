"""Property 1: the unbounded-knapsack reduction, its inverse map, the CLI and the ``knapsack`` family."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deplbench.cli import main
from deplbench.errors import InputError
from deplbench.formulations.knapsack import (
    Knapsack,
    check_knapsack,
    counts_to_plan,
    is_solution,
    max_value_dp,
    ortools_max_value,
    plan_to_counts,
    reduce_knapsack,
    solve_knapsack,
)
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import load_instance
from deplbench.registry import generate, solve, solver_names
from deplbench.results import Status


def random_instances(count: int, seed: int = 0) -> list[Knapsack]:
    """Small random knapsacks whose threshold sits at the best value plus d, d in [-2, 1]."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.integers(1, 4))
        w = tuple(int(x) for x in rng.integers(2, 7, size=n))
        v = tuple(int(x) for x in rng.integers(1, 10, size=n))
        cap = int(rng.integers(1, 11))
        best = max_value_dp(Knapsack(v, w, cap, 1))
        out.append(Knapsack(v, w, cap, max(1, best + int(rng.integers(-2, 2)))))
    return out


INSTANCES = random_instances(200)


def test_instances_cover_both_answers():
    answers = [solve_knapsack(kp).answer for kp in INSTANCES]
    assert 40 <= sum(answers) <= 160


def test_dp_agrees_with_ortools():
    for kp in INSTANCES:
        assert solve_knapsack(kp).max_value == ortools_max_value(kp)


def test_reduction_equals_bruteforce():
    for kp in INSTANCES:
        sol = solve_knapsack(kp)
        inst = reduce_knapsack(kp)
        res = solve("bruteforce", inst)
        if not sol.answer:
            assert res.status == Status.INFEASIBLE, (kp, res.status, res.message)
            continue
        assert res.status == Status.OPTIMAL, (kp, res.status, res.message)
        assert res.objective == sol.min_items == inst.metadata["known_optimum"]
        counts = plan_to_counts(inst, res.plan)  # the inverse map gives a knapsack solution
        assert is_solution(kp, counts) and sum(counts) == sol.min_items
        ev = evaluate(inst, counts_to_plan(inst, sol.counts), samples=0)  # and the forward map a plan
        assert ev.feasible and ev.cost == sol.min_items


@pytest.mark.skipif("milp-highs-direct" not in solver_names(), reason="milp-highs-direct not built")
def test_reduction_equals_milp_highs_direct():
    for kp in INSTANCES[:100]:
        sol = solve_knapsack(kp)
        res = solve("milp-highs-direct", reduce_knapsack(kp), {"scenarios": 3, "mip_gap": 0.0})
        if sol.answer:
            assert res.status == Status.OPTIMAL and res.objective == pytest.approx(sol.min_items), (kp, res)
            assert is_solution(kp, plan_to_counts(reduce_knapsack(kp), res.plan))
        else:
            assert res.status == Status.INFEASIBLE, (kp, res.status, res.message)


@pytest.mark.slow
def test_half_unit_slack_is_exact_for_large_numbers():
    # values and weights near the limit: the boundary plans must be decided exactly
    v, w = 2**40 + 1, 2**20 + 3
    kp = Knapsack((v, v - 1), (w, w + 1), 4 * w + 1, 4 * v - 1)
    inst = reduce_knapsack(kp)
    assert evaluate(inst, counts_to_plan(inst, (3, 1)), samples=0).feasible  # value 4v-1, weight 4w+1
    worse = evaluate(inst, counts_to_plan(inst, (2, 1)), samples=0)  # value 3v-1 < V
    assert worse.violations == ["quantile"]
    kp2 = Knapsack((v, v - 1), (w, w + 1), 4 * w, 4 * v - 1)  # capacity one unit smaller
    over = evaluate(reduce_knapsack(kp2), counts_to_plan(inst, (3, 1)), samples=0)
    assert "time" in over.violations


def test_family_optima_equal_bruteforce():
    statuses = set()
    for seed in range(30):
        inst = generate("knapsack", {"items": 3, "capacity": 8, "max_weight": 5, "max_value": 9}, seed=seed)
        md = inst.metadata
        kp = check_knapsack(md["knapsack"])
        assert md["knapsack_answer"] == (ortools_max_value(kp) >= kp.threshold)
        res = solve("bruteforce", inst)
        statuses.add(res.status)
        if md["known_status"] == "optimal":
            assert res.status == Status.OPTIMAL and res.objective == md["known_optimum"]
        else:
            assert res.status == Status.INFEASIBLE and md["known_optimum"] is None
    assert statuses == {Status.OPTIMAL, Status.INFEASIBLE}


def test_family_is_deterministic_and_checks_params():
    a = generate("knapsack", {"items": "4"}, seed=5)
    assert a == generate("knapsack", {"items": 4}, seed=5)
    assert a.metadata["known_optimum"] is None or a.metadata["known_optimum"] >= 1
    with pytest.raises(InputError):
        generate("knapsack", {"items": 0})


BAD = [
    ({"values": [4, 7.5], "weights": [3, 5], "capacity": 10, "threshold": 14}, "$.values[1]"),
    ({"values": [4, 0], "weights": [3, 5], "capacity": 10, "threshold": 14}, "$.values[1]"),
    ({"values": [4, 7], "weights": [3], "capacity": 10, "threshold": 14}, "$.weights"),
    ({"values": [4, 7], "weights": [3, 5], "capacity": 10}, "$.threshold"),
    ({"values": [4, 7], "weights": [3, 5], "capacity": 10, "threshold": 14, "x": 1}, "$.x"),
    ({"values": [4, 7], "weights": [3, 5], "capacity": True, "threshold": 14}, "$.capacity"),
    ({"values": [], "weights": [], "capacity": 3, "threshold": 1}, "$.values"),
    ([1, 2], "$"),
]


@pytest.mark.parametrize("data,path", BAD)
def test_check_knapsack_rejects(data, path):
    with pytest.raises(InputError) as e:
        check_knapsack(data, "kp.json")
    assert e.value.path == path


def test_cli_reduce_knapsack(tmp_path, capsys):
    src = tmp_path / "kp.json"
    src.write_text(json.dumps({"values": [4, 7, 3], "weights": [3, 5, 2], "capacity": 10, "threshold": 14}))
    out = tmp_path / "inst.json"
    assert main(["reduce-knapsack", str(src), "--out", str(out)]) == 0
    inst = load_instance(out)
    assert inst.metadata["known_optimum"] == 2.0 and inst.metadata["knapsack_answer"] is True
    for data, _ in BAD + [("{bad", None)]:
        src.write_text(data if isinstance(data, str) else json.dumps(data))
        bad_out = tmp_path / "bad.json"
        assert main(["reduce-knapsack", str(src), "--out", str(bad_out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("deplbench: error:") and not bad_out.exists()
