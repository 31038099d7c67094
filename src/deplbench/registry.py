"""One registry of methods and instance families, shared by the CLI, the harness and the tests.

Methods are listed here by name with the module that implements them (a solver map,
as in cvxpy): importing a heavy backend (Pyomo, OR-Tools) happens only when that
method is used. The implementing module decorates its entry point with
:func:`register_solver` (or :func:`register_family`), which records the defaults.

Every method takes an :class:`~deplbench.instances.Instance` and keyword parameters
and returns a :class:`~deplbench.results.SolveResult`. :func:`solve` is the one way
to call a method: it coerces parameters, times the call, turns exceptions into
``error`` results and re-checks every returned plan with the evaluator, so a
status of ``optimal`` or ``feasible`` is never taken on the solver's word.
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deplbench.errors import InputError
from deplbench.results import SolveResult, Status

#: name -> module implementing it. Keep sorted by kind; the module registers details.
SOLVER_MODULES: dict[str, str] = {
    "bruteforce": "deplbench.formulations.bruteforce",
    "milp-highs": "deplbench.formulations.highs_pyomo",
    "milp-highs-direct": "deplbench.formulations.highs_direct",
    "milp-cpsat": "deplbench.formulations.cpsat",
    "milp-scip": "deplbench.formulations.scip",
    "depl": "deplbench.heuristics.depl",
    "depl-plus": "deplbench.heuristics.depl_plus",
    "best-exp": "deplbench.heuristics.best_exp",
}

#: family name -> module implementing its generator.
FAMILY_MODULES: dict[str, str] = {
    "paper-alexnet": "deplbench.instances.paper",
    "paper-mobilenet": "deplbench.instances.paper",
    "random": "deplbench.instances.random_family",
    "knapsack": "deplbench.formulations.knapsack",
    "calibrated": "deplbench.instances.calibrated",
}

#: Parameters every method accepts (a method may ignore one it has no use for).
COMMON_DEFAULTS: dict[str, Any] = {"time_limit": 60.0, "seed": 0, "threads": 1}

#: kinds of method: how :func:`solve` re-checks their claims.
#: ``exact``: optimal for the true problem (certified quantile), like ``bruteforce``;
#: ``saa``: optimal for a sampled problem, re-checked on the same sample;
#: ``heuristic``: feasible plans are certified by the evaluator.
KINDS = ("exact", "saa", "heuristic")


@dataclass(frozen=True)
class SolverSpec:
    name: str
    func: Callable[..., SolveResult]
    kind: str
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def parse_params(self, raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults updated by ``raw``; strings (from ``--set``) are coerced to the default's type."""
        return _parse_params(self.defaults, raw, what=f"solver '{self.name}'")


