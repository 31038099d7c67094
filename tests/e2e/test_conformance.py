"""Conformance: every registered method on the same small instances with known optima.

The instances are deterministic (constant noise and penalties), so the quantile is the
loss itself, every SAA sample equals the true problem, and the optimum is known by
exhaustive enumeration of every plan through the evaluator alone. Every method must
return an honest status (the registry downgrades untrue claims to ``error``), never a
plan cheaper than the optimum, and exact and SAA methods must find the optimum.
"""

from __future__ import annotations

import copy
import itertools

import pytest

from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan
from deplbench.registry import get_solver, solve, solver_names
from deplbench.results import Status

from builders import tiny_dict


def _deterministic(target: float, budget: float, transfer: bool = True):
    d = tiny_dict("per_run", "constant")
    d["name"] = f"det-t{target:g}-b{budget:g}"
    d["max_epochs"] = 4
    d["loss"]["target"] = target
    d["time_budget"] = budget
    d["switches"][0]["penalty"] = {"family": "constant", "value": 0.25, "low": 0.0, "high": 1.0}
    # finite decimals everywhere (g = 1, constant progress) so CP-SAT's integer scaling is exact
    d["data_effect"]["alpha"] = 0.0
    for m in d["models"]:
        m["progress"].update(B=0.0, p=0.0)
    if not transfer:
        d["transfer_costs"] = []
    return instance_from_dict(d)


def _enumerate(inst):
    """The optimum by brute force over every plan (evaluator only), or None if infeasible."""
    opts = [(m, c.id, f) for m in inst.model_ids for c in inst.clusters for f in c.levels]
    best = None
    subsets = [s for r in range(1, len(inst.dataset_ids) + 1) for s in itertools.combinations(inst.dataset_ids, r)]
    for ds in subsets:
        for K in range(1, inst.max_epochs + 1):
            for seq in itertools.product(opts, repeat=K):
                if any(not inst.allowed(a[0], b[0]) for a, b in zip(seq, seq[1:], strict=False)):
                    continue
                ev = evaluate(inst, Plan.from_epochs(ds, seq), samples=0)
                if ev.feasible and (best is None or ev.cost < best - 1e-12):
                    best = ev.cost
    return best


CASES = {
    "det-a": dict(target=4.5, budget=25.0),
    "det-b": dict(target=6.0, budget=9.0, transfer=False),
    "det-infeasible": dict(target=1.0, budget=40.0),
}
_OPT: dict[str, float | None] = {}


def _case(name):
    inst = _deterministic(**CASES[name])
    if name not in _OPT:
        _OPT[name] = _enumerate(inst)
    return inst, _OPT[name]


def test_cases_are_meaningful():
    assert _case("det-a")[1] is not None
    assert _case("det-b")[1] is not None
    assert _case("det-infeasible")[1] is None


def _params(name: str) -> dict:
    kind = get_solver(name).kind
    p = {"time_limit": 60.0}
    if kind == "saa":
        p.update(scenarios=5, mip_gap=0.0)
    return p


@pytest.fixture(params=solver_names())
def method(request):
    return request.param


@pytest.mark.parametrize("case", list(CASES))
def test_method_on_known_optimum(method, case):
    inst, opt = _case(case)
    kind = get_solver(method).kind
    res = solve(method, inst, _params(method))
    if opt is None:
        # no method may claim a plan; exact ones must prove infeasibility, while a heuristic
        # may only report that it found nothing (``error`` with its reason), not a proof
        assert not res.status.has_solution
        if kind in ("exact", "saa"):
            assert res.status == Status.INFEASIBLE, res.message
        return
    assert res.status != Status.ERROR, res.message
    if res.status.has_solution:
        ev = res.evaluation
        assert ev is not None and ev.feasible
        assert ev.cost >= opt - 1e-6 * max(1.0, opt)
    if kind in ("exact", "saa"):
        assert res.status == Status.OPTIMAL, res.message
        assert res.evaluation.cost == pytest.approx(opt, rel=1e-6)
    else:
        assert res.status.has_solution, res.message


def test_registry_downgrades_untrue_claims(tiny):
    """A method that lies about feasibility is reported as an error, not believed."""
    from deplbench import registry
    from deplbench.instances.plan import Segment
    from deplbench.results import SolveResult

    @registry.register_solver("_liar", kind="heuristic")
    def _liar(instance, **params):
        plan = Plan(("d1",), (Segment("pruned", "A", 1.0, 1),))  # misses the target
        return SolveResult(Status.FEASIBLE, plan, objective=0.0)

    registry.SOLVER_MODULES["_liar"] = __name__
    try:
        res = solve("_liar", copy.deepcopy(tiny))
        assert res.status == Status.ERROR and "quantile" in res.message
    finally:
        registry.SOLVER_MODULES.pop("_liar")
        registry._SOLVERS.pop("_liar")
