"""The scenario ladder of an SAA method: default ``random`` at S = 1000 ... 20,000 scenarios.

Run: ``python -m deplbench.benchmarks.perf.saa_scale [--mode per_run] [--seed 0]
[--scenarios 1000,2000,5000,10000,20000] [--time-limit 300] [--method milp-highs-direct]
[--plain-up-to S]``.

``--plain-up-to S`` also solves the rungs up to S scenarios with the plain formulation
(``bigm=worst fixing=off cuts=none``: none of the count-vector strengthening, block sequences,
live screening or cap), an independent check of the optima where it finishes.

One line per S, each solve in this process through ``deplbench.registry.solve`` (so the plan is
certified on the sample by the evaluator): status, objective, the method's runtime, the whole
call's wall time, the preparation (sampling, strengthening, cut separation, start plans), the
model's build and the solver's time, the model size.
Its figures are in ``docs/formulations.md`` ("The scenario ladder").
"""

from __future__ import annotations

import argparse
import time

from deplbench.registry import generate, solve
from deplbench.results import Status

PLAIN = {"bigm": "worst", "fixing": "off", "cuts": "none"}


def rung(mode: str, seed: int, scenarios: int, time_limit: float, method: str,
         params: dict | None = None) -> tuple[str, object]:
    """One solve of the ladder: (its line, its result)."""
    inst = generate("random", {"noise_mode": mode}, seed)
    t0 = time.perf_counter()
    r = solve(method, inst, {"scenarios": scenarios, "time_limit": time_limit, **(params or {})})
    wall = time.perf_counter() - t0
    ex = r.extra
    label = method + ("[plain]" if params else "")
    return (f"{mode:<9} S={scenarios:<6} {label}: {str(r.status):<8} objective {r.objective}  runtime "
            f"{r.runtime_s:.1f} s  wall {wall:.1f} s  prep {ex.get('prep_s', float('nan')):.1f} s  "
            f"build {r.build_s or 0.0:.1f} s  solve {r.solve_s or 0.0:.1f} s  "
            f"vars {ex.get('n_vars')}  rows {ex.get('n_cons')}"), r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="per_run", choices=["per_run", "per_epoch"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenarios", default="1000,2000,5000,10000,20000")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--method", default="milp-highs-direct")
    ap.add_argument("--plain-up-to", type=int, default=0,
                    help="also solve the rungs up to this S with the plain formulation (an independent check)")
    args = ap.parse_args()
    for s in (int(x) for x in args.scenarios.split(",")):
        line, r = rung(args.mode, args.seed, s, args.time_limit, args.method)
        print(line, flush=True)
        if s <= args.plain_up_to:
            line, p = rung(args.mode, args.seed, s, args.time_limit, args.method, PLAIN)
            both = r.status == p.status == Status.OPTIMAL
            agree = both and abs(r.objective - p.objective) <= 1e-6 * max(1.0, abs(p.objective))
            print(line + ("  -> same optimum" if agree else "  -> DIFFERENT optimum" if both else ""), flush=True)


if __name__ == "__main__":
    main()
