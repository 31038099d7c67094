"""``deplbench saa-bounds``: statistical bounds for an SAA method's plan and the true optimum.

``--time-limit`` is the whole command's: the solves share it (the SAA plan's solve half of it, the
replications the rest, each re-shared as the earlier ones end), each in a watched child killed at the
end of its share, and the command ends within :data:`SAA_GRACE_S` of the limit (docs/reliability.md).
A killed solve is a ``timeout`` without a plan: a replication then counts -inf (no proof).
"""

from __future__ import annotations

import time

#: seconds past ``--time-limit`` for the evaluation, the certification and the output
SAA_GRACE_S = 2.0
#: the largest ``--replications`` (the other counts: deplbench.cli.args)
MAX_REPLICATIONS = 10_000
#: share of a solve's time a method is told it has (the rest: its build and certification)
METHOD_SHARE = 0.6


def _solve_in_child(name, inst, params, deadline):
    from deplbench.registry import solve

    return solve(name, inst, params, deadline=deadline)


def budgeted(start: float, limit: float, solves: int):
    """A ``solve_fn`` for :func:`saa_bounds`: ``solves`` solves sharing ``limit`` seconds from ``start``."""
    import multiprocessing as mp

    from deplbench.results import Outcome, SolveResult, Status
    from deplbench.watch import call

    left = [solves]

    def run(name, inst, params):
        now = time.perf_counter()
        remaining = max(start + limit - now, 0.0)
        share = remaining / 2 if left[0] == solves and solves > 1 else remaining / max(left[0], 1)
        left[0] -= 1
        w = call(mp.get_context("fork"), _solve_in_child, (name, inst, params, now + METHOD_SHARE * share),
                 wall_limit_s=max(share, 0.05), t0=now)
        if w.outcome == Outcome.OK:
            return w.value
        status = Status.TIMEOUT if w.outcome == Outcome.TIMEOUT else Status.ERROR
        return SolveResult(status, runtime_s=w.wall_s, solver=name, params=params,
                           message=(w.error or "").splitlines()[0] if w.error else "")

    return run


def _fmt(v, spec: str = ".6g") -> str:
    return "-" if v is None else format(v, spec)


def cmd_saa_bounds(args) -> int:
    from deplbench.cli import parse_sets
    from deplbench.formulations.saa.bounds import saa_bounds
    from deplbench.instances.io import load_instance

    start = time.perf_counter()  # the limit counts everything the command does after its start-up
    inst = load_instance(args.instance)
    rep = saa_bounds(inst, args.method, scenarios=args.scenarios, replications=args.replications,
                     confidence=args.confidence, risk=args.risk, lb_scenarios=args.lb_scenarios,
                     eval_samples=args.eval_samples, seed=args.seed,
                     params={"time_limit": args.time_limit, **parse_sets(args.set)},
                     solve_fn=budgeted(start, args.time_limit, 1 + args.replications))
    if args.json:
        from deplbench.jsonvalues import dumps

        print(dumps(rep.to_dict(), indent=2))
        return 0
    exact = rep.violation_exact
    rows = [
        ("instance", rep.instance), ("method", f"{rep.method} (S = {rep.scenarios})"),
        ("SAA plan", f"{rep.status}, cost {_fmt(rep.objective)}"),
        ("violation, independent sample", f"{_fmt(rep.violation_rate)}; {rep.confidence:g} upper bound "
         f"{_fmt(rep.violation_upper)} (allowed eps = {rep.eps:g})"),
        ("violation, exact certification", "-" if exact is None else f"[{exact[0]:.6g}, {exact[1]:.6g}]"),
        ("lower bound on the true optimum", f"{_fmt(rep.lower_bound)} at confidence {rep.confidence:g} "
         f"(rank {_fmt(rep.lb_rank, 'd')} of {rep.replications} replications, N = {rep.lb_scenarios}, "
         f"risk {rep.lb_risk:g}, rho = {rep.rho:.4g})"),
        ("replication values", ", ".join(_fmt(v, ".6g") for v in sorted(rep.replication_values))),
        ("Luedtke-Ahmed sample size", f"N >= {rep.n_feasibility} with risk eps/2, N >= "
         f"{rep.n_feasibility_zero_risk} with risk 0 (ln|X| <= {rep.log_plans:.4g}, delta = "
         f"{1 - rep.confidence:g})"),
    ]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    return 0


def register(subparsers) -> None:
    """Add the ``saa-bounds`` command."""
    from deplbench.cli.args import MAX_SAMPLES, MAX_SCENARIOS, int_in, nonneg_int, pos_float

    s = subparsers.add_parser("saa-bounds", help="statistical bounds of an SAA method (violation, optimum)")
    s.add_argument("instance")
    s.add_argument("--method", default="milp-highs-direct")
    s.add_argument("--replications", type=int_in(0, MAX_REPLICATIONS), default=10)
    s.add_argument("--scenarios", type=int_in(0, MAX_SCENARIOS), default=200)
    s.add_argument("--lb-scenarios", type=int_in(0, MAX_SCENARIOS), default=None,
                   help="scenarios of each replication (default: --scenarios)")
    s.add_argument("--risk", type=float, default=None,
                   help="risk level gamma of the replications (default: 1 - loss.quantile)")
    s.add_argument("--confidence", type=float, default=0.95)
    s.add_argument("--eval-samples", type=int_in(0, MAX_SAMPLES), default=100_000)
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--time-limit", type=pos_float, default=60.0,
                   help="seconds for the whole command, shared by its solves (plus a grace of 2 s)")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="method parameter")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_saa_bounds)
