"""``bruteforce`` against an exhaustive enumeration of every plan on tiny instances."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.formulations.allocation import Allocator, cost_grid
from deplbench.instances.evaluator.evaluate import certify, evaluate
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.families.paper import load_paper
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import (
    data_effect,
    epoch_cost,
    epoch_time,
    transfer_cost,
    within_budget,
)
from deplbench.registry import solve
from deplbench.results import Status


def tiny(seed: int, *, noise_mode: str = "per_run", max_epochs: int = 3, cyclic: bool = False,
         transfer: bool = False, odd_costs: bool = False, target: float | None = None,
         budget: float | None = None):
    """2 models, 2 clusters with 2 levels, 2 datasets (one too poor to use alone)."""
    rng = np.random.default_rng(seed)
    models = []
    for i, fam in enumerate(("invgamma", "gamma" if seed % 2 else "lognormal")):
        models.append({"id": f"m{i}", "size": float(rng.integers(0, 5)), "work": float(rng.uniform(0.05, 0.2)),
                       "progress": {"A": float(rng.uniform(1.5, 3)), "B": 0.0, "p": float(rng.uniform(0, 1))},
                       "noise": {"family": fam, "mean": 1.0, "var": float(rng.uniform(0.01, 0.1))}})
    uc = [1.2345671, 0.7654329] if odd_costs else [1.0, 1.5]
    switches = [{"from": "m0", "to": "m1", "penalty": {"family": "t", "df": 5, "loc": 0.3, "scale": 0.2,
                                                       "low": 0.0, "high": 1.0}}]
    if cyclic:
        switches.append({"from": "m1", "to": "m0", "penalty": {"family": "constant", "value": 0.2,
                                                               "low": 0.0, "high": 1.0}})
    data = {
        "schema": "depl-instance/1", "name": f"tiny-{seed}",
        "loss": {"initial": 10.0, "target": target if target is not None else float(rng.uniform(4.5, 7.5)),
                 "quantile": 0.9},
        "time_budget": budget if budget is not None else float(rng.uniform(4, 9)),
        "max_epochs": max_epochs, "noise_mode": noise_mode,
        "data_effect": {"reference_samples": 100, "alpha": 0.5},
        "clusters": [{"id": f"c{j}", "nodes": 1 + j, "capacity": 10.0 * (j + 1), "levels": [0.5, 1.0],
                      "bandwidth": 10.0, "unit_cost": uc[j]} for j in range(2)],
        "datasets": [{"id": "big", "samples": 100, "quality": 1.0},
                     {"id": "poor", "samples": 10, "quality": 0.5}],
        "transfer_costs": ([{"dataset": "big", "cluster": "c1", "cost": 7.0},
                            {"dataset": "poor", "cluster": "c0", "cost": 3.0}] if transfer else []),
        "models": models, "switches": switches,
    }
    return instance_from_dict(data, "tiny")


def exhaustive(inst) -> float | None:
    """Least cost over every plan the evaluator calls feasible (None: no feasible plan)."""
    choices = [(m, c.id, f) for m in inst.model_ids for c in inst.clusters for f in c.levels]
    best = None
    verdict: dict = {}
    for r in range(1, len(inst.datasets) + 1):
        for ds in itertools.combinations(inst.dataset_ids, r):
            de = data_effect(inst, ds)
            if not de.g > 0:
                continue
            for K in range(1, inst.max_epochs + 1):
                for seq in itertools.product(choices, repeat=K):
                    models = tuple(e[0] for e in seq)
                    if any(not inst.allowed(a, b) for a, b in zip(models, models[1:], strict=False)):
                        continue
                    t = sum(epoch_time(inst, m, c, f, de.Q) for m, c, f in seq)
                    if not within_budget(t, inst.time_budget):
                        continue
                    cost = (sum(epoch_cost(inst, c, f) for _, c, f in seq)
                            + transfer_cost(inst, ds, {c for _, c, _ in seq}))
                    if best is not None and cost >= best[0]:
                        continue
                    key = (ds, models)
                    if key not in verdict:
                        terms = loss_terms(inst, list(models), de.g)
                        br = certify(inst, Plan(ds, ()), decide=inst.loss.target, terms=terms)
                        verdict[key] = br.hi <= inst.loss.target
                    if verdict[key]:
                        best = (cost, Plan.from_epochs(ds, seq))
    if best is not None:
        assert evaluate(inst, best[1], samples=0).feasible  # the reference agrees with the evaluator
    return None if best is None else best[0]


VARIANTS = [dict(), dict(noise_mode="per_epoch", cyclic=True, max_epochs=4), dict(transfer=True),
            dict(odd_costs=True, cyclic=True)]  # odd costs: no small cost grid, the MILP allocation
CASES = [dict(seed=s, **v) for s in range(1, 13) for v in VARIANTS] + [
    dict(seed=7, target=1.0),  # loss target out of reach: infeasible
    dict(seed=8, budget=0.05),  # no epoch fits the time budget: infeasible
    dict(seed=9, target=8.0, budget=20.0, max_epochs=4, transfer=True),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bruteforce_equals_exhaustive(case):
    inst = tiny(**case)
    ref = exhaustive(inst)
    res = solve("bruteforce", inst)
    if ref is None:
        assert res.status == Status.INFEASIBLE, res.message
        assert res.plan is None
        return
    assert res.status == Status.OPTIMAL, res.message
    ev = evaluate(inst, res.plan, samples=0)
    assert ev.feasible, ev.details
    assert math.isclose(ev.cost, ref, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(res.objective, ref, rel_tol=1e-9, abs_tol=1e-9)
    if case.get("odd_costs"):
        assert res.extra["milp_allocations"] > 0  # the fallback allocation was exercised


def test_cases_cover_both_answers():
    answers = [exhaustive(tiny(**c)) is None for c in CASES[:8]]
    assert any(answers) and not all(answers)


def test_allocation_dp_equals_milp():
    rng = np.random.default_rng(0)
    for _ in range(20):
        costs = rng.integers(1, 30, size=5).astype(float)
        times = rng.uniform(0.5, 5.0, size=(3, 5))
        counts = rng.integers(0, 5, size=3)
        al = Allocator(costs, times, budget=float(rng.uniform(5, 25)))
        dp, milp = al.solve(counts), al._solve_milp([int(c) for c in counts]) if counts.sum() else None
        assert (dp is None) == (milp is None)
        if dp is not None:
            assert dp.method == "dp" and math.isclose(dp.cost, milp.cost, abs_tol=1e-9)
            assert dp.time <= al.limit and milp.time <= al.limit
            lb = al.lower_bounds(counts[None, :])[0]
            assert lb <= dp.cost + 1e-9


def test_cost_grid():
    unit, k = cost_grid(np.array([6.0, 10.0, 12.000000000000002, 100.0]))
    assert unit == 2.0 and list(k) == [3, 5, 6, 50]


def test_model_md_example_bounds_the_optimum():
    inst = load_paper("paper-alexnet-per_run-t9")
    res = solve("bruteforce", inst)
    assert res.status == Status.OPTIMAL and res.evaluation.feasible
    assert res.objective <= 1090.0 + 1e-9


def test_refuses_large_enumeration():
    inst = tiny(3, cyclic=True, max_epochs=40, budget=1e6)
    res = solve("bruteforce", inst, {"max_sequences": 1000})
    assert res.status == Status.ERROR and "refused" in res.message


def test_timeout_reports_a_valid_bound():
    inst = tiny(9, target=8.0, budget=20.0, max_epochs=4)
    ref = exhaustive(inst)
    res = solve("bruteforce", inst, {"time_limit": 1e-9})
    assert res.status == Status.TIMEOUT and res.plan is None
    assert ref is not None and res.bound is not None and res.bound <= ref + 1e-9
