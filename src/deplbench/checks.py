"""Conformance checks generated from the registries (scikit-learn's ``parametrize_with_checks`` style).

Every registered method runs every named check on one instance of every registered family,
each with the small ``test_params`` the method and the family declared at registration.
Registering a method, a family or a check enrols it: ``tests/src/deplbench/test_checks.py`` parametrises
over :func:`conformance_cases`, and a user can run :func:`run_check` on their own method.

A check raises ``AssertionError`` with a reason when the method breaks the contract.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from deplbench.errors import InputError
from deplbench.results import SolveResult, Status

#: Families that cannot be generated from parameters alone (they read an input file), with why.
NOT_GENERABLE = {"calibrated": "needs a calibration file (tests/instances/test_calibration.py covers it)",
                 "library": "reads a built library (tests/benchmarks/test_library.py covers it)"}
#: slack (s) over a method's time limit before the limit counts as ignored
TIME_SLACK_S = 10.0
#: methods whose certified plans are upper bounds on the optimum that ``claims_hold`` checks against
REFERENCES = ("bruteforce", "depl-plus", "best-exp")
#: relative tolerance of a cost comparison (the evaluator's costs are exact sums)
COST_RTOL = 1e-6


@dataclass(frozen=True)
class Case:
    """One generated check: a method, a family (None for method-only checks) and the check's name."""

    method: str
    family: str | None
    check: str

    @property
    def id(self) -> str:
        return f"{self.check}[{self.method}" + (f"@{self.family}]" if self.family else "]")


_CHECKS: dict[str, tuple[Callable[..., None], bool]] = {}


def register_check(name: str, *, per_family: bool = True):
    """Decorator: ``func(method, family, result, instance)`` (per family) or ``func(method)``."""

    def deco(func):
        _CHECKS[name] = (func, per_family)
        return func

    return deco


def conformance_cases() -> Iterator[Case]:
    """Every (method, family, check) the registries define."""
    from deplbench.registry import family_names, solver_names

    families = [f for f in family_names() if f not in NOT_GENERABLE]
    for method in solver_names():
        for name, (_, per_family) in _CHECKS.items():
            if per_family:
                yield from (Case(method, fam, name) for fam in families)
            else:
                yield Case(method, None, name)


def run_check(case: Case) -> None:
    """Run one check (raises ``AssertionError`` on a contract violation)."""
    func, per_family = _CHECKS[case.check]
    if not per_family:
        return func(case.method)
    inst = test_instance(case.family)
    res = solve_cached(case.method, case.family)
    _solved(case.method, case.family, res)
    return func(case.method, case.family, res, inst)


def _solved(method: str, family: str, res: SolveResult) -> None:
    """An ``error`` on a test instance fails every check, unless the method declares it refuses the family."""
    from deplbench.registry import get_solver

    refuses = get_solver(method).refuses
    if res.status == Status.ERROR and family not in refuses:
        raise AssertionError(f"{method} fails on the {family} test instance at its test_params "
                             f"({res.message or 'no message'}); declare refuses={{{family!r}: why}} if by design")
    if family in refuses and res.status not in (Status.ERROR, Status.UNKNOWN):
        raise AssertionError(f"{method} declares it refuses {family} ({refuses[family]}) but returned {res.status}")


@cache
def test_instance(family: str):
    """The family's instance at its declared ``test_params`` (seed 0)."""
    from deplbench.registry import generate, get_family

    return generate(family, get_family(family).test_params, seed=0)


def test_params(method: str) -> dict[str, Any]:
    """The method's declared ``test_params`` (a time limit of 20 s unless it declares one)."""
    from deplbench.registry import get_solver

    return {"time_limit": 20.0, **get_solver(method).test_params}


@cache
def solve_cached(method: str, family: str) -> SolveResult:
    from deplbench.registry import solve

    return solve(method, test_instance(family), test_params(method))


def _plan_json(res: SolveResult) -> str | None:
    if res.plan is None:
        return None
    d = res.plan.to_json_dict()
    return json.dumps({"datasets": d["datasets"], "segments": d["segments"]}, sort_keys=True)


# ---- the checks -------------------------------------------------------------------------------------

@register_check("plan_recertifies")
def check_plan_recertifies(method, family, res, inst) -> None:
    """A plan re-evaluated from scratch gets the verdict attached to the result; claims are true."""
    from deplbench.instances.evaluator.evaluate import evaluate
    from deplbench.registry import get_solver

    if res.plan is None or not res.plan.segments:
        return
    ev = evaluate(inst, res.plan, samples=0)
    assert res.evaluation is not None, "a plan without the evaluator's verdict"
    assert ev.feasible == res.evaluation.feasible and math.isclose(ev.cost, res.evaluation.cost, rel_tol=1e-12)
    if res.status.has_solution and get_solver(method).kind != "saa":
        assert ev.feasible, f"claims {res.status} but the evaluator finds {ev.violations}"


@register_check("status_consistent")
def check_status_consistent(method, family, res, inst) -> None:
    """The status is in the vocabulary and agrees with the plan (a solution claim has a plan, etc.)."""
    assert isinstance(res.status, Status)
    has_plan = res.plan is not None and bool(res.plan.segments)
    if res.status.has_solution:
        assert has_plan, f"{res.status} without a plan"
    if res.status == Status.INFEASIBLE:
        assert not has_plan, "infeasible with a plan"
    if res.status == Status.ERROR:
        assert res.message, "an error without a message"
    if res.gap is not None:
        assert res.gap >= 0 and res.bound is not None, f"gap {res.gap} without a bound"


