"""``deplbench saa-bounds``: statistical bounds for an SAA method's plan and the true optimum."""

from __future__ import annotations

import json
import math


def _fmt(v, spec: str = ".6g") -> str:
    return "-" if v is None else format(v, spec)


def cmd_saa_bounds(args) -> int:
    from deplbench.cli import parse_sets
    from deplbench.formulations.saa.bounds import saa_bounds
    from deplbench.instances.io import load_instance

    inst = load_instance(args.instance)
    rep = saa_bounds(inst, args.method, scenarios=args.scenarios, replications=args.replications,
                     confidence=args.confidence, risk=args.risk, lb_scenarios=args.lb_scenarios,
                     eval_samples=args.eval_samples, seed=args.seed,
                     params={"time_limit": args.time_limit, **parse_sets(args.set)})
    if args.json:
        d = rep.to_dict()
        d["replication_values"] = [v if math.isfinite(v) else None for v in d["replication_values"]]
        print(json.dumps(d, indent=2))
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
    from deplbench.cli.args import nonneg_int

    s = subparsers.add_parser("saa-bounds", help="statistical bounds of an SAA method (violation, optimum)")
    s.add_argument("instance")
    s.add_argument("--method", default="milp-highs-direct")
    s.add_argument("--replications", type=nonneg_int, default=10)
    s.add_argument("--scenarios", type=nonneg_int, default=200)
    s.add_argument("--lb-scenarios", type=nonneg_int, default=None,
                   help="scenarios of each replication (default: --scenarios)")
    s.add_argument("--risk", type=float, default=None,
                   help="risk level gamma of the replications (default: 1 - loss.quantile)")
    s.add_argument("--confidence", type=float, default=0.95)
    s.add_argument("--eval-samples", type=nonneg_int, default=100_000)
    s.add_argument("--seed", type=nonneg_int, default=0)
    s.add_argument("--time-limit", type=float, default=60.0)
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="method parameter")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_saa_bounds)
