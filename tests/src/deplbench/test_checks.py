"""Generated conformance checks: every registered method x family x named check (deplbench.checks)."""

from __future__ import annotations

import pytest

from deplbench import checks

CASES = list(checks.conformance_cases())


def test_every_method_and_family_is_enrolled():
    from deplbench.registry import family_names, solver_names

    methods = {c.method for c in CASES}
    families = {c.family for c in CASES if c.family}
    assert methods == set(solver_names())
    assert families == set(family_names()) - set(checks.NOT_GENERABLE)
    assert {c.check for c in CASES} >= {"plan_recertifies", "status_consistent", "time_limit_honoured",
                                       "same_seed_same_plan", "out_of_range_params_rejected"}


#: slow (a second or more a case under load): imports_declared runs each method in a child process, and the
#: MIP solvers build and solve a model per case (mps through files in a child process). The fast lane keeps
#: the other checks of the other methods; tests/e2e/test_conformance.py runs every method there too.
def _marks(c):
    slow = c.check == "imports_declared" or c.method == "mps" or c.method.startswith("milp-")
    return [pytest.mark.slow] if slow else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_conformance(case):
    checks.run_check(case)
