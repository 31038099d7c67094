"""One registry of methods and instance families, shared by the CLI, the harness and the tests.

Methods are listed here by name with the module that implements them (a solver map,
as in cvxpy): importing a heavy backend (Pyomo, OR-Tools) happens only when that
method is used. The implementing module decorates its entry point with
:func:`register_solver` (or :func:`register_family`), which records the defaults.

Every method takes an :class:`~deplbench.instances.Instance` and keyword parameters
and returns a :class:`~deplbench.results.SolveResult`. :func:`solve` is the one way
to call a method: it coerces parameters, imports what the method declares it needs (before the
clock: ``runtime_s`` holds no one-off import), times the call, turns exceptions into
``error`` results and re-checks every returned plan with the evaluator, so a plan's
feasibility is never taken on the solver's word: an ``optimal`` or ``feasible`` claim whose plan
the evaluator (for ``saa`` methods, the sample) rejects becomes ``error``. Optimality itself is the
method's own proof (``exact`` and ``bruteforce`` claim it only with one: docs/exact.md; an SAA
method's ``optimal`` holds for its sample, within its ``mip_gap``, and its ``bound`` is the
solver's dual bound).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deplbench.certify import check_result
from deplbench.errors import InputError
from deplbench.incumbent import Best, is_interrupt, listening, offer
from deplbench.loading import Entry, import_module, importable, prepare  # noqa: F401 - Entry, importable: re-exported
from deplbench.loading import function_or_entry as _func
from deplbench.params import Param, declare, parse, variant_label
from deplbench.results import SolveResult, Status

#: name -> module implementing it. Keep sorted by kind; the module registers details.
SOLVER_MODULES: dict[str, str] = {
    "exact": "deplbench.formulations.exact.methods",
    "bruteforce": "deplbench.formulations.exact.methods",
    "milp-highs": "deplbench.formulations.backends.milp_highs",
    "milp-highs-direct": "deplbench.formulations.backends.milp_highs_direct",
    "milp-cpsat": "deplbench.formulations.backends.milp_cpsat",
    "milp-scip": "deplbench.formulations.backends.milp_scip",
    "milp-scip-bc": "deplbench.formulations.backends.milp_scip_bc",
    "mps": "deplbench.formulations.backends.mps",
    "depl": "deplbench.heuristics.depl",
    "depl-plus": "deplbench.heuristics.depl_plus",
    "best-exp": "deplbench.heuristics.best_exp",
}

#: family name -> module implementing its generator.
FAMILY_MODULES: dict[str, str] = {
    "paper-alexnet": "deplbench.instances.families.paper",
    "paper-mobilenet": "deplbench.instances.families.paper",
    "random": "deplbench.instances.families.random",
    "knapsack": "deplbench.formulations.knapsack",
    "calibrated": "deplbench.instances.families.calibrated",
    "rounding": "deplbench.instances.families.studies",
    "horizon": "deplbench.instances.families.studies",
    "datasets": "deplbench.instances.families.studies",
    "noisy-epoch": "deplbench.instances.families.studies",
    "quantile": "deplbench.instances.families.studies",
    "library": "deplbench.benchmarks.library.family",
}

#: Parameters every method accepts (a method may ignore one it has no use for); none names a variant.
COMMON_PARAMS: tuple[Param, ...] = (
    Param("time_limit", float, 60.0, "wall-clock limit of the method (s)", low=0.0, high=1e6, low_open=True,
          variant=False),
    Param("seed", int, 0, "random seed (SAA samples, randomised searches)", low=0, high=2**32 - 1,
          variant=False),
    Param("threads", int, 1, "threads the method may use", low=1, high=256, variant=False),
)
COMMON_DEFAULTS: dict[str, Any] = {p.name: p.default for p in COMMON_PARAMS}

#: kinds of method: how :func:`solve` re-checks their claims.
#: ``exact``: optimal for the true problem (certified quantile), like ``bruteforce``;
#: ``saa``: optimal for a sampled problem, re-checked on the same sample;
#: ``heuristic``: feasible plans are certified by the evaluator.
KINDS = ("exact", "saa", "heuristic")


@dataclass(frozen=True)
class _Spec:
    """What a method and a family share: a name, the function, declared parameters, test parameters."""

    name: str
    func: Callable[..., Any]
    params: dict[str, Param]
    description: str = ""
    #: small parameters for the conformance checks (tests/e2e/test_conformance.py enrols every entry)
    test_params: dict[str, Any] = field(default_factory=dict)

    @property
    def defaults(self) -> dict[str, Any]:
        return {k: p.default for k, p in self.params.items()}

    def parse_params(self, raw: Mapping[str, Any] | None = None, source: str | None = "--set",
                     at: str | None = None) -> dict[str, Any]:
        """Defaults updated by ``raw``, coerced and range-checked (the one validation)."""
        return parse(self.params, raw, f"{self.what} '{self.name}'", source, at)

    def label(self, params: Mapping[str, Any]) -> str:
        """``name[k=v,...]`` over the variant parameters that differ from their default."""
        return variant_label(self.name, params, self.params)

    def listing(self) -> list[str]:
        """Lines for ``deplbench solvers`` / ``families``: the entry, then one line per parameter."""
        return [f"{self.name:<18} {self.description}"] + [
            f"    {p.describe()}" + ("" if p.variant else "  [not a variant]") for p in self.params.values()]


@dataclass(frozen=True)
class SolverSpec(_Spec):
    kind: str = "heuristic"
    #: numeric outputs the method reports in ``extra`` (name -> doc): the store's ``x_<name>`` columns
    outputs: dict[str, str] = field(default_factory=dict)
    #: families whose test instance the method legitimately refuses (family -> why); on any other
    #: family an ``error`` at the method's ``test_params`` fails every conformance check
    refuses: dict[str, str] = field(default_factory=dict)
    #: modules the method imports when it runs (its implementation's libraries): :func:`solve`
    #: imports them before its clock starts, so ``runtime_s`` holds no one-off import
    imports: tuple[str, ...] = ()
    #: an SAA MILP backend's per-selection solve (``formulations.saa.contract.BackendSolve``), else None
    backend: Callable[..., Any] | None = None
    what = "solver"

    def listing(self) -> list[str]:
        head, *rest = super().listing()
        return [f"{self.name:<18} {self.kind:<9} {self.description}", *rest,
                *(f"    output x_{k}: {doc}" for k, doc in self.outputs.items())]


@dataclass(frozen=True)
class FamilySpec(_Spec):
    #: free-form facts the report groups by (e.g. ``{"network": "alexnet"}`` for a paper family)
    tags: dict[str, Any] = field(default_factory=dict)
    what = "family"


_SOLVERS: dict[str, SolverSpec] = {}
_FAMILIES: dict[str, FamilySpec] = {}


def _first_doc_line(func) -> str:
    return " ".join((func.__doc__ or "").strip().splitlines()[0:1])


def register_solver(name: str, *, kind: str, params: Sequence[Param] = (), defaults: Mapping[str, Any] | None = None,
                    description: str = "", test_params: Mapping[str, Any] | None = None,
                    outputs: Mapping[str, str] | None = None, entry: str | None = None,
                    refuses: Mapping[str, str] | None = None, imports: Sequence[str] = (),
                    backend: Callable[..., Any] | None = None):
    """Register ``func(instance, **params) -> SolveResult`` under ``name``.

    A decorator; or, with ``entry="module:function"``, a declaration that registers at once and
    imports the implementation on the first call (:class:`Entry`; give ``description`` then).

    Parameters
    ----------
    params : sequence of Param
        The method's own parameters (``time_limit``, ``seed`` and ``threads`` are common).
    defaults : mapping, optional
        Older form: bare defaults, declared with their type and no range.
    test_params : mapping, optional
        Small parameters for the generated conformance checks.
    outputs : mapping, optional
        Numeric outputs reported in ``extra`` with a one-line doc each.
    entry : str, optional
        ``"module:function"`` of the implementation (no decorator then).
    refuses : mapping, optional
        Families whose test instance the method refuses by design (family -> why).
    imports : sequence of str, optional
        Modules the method imports when it runs; imported before its clock starts (a generated
        conformance check finds any it leaves out).
    backend : callable, optional
        An SAA MILP backend's ``solve_subset`` (``kind="saa"``): lists the method in
        :func:`backend_names` and enrols it in the backend tests (docs/extending.md).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    if backend is not None and kind != "saa":
        raise ValueError("only an saa method has a backend")

    def deco(func=None):
        func = _func(func, entry)
        declared = declare(params, defaults, COMMON_PARAMS)
        _SOLVERS[name] = SolverSpec(name, func, declared, description or _first_doc_line(func),
                                    dict(test_params or {}), kind, dict(outputs or {}), dict(refuses or {}),
                                    tuple(imports), backend)
        return func

    return deco() if entry is not None else deco


