"""Benchmark of the SAA MILPs on the paper families: build and solve time, out-of-sample violation.

For every paper instance (``per_run`` by default, targets 5..13), scenario count, solver (every
SAA MILP backend of the registry, :func:`~deplbench.registry.backend_names`, by default) and
formulation it prints one row: status, cost, gap, build and solve seconds, nodes, the
out-of-sample violation rate of the plan (fresh Monte-Carlo draws of the loss through
``loss_terms(...).sample``) with its one-sided 95% Clopper-Pearson upper bound, and the
evaluator's certified quantile bracket. A summary compares the Pyomo and direct builds.

Usage::

    python -m deplbench.benchmarks.perf.milp                 # full grid (long)
    python -m deplbench.benchmarks.perf.milp --quick         # one instance, S=200, two solvers
    python -m deplbench.benchmarks.perf.milp --time-limit 30 --scenarios 1000 --solvers milp-scip
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from scipy import stats

from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.families.paper import instance_name, load_paper
from deplbench.instances.semantics import data_effect
from deplbench.registry import backend_names, solve

#: the two builds of the summary's comparison (the same HiGHS, through Pyomo and directly)
PYOMO, DIRECT = "milp-highs", "milp-highs-direct"
#: ``--quick``'s solvers: the direct build and SCIP
QUICK_SOLVERS = (DIRECT, "milp-scip")
FORMULATIONS = ("aggregated", "time_indexed")


def oos_violation(inst, plan, samples: int, seed: int) -> tuple[float, float]:
    """Out-of-sample violation rate of ``plan`` and its one-sided 95% Clopper-Pearson upper bound."""
    terms = loss_terms(inst, plan.models(), data_effect(inst, plan.datasets).g)
    loss = terms.sample(np.random.default_rng([seed, 0xB0B]), samples)
    x = int(np.sum(loss > inst.loss.target))
    upper = 1.0 if x == samples else float(stats.beta.ppf(0.95, x + 1, samples - x))
    return x / samples, upper


def _fmt(v, spec: str) -> str:
    return format("-", ">" + spec.split(".")[0].rstrip("df")) if v is None else format(v, spec)


HEADER = (f"{'instance':<28} {'S':>5} {'solver':<18} {'form':<12} {'status':<9} {'cost':>8} {'gap':>8} "
          f"{'build_s':>8} {'solve_s':>8} {'nodes':>7} {'oos_viol':>8} {'cp_upper':>8} {'q_hi':>7}")


def run_one(inst, S: int, solver: str, form: str, args) -> dict:
    res = solve(solver, inst, {"scenarios": S, "formulation": form, "time_limit": args.time_limit,
                               "mip_gap": args.mip_gap, "threads": args.threads, "seed": args.seed})
    row = {"instance": inst.name, "S": S, "solver": solver, "form": form, "status": res.status.value,
           "cost": res.objective, "gap": res.gap, "build_s": res.build_s, "solve_s": res.solve_s,
           "nodes": res.nodes, "oos": None, "cp": None, "q_hi": None}
    if res.plan is not None and res.plan.segments:
        row["oos"], row["cp"] = oos_violation(inst, res.plan, args.oos_samples, args.seed)
        if res.evaluation is not None:
            row["q_hi"] = res.evaluation.quantile_bounds[1]
    return row


def print_row(r: dict) -> None:
    print(f"{r['instance']:<28} {r['S']:>5} {r['solver']:<18} {r['form']:<12} {r['status']:<9} "
          f"{_fmt(r['cost'], '8.2f')} {_fmt(r['gap'], '8.1e')} {_fmt(r['build_s'], '8.3f')} "
          f"{_fmt(r['solve_s'], '8.2f')} {_fmt(r['nodes'], '7d')} {_fmt(r['oos'], '8.4f')} "
          f"{_fmt(r['cp'], '8.4f')} {_fmt(r['q_hi'], '7.3f')}", flush=True)


def summary(rows: list[dict], time_limit: float) -> None:
    print("\nSummary")
    for S in sorted({r["S"] for r in rows}):
        for form in FORMULATIONS:
            sel = [r for r in rows if r["S"] == S and r["form"] == form]
            d = [r["build_s"] for r in sel if r["solver"] == DIRECT and r["build_s"]]
            p = [r["build_s"] for r in sel if r["solver"] == PYOMO and r["build_s"]]
            if d and p:
                print(f"  S={S} {form}: median build Pyomo {statistics.median(p):.3f} s, direct "
                      f"{statistics.median(d):.3f} s, ratio {statistics.median(p) / statistics.median(d):.1f}x")
        insts = sorted({r["instance"] for r in rows if r["S"] == S and r["form"] == "aggregated"})
        solved = [i for i in insts if any(r["status"] == "optimal" and r["instance"] == i and r["S"] == S
                                          and r["form"] == "aggregated" for r in rows)]
        if insts:
            print(f"  S={S} aggregated: {len(solved)}/{len(insts)} instances optimal within {time_limit:g} s "
                  f"with at least one solver")
        for solver in dict.fromkeys(r["solver"] for r in rows):  # in the order they ran
            sel = [r for r in rows if r["S"] == S and r["solver"] == solver]
            if sel:
                opt = sum(r["status"] == "optimal" for r in sel)
                print(f"  S={S} {solver}: {opt}/{len(sel)} optimal, median solve "
                      f"{statistics.median([r['solve_s'] or 0.0 for r in sel]):.2f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="alexnet t9, S=200, direct and SCIP, aggregated")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)")
    ap.add_argument("--scenarios", default="200,1000", help="comma-separated S values")
    ap.add_argument("--targets", default="5,7,9,11,13")
    ap.add_argument("--networks", default="alexnet,mobilenet")
    ap.add_argument("--noise-mode", default="per_run", choices=["per_run", "per_epoch"])
    ap.add_argument("--solvers", default=None, help="comma-separated backends (default: every one)")
    ap.add_argument("--formulations", default=",".join(FORMULATIONS))
    ap.add_argument("--mip-gap", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--oos-samples", type=int, default=100_000, help="Monte-Carlo draws per plan")
    args = ap.parse_args(argv)
    if args.quick:
        args.scenarios, args.targets, args.networks = "200", "9", "alexnet"
        args.solvers, args.formulations = ",".join(QUICK_SOLVERS), "aggregated"
    known = backend_names()
    solvers = args.solvers.split(",") if args.solvers else known
    if unknown := [s for s in solvers if s not in known]:
        ap.error(f"not an SAA MILP backend: {', '.join(unknown)} (known: {', '.join(known)})")
    Ss = [int(s) for s in args.scenarios.split(",")]
    names = [instance_name(n, args.noise_mode, float(t)) for n in args.networks.split(",")
             for t in args.targets.split(",")]
    print(f"# bench_milp: time limit {args.time_limit:g} s, mip_gap {args.mip_gap:g}, threads {args.threads}, "
          f"seed {args.seed}, {args.oos_samples} out-of-sample draws")
    print(HEADER)
    rows = []
    t0 = time.perf_counter()
    for name in names:
        inst = load_paper(name)
        for S in Ss:
            for form in args.formulations.split(","):
                for solver in solvers:
                    r = run_one(inst, S, solver, form, args)
                    print_row(r)
                    rows.append(r)
    summary(rows, args.time_limit)
    print(f"# total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
