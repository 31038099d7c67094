"""Stage 3's eps on the ``rounding`` family: cost against eps and against the exact allocation.

Run: ``python -m deplbench.benchmarks.perf.eps [--seeds 5] [--eta 100]``.

For each seed and eps in 0.5, 0.2, 0.05, 0.01: ``depl``'s certified cost, its ratio to
``depl`` at eps 0.01, and its stage-3 ratio: the plan's cost over the exact optimum of
the allocation problem for the same datasets and model sequence (a multiple-choice
knapsack solved exactly by ``scipy.optimize.milp``, HiGHS), which the FPTAS bounds by
1 + eps. Summary: the mean ratio per eps (the spread between eps 0.5 and 0.01) and the
largest stage-3 ratio against its bound.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from deplbench.instances.semantics import options
from deplbench.registry import generate, solve

EPSS = (0.5, 0.2, 0.05, 0.01)


def exact_allocation(inst, datasets, models) -> float:
    """Least compute cost of running ``models`` epoch by epoch within the budget (every cluster usable)."""
    opts = options(inst, datasets)
    rows = [inst.model_ids.index(m) for m in models]
    n, k = len(rows), len(opts.cost)
    c = np.tile(opts.cost, n)
    pick = np.kron(np.eye(n), np.ones(k))
    t = np.concatenate([opts.time[r] for r in rows])
    cons = [LinearConstraint(pick, 1, 1), LinearConstraint(t[None, :], -np.inf, inst.time_budget * (1 + 1e-9))]
    res = milp(c, constraints=cons, integrality=np.ones(n * k), bounds=Bounds(0, 1),
               options={"mip_rel_gap": 1e-9})
    return float(res.fun)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--eta", type=int, default=100)
    args = ap.parse_args(argv)
    ratio = {e: [] for e in EPSS}
    s3 = {e: [] for e in EPSS}
    for seed in range(args.seeds):
        inst = generate("rounding", {}, seed=seed)
        costs, cells = {}, []
        for eps in EPSS:
            r = solve("depl", inst, {"eta": args.eta, "eps": eps})
            if not r.status.has_solution:
                cells.append(f"eps {eps}: {r.status}")
                continue
            transfer = r.evaluation.transfer_cost
            exact = exact_allocation(inst, r.plan.datasets, r.plan.models()) + transfer
            costs[eps] = r.evaluation.cost
            s3[eps].append(r.evaluation.cost / exact)
            cells.append(f"eps {eps}: {r.evaluation.cost:9.2f} stage3/exact {r.evaluation.cost / exact:.4f} "
                         f"t3 {r.extra['t_stage3_s']:.2f}s")
        for eps, c in costs.items():
            if 0.01 in costs:
                ratio[eps].append(c / costs[0.01])
        print(f"{inst.name}\n  " + "\n  ".join(cells), flush=True)
    print("\ncost / cost at eps 0.01 (mean, max) and stage-3 cost / exact allocation (max, bound 1 + eps):")
    for eps in EPSS:
        if ratio[eps]:
            print(f"  eps {eps:<5}: {statistics.fmean(ratio[eps]):.4f} {max(ratio[eps]):.4f}   "
                  f"stage 3 max {max(s3[eps]):.4f} <= {1 + eps:.2f}: {max(s3[eps]) <= 1 + eps}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
