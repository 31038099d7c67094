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


def test_plan_files_keep_the_bound_and_gap_of_a_stopped_search(tmp_path):
    """A search stopped by its (deterministic) work limit writes its incumbent with the proven bound."""
    import json

    from deplbench.cli import main
    from deplbench.instances.io import load_plan

    inst, out = tmp_path / "inst.json", tmp_path / "plan.json"
    assert main(["generate", "random", "--set", "models=4", "--set", "epochs=30", "--seed", "3",
                 "--out", str(inst)]) == 0
    assert main(["solve", str(inst), "--solver", "exact", "--set", "max_work=30", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["status"] == "timeout" and data["segments"]
    assert 0 < data["bound"] < data["objective"]
    assert data["gap"] == pytest.approx((data["objective"] - data["bound"]) / data["objective"])
    assert load_plan(str(out)).bound == data["bound"]  # the plan file format reads them back


def _solfile(fmt: str, objective: float = 10.0):
    from deplbench.formulations.backends.solfile import SolFile

    return SolFile(fmt, Status.OPTIMAL, "optimal", objective, {"x": 1.0})


@pytest.mark.parametrize("fmt,log,bound", [
    ("highs", "  Status            Optimal\n  Primal bound      10\n  Dual bound        9.5\n", 9.5),
    ("cbc", "Result - Optimal solution found (within gap tolerance)\n\nObjective value: 10\n"
            "Lower bound:                    7.25\nGap:   0.3\n", 7.25),
    ("cbc", "Cbc0005I Partial search - best objective 10 (best possible 6.5), took 4 iterations\n", 6.5),
    ("cbc", "Result - Optimal solution found\n\nObjective value:                10.00000000\n", 10.0),
    ("scip", "Dual Bound         : +8.0000000000000000e+00\n", 8.0),
    ("cbc", "Result - Optimal solution found (within gap tolerance)\n\nObjective value: 10\n", None),
    ("highs", "  Status            Optimal\n  Primal bound      10\n", None),
])
def test_mps_bounds_come_from_the_solver_log_only(fmt, log, bound):
    """An `optimal` within a gap tolerance is no bound: only a dual bound the solver printed counts."""
    from deplbench.formulations.backends.solfile import dual_bound

    assert dual_bound(log, _solfile(fmt)) == bound


def test_mps_with_a_loose_gap_reports_the_solver_dual_bound():
    inst = generate("random", {"epochs": 8}, seed=0)
    res = solve("mps", inst, {"preset": "cbc", "scenarios": 20, "mip_gap": 0.3, "time_limit": 60})
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE), res.message
    assert res.bound is not None and res.bound <= res.objective
    if res.bound < res.objective - 1e-9:  # stopped within the gap: the gap says so, not 0
        assert res.gap > 0


def test_saa_replications_count_their_dual_bound_not_their_objective():
    from deplbench.formulations.saa.bounds import replication_value
    from deplbench.results import SolveResult

    within_gap = SolveResult(Status.OPTIMAL, None, objective=100.0, bound=99.0)
    assert replication_value(within_gap) == 99.0
    assert replication_value(SolveResult(Status.OPTIMAL, None, objective=100.0)) == float("-inf")
    assert replication_value(SolveResult(Status.INFEASIBLE)) == float("inf")
    assert replication_value(SolveResult(Status.TIMEOUT, None, objective=100.0, bound=80.0)) == 80.0


def test_paper_figures_call_an_unproven_reference_best_known():
    import pandas as pd

    from deplbench.benchmarks.report.paper_figures import method_rows, reference_label

    base = {"network": "alexnet", "noise_mode": "per_run", "target": 9.0, "feasible": True, "repetition": 0,
            "violations": "", "p_eta": None}
    runs = pd.DataFrame([
        {**base, "instance": "a", "solver": "exact", "solver_kind": "exact", "status": "optimal", "cost": 10.0},
        {**base, "instance": "b", "solver": "exact", "solver_kind": "exact", "status": "timeout", "cost": 12.0},
        {**base, "instance": "b", "solver": "depl", "solver_kind": "heuristic", "status": "feasible", "cost": 11.0},
    ])
    rows = method_rows(runs)
    ref = rows[rows["which"] == "optimum"].set_index("instance")
    assert bool(ref.loc["a", "proven"]) and not bool(ref.loc["b", "proven"])
    assert ref.loc["b", "cost"] == 11.0  # the cheapest certified plan, from a heuristic: not an optimum
    assert reference_label(rows[rows["instance"] == "a"]) == "optimum"
    assert reference_label(rows[rows["instance"] == "b"]) == "best known"
    assert reference_label(rows) == "optimum or best known"


def test_the_harness_doc_gives_the_configs_true_run_counts():
    """docs/harness.md's sizes are what `deplbench run NAME --dry-run` counts (issue 31: no stale figures)."""
    import re
    from pathlib import Path

    from deplbench.benchmarks.harness.config import load_config

    doc = (Path(__file__).resolve().parents[2] / "docs" / "harness.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)`(?: \(default\))? \|.*\| (\d+) runs \|$", doc, re.M)
    assert len(rows) >= 9
    for name, count in rows:
        assert len(load_config(name).runs) == int(count), name


@pytest.mark.parametrize("kind,value,bound,cost,expect", [
    ("opt", 100.0, None, 90.0, "cheaper than the proven optimum"),
    ("inf", None, None, 90.0, "feasible for a problem proven infeasible"),
    ("best", 100.0, 95.0, 90.0, "cheaper than the proven lower bound"),
])
def test_library_check_builds_each_contradiction(kind, value, bound, cost, expect):
    from deplbench.benchmarks.library.check import CheckResult, _compare
    from deplbench.benchmarks.library.solu import Reference

    ref = Reference(kind, value, bound) if kind != "inf" else Reference("inf")
    res = CheckResult("p", True, cost, ref)
    _compare(res, ref)
    assert not res.consistent and expect in res.contradictions[0]
    fine = CheckResult("p", True, 100.0 if kind != "inf" else cost, ref)
    if kind != "inf":
        _compare(fine, ref)
        assert fine.consistent, fine.contradictions


MPS = """NAME        tiny
ROWS
 N  obj
 L  cap
 E  exact
COLUMNS
    x         obj       1           cap       1
    x         exact     0.1
    y         obj       2           cap       1
    y         exact     0.2
    MARKER    'MARKER'  'INTORG'
    z         obj       1
    MARKER    'MARKER'  'INTEND'
RHS
    RHS       cap       1           exact     0.3
    RHS       obj       -5
BOUNDS
 UP BND       x         10
 UP BND       y         10
 BV BND       z
ENDATA
"""


@pytest.mark.parametrize("values,ok,kind", [
    ({"x": "1", "y": "1", "z": "1"}, False, "row"),            # cap: 2 <= 1 broken
    ({"x": "0.5", "y": "0.5", "z": "1"}, False, "row"),        # exact: 0.15 != 0.3
    ({"x": "1", "y": "1", "z": "0.9999"}, False, "integrality"),
])
def test_rational_checker_flags_violations(tmp_path, values, ok, kind):
    from deplbench.benchmarks.library.rational import check_solution, read_mps

    (tmp_path / "m.mps").write_text(MPS)
    v = check_solution(read_mps(tmp_path / "m.mps"), values)
    assert v.ok is ok and v.worst[kind][0] > 0


def test_rational_checker_is_exact_and_uses_miplib_tolerances(tmp_path):
    from fractions import Fraction

    from deplbench.benchmarks.library.rational import check_solution, read_mps

    (tmp_path / "m.mps").write_text(MPS.replace(" L  cap", " G  cap"))  # cap: x + y >= 1
    m = read_mps(tmp_path / "m.mps")
    exact = check_solution(m, {"x": "1", "y": "1", "z": "1"}, stated="9")
    assert exact.worst["row"][0] == 0 and exact.ok  # 0.1 + 0.2 = 0.3 exactly (floats: 0.30000000000000004)
    assert exact.objective == 9  # x + 2 y + z minus the objective row's RHS (-5)
    wrong = check_solution(m, {"x": "1", "y": "1", "z": "1"}, stated="8.99")
    assert not wrong.ok and wrong.worst["objective"][0] == Fraction(1, 900)
    # 1e-5 relative off the equality row: rejected; 5e-7 relative: accepted (MIPLIB's 1e-6)
    off = check_solution(m, {"x": "1.0001", "y": "1", "z": "1"})
    assert not off.ok and off.worst["row"][0] == Fraction(1, 10**5)
    close = check_solution(m, {"x": "1.000005", "y": "1", "z": "0.99999"})
    assert close.ok and close.worst["row"][0] == Fraction(5, 10**7)
    assert close.worst["integrality"][0] == Fraction(1, 10**5)  # at the integrality tolerance: accepted


def test_the_library_writes_opt_and_inf_only_from_proofs(monkeypatch):
    """With every decision undecided the library's line is neither =opt= nor =inf= (an incumbent certified
    elsewhere makes it =best=); with the cheapest one undecided it is =best= with the bound that holds."""
    from deplbench.benchmarks.library.build import true_reference

    inst = generate("random", SMALL, seed=1)
    assert true_reference(inst, 60.0)["ref"].kind == "opt"
    for mod in MODULES.values():
        _straddling(mod, monkeypatch, first=None)
    assert true_reference(inst, 60.0)["ref"].kind in ("best", "unkn")
    monkeypatch.undo()
    for mod in MODULES.values():
        _straddling(mod, monkeypatch, first=1)
    ref = true_reference(inst, 60.0)["ref"]
    assert ref.kind == "best" and ref.bound is not None and ref.bound <= ref.value  # never =opt=
