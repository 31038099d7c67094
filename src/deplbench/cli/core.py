"""The ``deplbench`` command line.

Core commands live here (validate, evaluate, families, generate, solve, solvers).
Each subpackage can add commands in modules named ``cli_*.py`` that define
``register(subparsers)``; every subparser sets ``func(args) -> int``.

Bad input (an :class:`~deplbench.errors.InputError`, a wrong flag) prints exactly
one line on stderr and exits with status 2; nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import pkgutil
import sys

from deplbench.errors import InputError

SUBPACKAGES = ("deplbench.instances", "deplbench.instances.calibration", "deplbench.formulations", "deplbench.heuristics",
               "deplbench.benchmarks")


class _Parser(argparse.ArgumentParser):
    """argparse that raises InputError (one line, exit 2) instead of printing usage."""

    def error(self, message: str):  # noqa: D102
        raise InputError(message, source=self.prog)


def parse_sets(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``."""
    out: dict[str, str] = {}
    for item in pairs or []:
        if "=" not in item:
            raise InputError(f"expected key=value, got '{item}'", source="--set")
        k, v = item.split("=", 1)
        if not k:
            raise InputError(f"empty key in '{item}'", source="--set")
        out[k.strip()] = v.strip()
    return out


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False, default=str))


# ---- core commands ---------------------------------------------------------------------------

def cmd_validate(args) -> int:
    from deplbench.instances.io import load_any

    load_any(args.file)
    print("ok")
    return 0


def cmd_evaluate(args) -> int:
    from deplbench.instances.evaluate import evaluate
    from deplbench.instances.io import load_instance, load_plan

    inst = load_instance(args.instance)
    plan = load_plan(args.plan, inst)
    if plan.instance is not None and plan.instance != inst.name:
        print(f"warning: {args.plan}: plan is for instance '{plan.instance}', evaluating on '{inst.name}'",
              file=sys.stderr)
    ev = evaluate(inst, plan, samples=args.samples, seed=args.seed)
    if args.json:
        _print_json(ev.to_dict())
        return 0
    lo, hi = ev.quantile_bounds
    rows = [
        ("instance", inst.name),
        ("feasible", "yes" if ev.feasible else "no"),
        ("violations", ", ".join(ev.violations) or "none"),
        ("cost", f"{ev.cost:.6g} (compute {ev.compute_cost:.6g}, transfer {ev.transfer_cost:.6g})"),
        ("time", f"{ev.time:.6g} (budget {inst.time_budget:g})"),
        ("epochs", str(ev.epochs)),
        ("expected loss", f"{ev.loss_mean:.6g}"),
        (f"{inst.loss.quantile:g}-quantile", f"[{lo:.6g}, {hi:.6g}] certified (width {ev.bracket_width:.2g}),"
         f" target {inst.loss.target:g}"),
    ]
    if ev.mc_quantile is not None:
        rows.append(("Monte Carlo", f"{ev.mc_quantile:.6g}, 95% CI [{ev.mc_ci[0]:.6g}, {ev.mc_ci[1]:.6g}]"
                     f" ({ev.mc_samples} samples, seed {ev.mc_seed})"))
    w = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    for d in ev.details:
        print(f"  - {d}")
    return 0


def cmd_families(args) -> int:
    from deplbench.registry import family_names, get_family

    for name in family_names():
        print("\n".join(get_family(name).listing()))
    return 0


def cmd_generate(args) -> int:
    from deplbench.files import check_output_path
    from deplbench.instances.io import save_instance
    from deplbench.registry import generate

    check_output_path(args.out)  # before the work: a long generation never ends in a traceback
    inst = generate(args.family, parse_sets(args.set), seed=args.seed)
    save_instance(inst, args.out)
    print(f"wrote {args.out} ({inst.name})")
    return 0


def cmd_solvers(args) -> int:
    from deplbench.registry import get_solver, solver_names

    for name in solver_names():
        print("\n".join(get_solver(name).listing()))
    return 0


#: seconds past ``--time-limit`` before a method's process group is killed (build, solve, certification)
SOLVE_GRACE_S = 1.5


def _solve_child(name: str, inst, params: dict):
    """In the watched child: the method and its certification; an InputError comes back as a value."""
    from deplbench.registry import solve

    try:
        return solve(name, inst, params)
    except InputError as exc:
        return exc


def cmd_solve(args) -> int:
    import multiprocessing as mp
    import time

    from deplbench.files import check_output_path
    from deplbench.instances.io import load_instance, save_plan
    from deplbench.registry import get_solver
    from deplbench.watch import call

    t0 = time.perf_counter()
    check_output_path(args.out, "--out")
    inst = load_instance(args.instance)
    params = parse_sets(args.set)
    spec = get_solver(args.solver)
    if args.time_limit is not None:
        params["time_limit"] = str(args.time_limit)
    if args.seed is not None:
        params["seed"] = str(args.seed)
    parsed = spec.parse_params(params)  # bad parameters fail before any work
    w = call(mp.get_context("fork"), _solve_child, (args.solver, inst, params),
             wall_limit_s=float(parsed["time_limit"]) + SOLVE_GRACE_S, memory_limit_mb=args.memory_limit, t0=t0)
    if isinstance(w.value, InputError):
        raise w.value
    res = _watched_result(w, spec, parsed)
    save_plan(_plan_of(res, inst, args.solver, spec), args.out)
    print(solve_summary(args.solver, spec.kind, res))
    print(f"wrote {args.out}")
    return 0