def register_family(name: str, *, params: Sequence[Param] = (), defaults: Mapping[str, Any] | None = None,
                    description: str = "", test_params: Mapping[str, Any] | None = None,
                    tags: Mapping[str, Any] | None = None, entry: str | None = None):
    """Register ``func(seed: int, **params) -> Instance`` as an instance family.

    A decorator; or a declaration with ``entry="module:function"``, as :func:`register_solver`.
    """

    def deco(func=None):
        func = _func(func, entry)
        declared = declare(params, defaults)
        _FAMILIES[name] = FamilySpec(name, func, declared, description or _first_doc_line(func),
                                     dict(test_params or {}), dict(tags or {}))
        return func

    return deco() if entry is not None else deco


def _load(name: str, modules: Mapping[str, str], table: dict, what: str):
    if name not in modules and name not in table:
        raise InputError(f"unknown {what} '{name}' (known: {', '.join(sorted(modules))})")
    if name not in table:
        import_module(modules[name])
    if name not in table:  # the module exists but did not register the name: a bug, not input
        raise RuntimeError(f"module {modules[name]} does not register {what} '{name}'")
    return table[name]


def get_solver(name: str) -> SolverSpec:
    """The registered method ``name`` (imports its module on first use)."""
    return _load(name, SOLVER_MODULES, _SOLVERS, "solver")


