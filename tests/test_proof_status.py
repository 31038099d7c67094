"""`optimal` and `infeasible` only with the proof behind them (issue 31).

A sequence rejected while its finest certified bracket still straddles the target may be
feasible; `exact` and `bruteforce` must then say `feasible` (a plan, with the bound that holds) or
`unknown` (none), never `optimal` / `infeasible`. The straddle is forced by wrapping the
evaluator's decision so that chosen calls return a bracket around the target.
"""

from __future__ import annotations

import dataclasses

import pytest

from deplbench.formulations.exact import bruteforce as bf_mod
from deplbench.formulations.exact import search as search_mod
from deplbench.formulations.exact.methods import proof_result
from deplbench.registry import generate, solve
from deplbench.results import Status

SMALL = {"models": 3, "clusters": 2, "levels": 3, "datasets": 1, "epochs": 5}
MODULES = {"bruteforce": bf_mod, "exact": search_mod}


def _straddling(module, monkeypatch, first: int):
    """Make the first ``first`` decisions of ``module`` straddle the target (None: every one)."""
    real = module.certify
    calls = {"n": 0}

    def certify(inst, plan, rtol, decide=None, **kw):
        br = real(inst, plan, rtol, decide=decide, **kw)
        calls["n"] += 1
        if decide is None or (first is not None and calls["n"] > first):
            return br
        return dataclasses.replace(br, lo=decide - 1e-3, hi=decide + 1e-3)

    monkeypatch.setattr(module, "certify", certify)
    return calls


@pytest.mark.parametrize("method", ["bruteforce", "exact"])
def test_every_decision_undecided_is_unknown_not_infeasible(method, monkeypatch):
    inst = generate("random", SMALL, seed=1)
    calls = _straddling(MODULES[method], monkeypatch, first=None)
    res = solve(method, inst, {"time_limit": 60, **({"incumbent": False} if method == "exact" else {})})
    assert calls["n"] > 0
    assert res.status == Status.UNKNOWN, (res.status, res.message)
    assert res.plan is None and res.bound is not None and res.bound > 0
    assert res.extra["unproven_rejections"] >= 1


@pytest.mark.parametrize("method", ["bruteforce", "exact"])
def test_an_undecided_cheaper_sequence_leaves_the_plan_feasible_with_a_bound(method, monkeypatch):
    inst = generate("random", SMALL, seed=1)
    params = {"time_limit": 60, **({"incumbent": False} if method == "exact" else {})}
    proven = solve(method, inst, params)
    assert proven.status == Status.OPTIMAL
    _straddling(MODULES[method], monkeypatch, first=1)  # the cheapest candidate's decision
    res = solve(method, inst, params)
    # the undecided sequence's count vector is cheaper than the plan returned: no optimality claim
    assert res.status == Status.FEASIBLE, res.message
    assert res.evaluation.feasible
    assert res.bound <= proven.objective + 1e-9 <= res.objective + 1e-9
    assert res.gap > 0 and res.extra["unproven_rejections"] >= 1


def test_proof_result_claims_only_what_holds():
    assert proof_result(None, None, float("inf"), {}).status == Status.INFEASIBLE
    assert proof_result(None, None, 5.0, {}).status == Status.UNKNOWN
    plan = object()
    ok = proof_result(plan, 10.0, float("inf"), {})
    assert (ok.status, ok.bound, ok.gap) == (Status.OPTIMAL, 10.0, 0.0)
    assert proof_result(plan, 10.0, 10.0, {}).status == Status.OPTIMAL
    weak = proof_result(plan, 10.0, 8.0, {})
    assert (weak.status, weak.bound) == (Status.FEASIBLE, 8.0) and weak.gap == pytest.approx(0.2)
