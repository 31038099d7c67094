"""The generated conformance checks fail for a method that always errors and for one that lies (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deplbench import checks, registry
from deplbench.instances.plan import Plan
from deplbench.results import SolveResult, Status

FAMILY = "random"
PER_FAMILY = [name for name, (_, per_family) in checks._CHECKS.items() if per_family]


def _register(monkeypatch, name: str, func, **kw):
    for method in registry.solver_names():  # loaded before the table is swapped for a copy
        registry.get_solver(method)
    monkeypatch.setitem(registry.SOLVER_MODULES, name, __name__)
    monkeypatch.setattr(registry, "_SOLVERS", dict(registry._SOLVERS))
    registry.register_solver(name, kind="heuristic", description="a test method", **kw)(func)
    checks.solve_cached.cache_clear()


def _always_errors(instance, **params) -> SolveResult:
    return SolveResult(Status.ERROR, message="this method always fails")


def _lies(instance, **params) -> SolveResult:
    """Claims a proven optimum with a plan that breaks the time budget (every epoch at the slowest option)."""
    m, c = instance.model_ids[0], instance.clusters[0]
    plan = Plan.from_epochs(instance.dataset_ids, [(m, c.id, min(c.levels))] * instance.max_epochs)
    return SolveResult(Status.OPTIMAL, plan, objective=0.0, bound=0.0, gap=0.0)


@pytest.mark.parametrize("check", PER_FAMILY)
def test_every_check_fails_for_a_method_that_always_errors(check, monkeypatch):
    _register(monkeypatch, "test-always-errors", _always_errors)
    with pytest.raises(AssertionError, match="fails on the random test instance"):
        checks.run_check(checks.Case("test-always-errors", FAMILY, check))


@pytest.mark.parametrize("check", PER_FAMILY)
def test_every_check_fails_for_a_method_that_lies_about_optimality(check, monkeypatch):
    _register(monkeypatch, "test-lies", _lies)
    res = checks.solve_cached("test-lies", FAMILY)
    assert res.status == Status.ERROR and "claimed optimal" in res.message  # the registry caught the lie
    with pytest.raises(AssertionError):
        checks.run_check(checks.Case("test-lies", FAMILY, check))


def test_a_declared_refusal_passes_and_a_false_one_fails(monkeypatch):
    _register(monkeypatch, "test-refuses", _always_errors, refuses={FAMILY: "too large by design"})
    for check in PER_FAMILY:
        if check != "same_seed_same_plan":
            checks.run_check(checks.Case("test-refuses", FAMILY, check))
    depl = registry.get_solver("depl")  # solves the family: a declared refusal of it is false
    _register(monkeypatch, "test-false-refusal", depl.func, refuses={FAMILY: "claims to refuse"},
              params=tuple(p for n, p in depl.params.items() if n not in registry.COMMON_DEFAULTS))
    with pytest.raises(AssertionError, match="declares it refuses"):
        checks.run_check(checks.Case("test-false-refusal", FAMILY, "status_consistent"))


def test_claims_hold_catches_a_bound_above_a_known_plan(monkeypatch):
    """A method that returns a certified plan with a bound above another method's plan fails `claims_hold`."""
    def overbound(instance, **params):
        res = registry.solve("depl-plus", instance, {"time_limit": 20})
        return SolveResult(Status.FEASIBLE, res.plan, objective=res.objective, bound=2 * res.objective,
                           gap=0.0)

    _register(monkeypatch, "test-overbound", overbound)
    assert checks.solve_cached("test-overbound", FAMILY).status == Status.FEASIBLE
    with pytest.raises(AssertionError, match="above the cost"):
        checks.run_check(checks.Case("test-overbound", FAMILY, "claims_hold"))


@pytest.mark.slow
def test_imports_declared_fails_for_a_library_imported_inside_the_run(monkeypatch):
    """The probe runs in a fresh interpreter: the method is found there by its module's file."""
    module = str(Path(__file__).resolve().parents[2] / "late_import_solvers.py")
    for name in ("test-late-import", "test-declared-import"):
        monkeypatch.setitem(registry.SOLVER_MODULES, name, module)
    with pytest.raises(AssertionError, match=r"imported inside the timed run .*'duckdb'"):
        checks.check_imports_declared("test-late-import")
    checks.check_imports_declared("test-declared-import")  # declared: imported before the clock