def get_family(name: str) -> FamilySpec:
    """The registered instance family ``name``."""
    return _load(name, FAMILY_MODULES, _FAMILIES, "family")


def solver_names(kind: str | None = None) -> list[str]:
    """Names of the registered methods, optionally of one ``kind``."""
    names = list(SOLVER_MODULES)
    if kind is not None:
        names = [n for n in names if get_solver(n).kind == kind]
    return names


def backend_names() -> list[str]:
    """Names of the SAA MILP backends: the methods registered with a ``backend``."""
    return [n for n in solver_names("saa") if get_solver(n).backend is not None]


def family_names() -> list[str]:
    """Names of the registered instance families."""
    return list(FAMILY_MODULES)


def generate(family: str, params: Mapping[str, Any] | None = None, seed: int = 0):
    """Generate one instance of ``family`` with ``params`` (strings are coerced)."""
    spec = get_family(family)
    return spec.func(seed=seed, **spec.parse_params(params))


def solve(name: str, instance, params: Mapping[str, Any] | None = None, *, check: bool = True,
          deadline: float | None = None) -> SolveResult:
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
    deadline : float, optional
        A ``time.perf_counter()`` value (shared by forked children) by which the method must
        end: its ``time_limit`` is cut to what remains (the result records the given one).

    Returns
    -------
    SolveResult
        With ``runtime_s`` (the call, after the declared ``imports``), ``solver``, ``params`` and
        (``check``) ``evaluation`` set;
        the plan carries the same informational fields.
    """
    spec = get_solver(name)
    p = spec.parse_params(params)
    if (stopped := _prepare(spec)) is not None:
        return finish(name, instance, p, stopped, 0.0, check=check)
    t0 = time.perf_counter()
    cut = p if deadline is None else {**p, "time_limit": max(min(p["time_limit"], deadline - t0), 1e-3)}  # > 0
    return finish(name, instance, p, _call(spec, instance, cut), time.perf_counter() - t0, check=check)


def finish(name: str, instance, p: dict, res: SolveResult, runtime: float, *, check: bool = True) -> SolveResult:
    """Annotate a method's raw result and (``check``) certify it, as :func:`solve` does.

    Also used by ``deplbench solve`` for an incumbent read back from a checkpoint file after
    the method's process was killed. ``p``: the parsed parameters.
    """
    spec = get_solver(name)
    res = res.replace(runtime_s=runtime, solver=name, params=p)
    if res.plan is not None:
        res = res.replace(plan=res.plan.annotate(instance=instance.name, solver=name, params=p,
                                                 status=res.status.value, objective=res.objective,
                                                 bound=res.bound, gap=res.gap, runtime_s=runtime,
                                                 **problem_of(spec, p)))
    if check:
        res = check_result(spec.kind, instance, p, res)
        if res.plan is not None and res.evaluation is not None:
            verdict = "feasible" if res.evaluation.feasible else "infeasible"
            res = res.replace(plan=res.plan.annotate(status=res.status.value, certified=verdict, bound=res.bound,
                                                     gap=res.gap))
            if res.evaluation.feasible and res.has_solution and spec.kind != "saa":
                offer(res.plan, res.evaluation.cost, res.bound, source=name)  # a caller's incumbent
    return res


def _import_declared(spec: SolverSpec) -> None:
    """Import what the method declares (and resolve an ``entry``); a failure is left to the run, which
    meets it again and reports it with the method's traceback; a Ctrl-C is raised."""
    try:
        prepare(spec.func, spec.imports)
    except Exception:  # noqa: BLE001, S110 - reported by the run itself
        pass


