"""Stage 1's dataset choice against the optimum, and the dataset search of ``depl-plus``.

Run: ``python -m deplbench.benchmarks.perf.datasets [--seeds 10] [--noise-mode per_run]``.

Instances: ``random`` with 3 datasets, 2 models, 15 epochs, transfer costs up to 20
and no backward switches (``density=0``: only m0 -> m1 is allowed), seeds 0-9.
For each seed: the ``bruteforce`` optimum and its dataset set; ``depl`` and ``depl-plus``
(stage 1's choice) and ``depl-plus --set datasets=search``: cost / optimum, dataset set,
and sets evaluated. Summary: stage 1's mismatch rate (its choice differs from the
optimum's set) and the cost ratios (mean, max) of each method.
"""

from __future__ import annotations

import argparse
import math
import statistics

from deplbench.registry import generate, solve

PARAMS = {"datasets": 3, "models": 2, "epochs": 15, "transfer": 20.0, "density": 0.0}
METHODS = (("depl", {}), ("depl-plus", {}), ("depl-plus/search", {"datasets": "search"}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--noise-mode", default="per_run")
    args = ap.parse_args(argv)
    params = {**PARAMS, "noise_mode": args.noise_mode}
    print(f"random {params}")
    print(f"{'seed':>4} {'opt':>9} {'opt set':>12} " + " ".join(f"{m:>28}" for m, _ in METHODS))
    ratios: dict[str, list[float]] = {m: [] for m, _ in METHODS}
    mismatch = 0
    for seed in range(args.seeds):
        inst = generate("random", params, seed=seed)
        opt = solve("bruteforce", inst, {"time_limit": 600})
        if not opt.status.has_solution:
            print(f"{seed:>4} bruteforce: {opt.status} {opt.message}")
            continue
        oset = tuple(opt.plan.datasets)
        cells = []
        for label, p in METHODS:
            name = label.split("/")[0]
            r = solve(name, inst, {"eta": 200, "eps": 0.05, **p})
            cost = r.evaluation.cost if r.status.has_solution else math.inf
            ratios[label].append(cost / opt.evaluation.cost)
            if label == "depl":
                mismatch += tuple(r.plan.datasets) != oset if r.plan else 1
            sets = r.extra.get("sets_evaluated", r.extra.get("datasets_tried", 0))
            cells.append(f"{cost / opt.evaluation.cost:.4f} {','.join(r.plan.datasets) if r.plan else '-':>9} "
                         f"n={sets} {r.runtime_s:5.2f}s")
        print(f"{seed:>4} {opt.evaluation.cost:>9.2f} {','.join(oset):>12} " + " ".join(f"{c:>28}" for c in cells),
              flush=True)
    n = len(ratios["depl"])
    print(f"\nstage 1's choice differs from the optimum's dataset set on {mismatch} of {n} seeds")
    for label, rs in ratios.items():
        if rs:
            print(f"  {label:<18} cost / optimum: mean {statistics.fmean(rs):.4f}  max {max(rs):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
