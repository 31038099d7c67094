"""Stage 2's eta on the ``horizon`` family: DepL's cost against eta and against the exact optimum.

Run: ``python -m deplbench.benchmarks.perf.eta [--seeds 5] [--mode per_run] [--exact-limit 120]``.

For each seed: the true optimum from ``exact`` (certified; a gap is printed when it is
not proven within the limit) and, for eta in 25, 50, 100, 200, 400, ``depl``'s certified
cost, its ratio to the optimum, its runtime and stage 2's time, and the model runs of its
plan (model x epochs). Summary: the mean and largest ratio per eta, and how often the
plan switches models (the optimum of this family does). Every ``depl`` solve starts with
the evaluator's memos emptied, so its runtime is that of a fresh process.
"""

from __future__ import annotations

import argparse
import statistics

from deplbench.instances.evaluator import caches
from deplbench.registry import generate, solve

ETAS = (25, 50, 100, 200, 400)


def runs(plan) -> str:
    """The plan's model runs, e.g. ``m0x4 m1x17``."""
    out: list[list] = []
    for m in plan.models():
        if out and out[-1][0] == m:
            out[-1][1] += 1
        else:
            out.append([m, 1])
    return " ".join(f"{m}x{k}" for m, k in out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--mode", default="per_run", choices=("per_run", "per_epoch"))
    ap.add_argument("--method", default="depl")
    ap.add_argument("--exact-limit", type=float, default=120.0)
    args = ap.parse_args(argv)
    ratio: dict[int, list[float]] = {e: [] for e in ETAS}
    switching: dict[int, int] = {e: 0 for e in ETAS}
    for seed in range(args.seeds):
        inst = generate("horizon", {"noise_mode": args.mode}, seed=seed)
        ex = solve("exact", inst, {"time_limit": args.exact_limit})
        if not ex.status.has_solution:
            print(f"{inst.name}: exact {ex.status} ({ex.message}); skipped", flush=True)
            continue
        opt, proven = ex.evaluation.cost, str(ex.status) == "optimal"
        head = f"{inst.name}: optimum {opt:.2f} ({runs(ex.plan)}, {ex.runtime_s:.1f} s)" if proven else \
            f"{inst.name}: exact incumbent {opt:.2f}, gap {ex.extra.get('gap')} (ratios against it)"
        cells = []
        for eta in ETAS:
            caches.clear()  # each runtime as in a fresh process (docs/depl.md, "Measured cold")
            r = solve(args.method, inst, {"eta": eta, "eps": 0.05})
            if not r.status.has_solution:
                cells.append(f"eta {eta:>3}: {r.status}")
                continue
            ratio[eta].append(r.evaluation.cost / opt)
            switching[eta] += len(set(r.plan.models())) > 1
            cells.append(f"eta {eta:>3}: {r.evaluation.cost:9.2f} ratio {r.evaluation.cost / opt:.4f} "
                         f"t {r.runtime_s:.2f}s t2 {r.extra['t_stage2_s']:.2f}s  {runs(r.plan)}")
        print(head + "\n  " + "\n  ".join(cells), flush=True)
    print(f"\n{args.method} cost / optimum per eta (mean, max; plans that switch models):")
    for eta in ETAS:
        if ratio[eta]:
            print(f"  eta {eta:>3}: {statistics.fmean(ratio[eta]):.4f} {max(ratio[eta]):.4f}  "
                  f"switching {switching[eta]}/{len(ratio[eta])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