def _prepare(spec: SolverSpec) -> SolveResult | None:
    """Import what the method declares, before its clock starts (one-off imports are not its time).

    A failed import becomes the run's ``error`` result; a Ctrl-C here is ``interrupted`` (or raised
    to an enclosing :func:`solve`), as inside the run.
    """
    try:
        _import_declared(spec)
    except KeyboardInterrupt:
        if _DEPTH[0] > 0:
            raise
        return SolveResult(Status.INTERRUPTED, message="interrupted")
    return None


def load_declared(name: str) -> None:
    """Import method ``name`` and what it declares, as :func:`solve` does before its clock; a watched
    child calls it before its memory limit (:func:`deplbench.watch.call`). A Ctrl-C is raised."""
    try:
        spec = get_solver(name)
    except Exception:  # noqa: BLE001 - an unknown or broken method is reported by the run itself
        return
    _import_declared(spec)


_DEPTH = [0]  # nesting of :func:`solve` calls (``exact`` calls ``depl-plus``): the outermost owns a Ctrl-C


def _call(spec: SolverSpec, instance, p: dict) -> SolveResult:
    """``spec.func(instance, **p)`` as a result: a crash is ``error``; a stop keeps the best offer.

    A ``KeyboardInterrupt`` (Ctrl-C; ``deplbench solve`` turns SIGTERM into one) reaching the
    outermost call becomes an ``interrupted`` result with the best plan the method offered
    (:mod:`deplbench.incumbent`): ``db.solve`` *returns* the incumbent, it does not raise. A
    ``MemoryError`` becomes ``memout`` likewise; a ``timeout``, ``memout`` or ``interrupted`` result
    without a plan gets the best offer (an SAA backend's start plan, a heuristic's certified plan).
    """
    best = Best()
    _DEPTH[0] += 1
    try:
        with listening(best):
            res = spec.func(instance, **p)
    except InputError:
        raise
    except MemoryError:
        res = SolveResult(Status.MEMOUT, message="MemoryError")
    except (KeyboardInterrupt, Exception) as exc:  # a crash of one method is a result, not a crash of the caller
        if not is_interrupt(exc):
            res = SolveResult(Status.ERROR, message=f"{type(exc).__name__}: {exc}",
                              extra={"traceback": traceback.format_exc(limit=8)})
        elif _DEPTH[0] > 1:  # the outermost call returns the incumbent
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise KeyboardInterrupt from exc  # one raised inside a compiled call (is_interrupt)
        else:
            res = SolveResult(Status.INTERRUPTED, message="interrupted")
    finally:
        _DEPTH[0] -= 1
    if res.status.stopped and (res.plan is None or not res.plan.segments) and best.best is not None:
        b = best.best
        why = f"{res.message}; " if res.message else ""
        bound = res.bound if res.bound is not None else b.bound
        gap = None if bound is None else max(0.0, (b.objective - bound) / max(abs(b.objective), 1e-9))
        res = res.replace(plan=b.plan, objective=b.objective, bound=bound, gap=gap,
                          message=f"{why}plan is the incumbent ({b.source or 'offered'})")
    return res


def problem_of(spec: SolverSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """The problem a method's status is proven for (the plan's ``problem`` fields, MODEL.md section 3)."""
    if spec.kind == "saa" and "scenarios" in params:
        return {"problem": "saa", "scenarios": int(params["scenarios"]), "scenario_seed": int(params["seed"])}
    return {"problem": "true"}