def _watched_result(w, spec, params: dict):
    """The method's SolveResult, or a ``timeout`` / ``memout`` / ``error`` one when its process was stopped."""
    from deplbench.results import Outcome, SolveResult, Status

    if w.outcome == Outcome.OK:
        res = w.value
        if res.status == Status.ERROR and "MemoryError" in (res.message or ""):
            res = res.replace(status=Status.MEMOUT)
        return res
    status = {Outcome.TIMEOUT: Status.TIMEOUT, Outcome.MEMORY: Status.MEMOUT}.get(w.outcome, Status.ERROR)
    return SolveResult(status, runtime_s=w.wall_s, solver=spec.name, params=params,
                       message=(w.error or "").splitlines()[0] if w.error else "")


def _plan_of(res, inst, name: str, spec):
    from deplbench.instances.plan import Plan
    from deplbench.registry import problem_of

    plan = res.plan or Plan((), (), inst.name, {"name": name, "params": res.params}, res.status.value, None,
                            res.runtime_s, **problem_of(spec, res.params))
    return plan.annotate(status=res.status.value, objective=res.objective, runtime_s=res.runtime_s)


def solve_summary(name: str, kind: str, res) -> str:
    """The one summary line of ``solve``: the status as proven, and the evaluator's verdict beside it."""
    from deplbench.results import shown_status

    ev = res.evaluation
    status = shown_status(res.status, kind, ev.feasible if ev is not None else None)
    if kind == "saa" and res.status.has_solution:
        p = res.params
        status = (f"{status.split(' ')[0]} for the true problem ({res.status.value} for its "
                  f"{p.get('scenarios')}-scenario sample, seed {p.get('seed')})")
    msg = f"{name}: {status}"
    if ev is not None:
        msg += (f", cost {ev.cost:.6g}, time {ev.time:.6g}, quantile <= {ev.quantile_bounds[1]:.6g}"
                f" ({'feasible' if ev.feasible else 'infeasible: ' + ','.join(ev.violations)})")
    if res.bound is not None:
        msg += f", bound {res.bound:.6g}"
    msg += f", {res.runtime_s:.3g} s"
    if res.message:
        msg += f" [{res.message}]"
    return msg


def build_parser() -> argparse.ArgumentParser:
    from deplbench import __version__

    p = _Parser(prog="deplbench", description="Benchmark suite for dependable distributed training (DepL)")
    p.add_argument("--version", action="version", version=f"deplbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("validate", help="check an instance or plan file")
    s.add_argument("file")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("evaluate", help="cost, time, feasibility and certified loss quantile of a plan")
    s.add_argument("instance")
    s.add_argument("plan")
    s.add_argument("--samples", type=int_in(0, MAX_SAMPLES), default=20_000, help="Monte-Carlo samples (0: none)")
    s.add_argument("--seed", type=_nonneg_int, default=0)
    s.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("families", help="list the instance families")
    s.set_defaults(func=cmd_families)

    s = sub.add_parser("generate", help="generate an instance of a family")
    s.add_argument("family")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="family parameter")
    s.add_argument("--seed", type=_nonneg_int, default=0)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("solvers", help="list the registered methods and their parameters")
    s.set_defaults(func=cmd_solvers)

    s = sub.add_parser("solve", help="run a registered method and write its plan")
    s.add_argument("instance")
    s.add_argument("--solver", required=True)
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="method parameter")
    s.add_argument("--time-limit", type=_pos_float, default=None,
                   help="seconds for the whole call: build, solve and certification")
    s.add_argument("--memory-limit", type=_pos_float, default=None, metavar="MB",
                   help="resident memory of the method's process tree (default: none)")
    s.add_argument("--seed", type=_nonneg_int, default=None)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_solve)

    for pkg_name in SUBPACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("cli_"):
                importlib.import_module(f"{pkg_name}.{info.name}").register(sub)
    return p


def int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum`` (a bad value is one line, exit 2)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"'{text}' must be >= {minimum}")
        return v

    parse.__name__ = f"int >= {minimum}"
    return parse


_nonneg_int = int_at_least(0)
positive_int = int_at_least(1)


def int_in(low: int, high: int):
    """An argparse type: an integer in ``[low, high]`` (a resource cap, docs/reliability.md)."""
    base = int_at_least(low)

    def parse(text: str) -> int:
        v = base(text)
        if v > high:
            raise argparse.ArgumentTypeError(f"'{text}' is over the limit of {high}")
        return v

    parse.__name__ = f"int in [{low}, {high}]"
    return parse


def float_in(low: float, high: float, low_open: bool = False):
    """An argparse type: a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not (math.isfinite(v) and (v > low if low_open else v >= low) and v <= high):
            raise argparse.ArgumentTypeError(f"'{text}' must be a number in {'(' if low_open else '['}{low:g}, {high:g}]")
        return v

    parse.__name__ = "number"
    return parse


#: caps of the core commands' counts (docs/reliability.md)
MAX_SAMPLES = 10_000_000
MAX_SCENARIOS = 100_000


def _pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"'{text}' must be a positive finite number")
    return v


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"deplbench: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except RecursionError:
        print("deplbench: error: input nested too deeply", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.filename is None:
            raise
        print(f"deplbench: error: {InputError(exc.strerror or type(exc).__name__, str(exc.filename)).one_line()}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deplbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