@register_check("time_limit_honoured")
def check_time_limit(method, family, res, inst) -> None:
    """The call returns within its ``time_limit`` (plus a slack for the certification)."""
    limit = float(res.params["time_limit"])
    assert res.runtime_s <= limit + TIME_SLACK_S, f"ran {res.runtime_s:.1f} s with a limit of {limit:g} s"


@register_check("same_seed_same_plan")
def check_deterministic(method, family, res, inst) -> None:
    """The same parameters (seed included) give the same status and plan."""
    from deplbench.registry import solve

    if res.status in (Status.TIMEOUT, Status.MEMOUT):
        return  # a limit makes the incumbent depend on the machine's speed
    again = solve(method, inst, test_params(method))
    assert again.status == res.status, f"{res.status} then {again.status}"
    assert _plan_json(again) == _plan_json(res), "a different plan for the same seed"


@register_check("claims_hold")
def check_claims_hold(method, family, res, inst) -> None:
    """``optimal``, ``infeasible`` and ``bound`` agree with the certified plans of the reference methods.

    A plan feasible for the method's problem (the true problem, or its SAA sample) costs at least
    the optimum: a ``bound`` above it, an ``optimal`` plan dearer than it (beyond ``mip_gap``) or
    an ``infeasible`` claim beside it is a false claim.
    """
    from deplbench.registry import get_solver

    known = _known_costs(get_solver(method), family, inst, res.params)
    if not known:
        return
    best_name, best = min(known.items(), key=lambda kv: kv[1])
    tol = COST_RTOL * max(abs(best), 1.0)
    assert res.status != Status.INFEASIBLE, f"claims infeasible, but {best_name}'s plan is feasible (cost {best:g})"
    if res.bound is not None:
        assert res.bound <= best + tol, f"bound {res.bound:g} above the cost {best:g} of {best_name}'s plan"
    if res.status == Status.OPTIMAL and res.evaluation is not None:
        slack = float(res.params.get("mip_gap", 0.0)) * abs(res.evaluation.cost)
        assert res.evaluation.cost <= best + tol + slack, (
            f"claims optimal at cost {res.evaluation.cost:g}, but {best_name}'s plan costs {best:g}")


def _known_costs(spec, family: str, inst, params: dict) -> dict[str, float]:
    """Cost of each reference method's plan that is feasible for ``spec``'s problem (with a margin for SAA)."""
    from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios

    sample = None
    if spec.kind == "saa" and "scenarios" in params:
        sample = sample_scenarios(inst, int(params["scenarios"]), int(params["seed"]))
    out = {}
    for name in REFERENCES:
        ref = solve_cached(name, family)
        ev = ref.evaluation
        if ref.plan is None or ev is None or not ev.feasible:
            continue
        if sample is not None:
            chk = evaluate_on_scenarios(inst, ref.plan, sample)
            margin = COST_RTOL * abs(inst.loss.initial)  # far from the sample's boundary: no tolerance question
            if int((chk.losses > inst.loss.target - margin).sum()) > chk.allowed:
                continue
        out[name] = float(ev.cost)
    return out


@register_check("out_of_range_params_rejected", per_family=False)
def check_out_of_range(method) -> None:
    """Every bounded or enumerated parameter refuses a value outside its range with one line."""
    from deplbench.registry import get_solver

    spec = get_solver(method)
    for p in spec.params.values():
        bad = _outside(p)
        if bad is None:
            continue
        try:
            spec.parse_params({p.name: bad})
        except InputError as exc:
            assert "\n" not in exc.one_line() and p.name in exc.one_line()
        else:
            raise AssertionError(f"{p.name}={bad!r} accepted outside {p.range_text()}")


def _outside(p) -> Any:
    """A value just outside the parameter's declared range, or None if it has none."""
    if p.choices is not None:
        return "not-a-choice"
    if p.low is not None:
        return p.low if p.low_open else (p.low - 1 if p.type is int else p.low - 1e-3)
    if p.high is not None:
        return p.high + 1
    return None


#: the families whose test instances the import check solves (a fresh interpreter per method)
IMPORT_FAMILIES = ("random", "paper-alexnet")
_IMPORT_PROBE = """
import json, sys
from deplbench import checks, registry
method, module = sys.argv[1:3]
registry.SOLVER_MODULES.setdefault(method, module)
insts = [checks.test_instance(f) for f in sys.argv[3:]]
spec = registry.get_solver(method)
registry.prepare(spec.func, spec.imports)
before = set(sys.modules)
for inst in insts:
    registry.solve(method, inst, checks.test_params(method), check=False)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@register_check("imports_declared", per_family=False)
def check_imports_declared(method) -> None:
    """A run imports nothing outside the standard library that the method did not declare.

    ``solve`` imports the declared ``imports`` before the method's clock starts; a library the
    run imports on its own would be timed as the method's work (DepL's pipeline: about 0.1 s,
    several times its run on a paper instance). Checked in a fresh interpreter.
    """
    import subprocess
    import sys

    from deplbench.registry import SOLVER_MODULES

    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, method, SOLVER_MODULES[method], *IMPORT_FAMILIES],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"the probe failed: {out.stderr.strip().splitlines()[-1:]}"
    new = json.loads(out.stdout.strip().splitlines()[-1])
    late = sorted({m for m in new if m.split(".")[0] not in sys.stdlib_module_names})
    assert not late, f"imported inside the timed run (declare them in register_solver(imports=...)): {late}"