@dataclass(frozen=True)
class FamilySpec:
    name: str
    func: Callable[..., Any]
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def parse_params(self, raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return _parse_params(self.defaults, raw, what=f"family '{self.name}'")


_SOLVERS: dict[str, SolverSpec] = {}
_FAMILIES: dict[str, FamilySpec] = {}


def register_solver(name: str, *, kind: str, defaults: Mapping[str, Any] | None = None, description: str = ""):
    """Decorator: register ``func(instance, **params) -> SolveResult`` under ``name``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")

    def deco(func):
        merged = {**COMMON_DEFAULTS, **(defaults or {})}
        doc = description or (func.__doc__ or "").strip().splitlines()[0:1]
        _SOLVERS[name] = SolverSpec(name, func, kind, merged, doc if isinstance(doc, str) else " ".join(doc))
        return func

    return deco


def register_family(name: str, *, defaults: Mapping[str, Any] | None = None, description: str = ""):
    """Decorator: register ``func(seed: int, **params) -> Instance`` as an instance family."""

    def deco(func):
        doc = description or " ".join((func.__doc__ or "").strip().splitlines()[0:1])
        _FAMILIES[name] = FamilySpec(name, func, dict(defaults or {}), doc)
        return func

    return deco


def _load(name: str, modules: Mapping[str, str], table: dict, what: str):
    if name not in modules and name not in table:
        raise InputError(f"unknown {what} '{name}' (known: {', '.join(sorted(modules))})")
    if name not in table:
        importlib.import_module(modules[name])
    if name not in table:  # the module exists but did not register the name: a bug, not input
        raise RuntimeError(f"module {modules[name]} does not register {what} '{name}'")
    return table[name]


def get_solver(name: str) -> SolverSpec:
    """The registered method ``name`` (imports its module on first use)."""
    return _load(name, SOLVER_MODULES, _SOLVERS, "solver")


def get_family(name: str) -> FamilySpec:
    """The registered instance family ``name``."""
    return _load(name, FAMILY_MODULES, _FAMILIES, "family")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def solver_names(kind: str | None = None) -> list[str]:
    """Names of the methods whose modules are present, optionally of one ``kind``."""
    names = [n for n, m in SOLVER_MODULES.items() if _importable(m)]
    if kind is not None:
        names = [n for n in names if get_solver(n).kind == kind]
    return names


def family_names() -> list[str]:
    """Names of the instance families whose modules are present."""
    return [n for n, m in FAMILY_MODULES.items() if _importable(m)]


def generate(family: str, params: Mapping[str, Any] | None = None, seed: int = 0):
    """Generate one instance of ``family`` with ``params`` (strings are coerced)."""
    spec = get_family(family)
    return spec.func(seed=seed, **spec.parse_params(params))


def solve(name: str, instance, params: Mapping[str, Any] | None = None, *, check: bool = True) -> SolveResult:
    """Run method ``name`` on ``instance`` and re-check its plan with the evaluator.

    Parameters
    ----------
    name : str
        A registered method.
    instance : Instance
    params : mapping, optional
        Overrides of the method's defaults; strings are coerced (``--set eta=200``).
    check : bool
        Attach the evaluator's verdict and downgrade an untrue claim to ``error``.

    Returns
    -------
    SolveResult
        With ``runtime_s``, ``solver``, ``params`` and (``check``) ``evaluation`` set;
        the plan carries the same informational fields.
    """
    spec = get_solver(name)
    p = spec.parse_params(params)
    t0 = time.perf_counter()
    try:
        res = spec.func(instance, **p)
    except InputError:
        raise
    except Exception as exc:  # a crash of one method is a result, not a crash of the caller
        res = SolveResult(Status.ERROR, message=f"{type(exc).__name__}: {exc}",
                          extra={"traceback": traceback.format_exc(limit=8)})
    runtime = time.perf_counter() - t0
    res = res.replace(runtime_s=runtime, solver=name, params=p)
    if res.plan is not None:
        res = res.replace(plan=res.plan.annotate(instance=instance.name, solver=name, params=p,
                                                 status=res.status.value, objective=res.objective,
                                                 runtime_s=runtime))
    if check:
        res = _check(spec, instance, p, res)
    return res


def _check(spec: SolverSpec, instance, params: dict, res: SolveResult) -> SolveResult:
    from deplbench.instances.evaluate import HARD_VIOLATIONS, evaluate
    from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios

    if res.plan is None or not res.plan.segments:
        if res.status.has_solution:
            return res.replace(status=Status.ERROR, message=f"claimed {res.status} without a plan")
        return res
    ev = evaluate(instance, res.plan, samples=0)
    res = res.replace(evaluation=ev)
    if not res.status.has_solution:
        return res
    hard = [v for v in ev.violations if v in HARD_VIOLATIONS]
    if hard:
        return res.replace(status=Status.ERROR, message=f"claimed {res.status} but the plan violates {hard}")
    if spec.kind == "saa":
        sc = sample_scenarios(instance, int(params["scenarios"]), int(params["seed"]))
        chk = evaluate_on_scenarios(instance, res.plan, sc)
        if not chk.ok:
            return res.replace(status=Status.ERROR, message=(
                f"claimed {res.status} but violates {chk.n_violated} of {chk.n_scenarios} "
                f"scenarios (allowed {chk.allowed})"))
    elif not ev.feasible:
        return res.replace(status=Status.ERROR,
                           message=f"claimed {res.status} but the evaluator finds {ev.violations}")
    return res


def _coerce(value: Any, default: Any, key: str, what: str) -> Any:
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            out = float(value)
            if out != out or out in (float("inf"), float("-inf")):
                raise ValueError
            return out
    except ValueError:
        raise InputError(f"{what}: {key}={value!r} is not a valid {type(default).__name__}",
                         source="--set") from None
    return value


def _parse_params(defaults: Mapping[str, Any], raw: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    out = dict(defaults)
    for key, value in (raw or {}).items():
        if key not in defaults:
            raise InputError(f"{what} has no parameter '{key}' (known: {', '.join(sorted(defaults)) or 'none'})",
                             source="--set")
        out[key] = _coerce(value, defaults[key], key, what)
    return out
