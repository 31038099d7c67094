"""Speed and outcome of ``bruteforce`` on the 20 paper instances (prints a Markdown table).

Run: ``python -m deplbench.benchmarks.perf.bruteforce [NAME ...] [--time-limit S]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.registry import solve


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="paper instance names (default: all 20)")
    ap.add_argument("--time-limit", type=float, default=120.0)
    args = ap.parse_args(argv)
    print("| instance | status | cost | K | epochs per model | certified q (hi) | sequences | screened |"
          " coarse brackets | certified | allocations | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    total = 0.0
    for name in args.names or canonical_names():
        inst = load_paper(name)
        t0 = time.perf_counter()
        res = solve("bruteforce", inst, {"time_limit": args.time_limit})
        dt = time.perf_counter() - t0
        total += dt
        ev, x = res.evaluation, res.extra
        mix = ", ".join(f"{m} {n}" for m, n in Counter(res.plan.models()).items()) if res.plan else "-"
        print(f"| {name} | {res.status.value} | {ev.cost:g} | {ev.epochs} | {mix} | {ev.quantile_bounds[1]:.4f} "
              if ev else f"| {name} | {res.status.value} | - | - | - | - ", end="")
        print(f"| {x.get('sequences', '-')} | {x.get('screened', '-')} | {x.get('coarse_brackets', '-')} "
              f"| {x.get('certified', '-')} | {x.get('allocations', '-')} | {dt:.2f} |")
    print(f"\ntotal {total:.1f} s")


if __name__ == "__main__":
    main()
