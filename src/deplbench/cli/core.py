"""The core commands: ``validate``, ``evaluate``, ``families``, ``generate``, ``solvers``, ``solve``.

May import anything of deplbench, inside the command functions (the parser is built without them).
"""

from __future__ import annotations

import sys

from deplbench.cli.args import (
    MAX_SAMPLES,
    int_in,
    nonneg_int,
    parse_sets,
    pos_float,
)
from deplbench.errors import InputError


def _print_json(obj) -> None:
    from deplbench.jsonvalues import dumps

    print(dumps(obj, indent=2, default=str))


# ---- core commands ---------------------------------------------------------------------------

def cmd_validate(args) -> int:
    from deplbench.instances.io import load_any

    load_any(args.file)
    print("ok")
    return 0


def cmd_evaluate(args) -> int:
    from deplbench.instances.evaluator.evaluate import evaluate
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


#: seconds past ``--time-limit`` before a method's process group is killed: the method's own clock
#: ends before ``--time-limit`` on the command's clock; the grace is for its certification and return
SOLVE_GRACE_S = 1.5
#: share of ``--time-limit`` taken off the method's own limit for its end: a search stopped after an
#: hour unwinds a heap of a gigabyte (``exact`` on the library's 6-model instance at 4500 s ended
#: about a second past its deadline), which a fixed grace does not cover as the limit grows
END_SHARE = 0.001


def cmd_solve(args) -> int:
    import time

    t0 = time.perf_counter()  # the limit counts everything the command does, its imports too
    import multiprocessing as mp

    from deplbench.cli.stopping import (
        checkpoint_path,
        exit_status,
        from_checkpoint,
        solve_child,
        solve_setup,
        stop_on_signals,
    )
    from deplbench.files import check_output_path
    from deplbench.instances.io import load_instance, save_plan
    from deplbench.registry import get_solver
    from deplbench.watch import Stop, call

    check_output_path(args.out, "--out")
    inst = load_instance(args.instance)
    params = parse_sets(args.set)
    spec = get_solver(args.solver)
    if args.time_limit is not None:
        params["time_limit"] = str(args.time_limit)
    if args.seed is not None:
        params["seed"] = str(args.seed)
    parsed = spec.parse_params(params)  # bad parameters fail before any work
    ckpt = checkpoint_path(args.out)
    ckpt.unlink(missing_ok=True)  # an older run's incumbent is not this run's
    with stop_on_signals(Stop()) as stop:  # SIGINT / SIGTERM: the best plan, status interrupted
        limit = float(parsed["time_limit"])
        end = t0 + limit * (1 - END_SHARE)  # the method's deadline; the command's kill is SOLVE_GRACE_S past t0 + limit
        w = call(mp.get_context("fork"), solve_child, (args.solver, inst, params, str(ckpt), end),
                 wall_limit_s=limit + SOLVE_GRACE_S, memory_limit_mb=args.memory_limit,
                 t0=t0, stop=stop, setup=solve_setup)
        if isinstance(w.value, InputError):
            raise w.value
        res = from_checkpoint(_watched_result(w, spec, parsed), ckpt, inst, args.solver, parsed)
        save_plan(_plan_of(res, inst, args.solver, spec), args.out)
    ckpt.unlink(missing_ok=True)
    print(solve_summary(args.solver, spec.kind, res))
    print(f"wrote {args.out}")
    return exit_status(stop)


def _watched_result(w, spec, params: dict):
    """The method's SolveResult, or a ``timeout`` / ``memout`` / ``error`` one when its process was stopped."""
    from deplbench.results import Outcome, SolveResult, Status

    if w.outcome == Outcome.OK:
        res = w.value
        if res.status == Status.ERROR and "MemoryError" in (res.message or ""):
            res = res.replace(status=Status.MEMOUT)
        return res
    status = {Outcome.TIMEOUT: Status.TIMEOUT, Outcome.MEMORY: Status.MEMOUT,
              Outcome.INTERRUPTED: Status.INTERRUPTED}.get(w.outcome, Status.ERROR)
    return SolveResult(status, runtime_s=w.wall_s, solver=spec.name, params=params,
                       message=(w.error or "").splitlines()[0] if w.error else "")


def _plan_of(res, inst, name: str, spec):
    from deplbench.instances.plan import Plan
    from deplbench.registry import problem_of

    plan = res.plan or Plan((), (), inst.name, {"name": name, "params": res.params}, res.status.value, None,
                            res.runtime_s, **problem_of(spec, res.params))
    return plan.annotate(status=res.status.value, objective=res.objective, runtime_s=res.runtime_s,
                         bound=res.bound, gap=res.gap)


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


def register(sub) -> None:
    """Add the core commands: validate, evaluate, families, generate, solvers, solve."""

    s = sub.add_parser("validate", help="check an instance or plan file")
    s.add_argument("file")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("evaluate", help="cost, time, feasibility and certified loss quantile of a plan")
    s.add_argument("instance")
    s.add_argument("plan")
    s.add_argument("--samples", type=int_in(0, MAX_SAMPLES), default=20_000, help="Monte-Carlo samples (0: none)")
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("families", help="list the instance families")
    s.set_defaults(func=cmd_families)

    s = sub.add_parser("generate", help="generate an instance of a family")
    s.add_argument("family")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="family parameter")
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("solvers", help="list the registered methods and their parameters")
    s.set_defaults(func=cmd_solvers)

    s = sub.add_parser("solve", help="run a registered method and write its plan")
    s.add_argument("instance")
    s.add_argument("--solver", required=True)
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="method parameter")
    s.add_argument("--time-limit", type=pos_float, default=None,
                   help="seconds for the whole call: build, solve and certification")
    s.add_argument("--memory-limit", type=pos_float, default=None, metavar="MB",
                   help="resident memory of the method's process tree (default: none)")
    s.add_argument("--seed", type=nonneg_int, default=None)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_solve)
