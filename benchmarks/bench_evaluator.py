"""Evaluator speed and bracket width on 60-epoch plans of the paper instances.

Run: ``python benchmarks/bench_evaluator.py [--repeat N]``. Prints, for each noise mode and
requested relative width, the median time of ``certify`` (the certified bracket alone) and
of ``evaluate(samples=0)``, the achieved width relative to loss.initial, and the bracket.
Target (issue 2): under 10 ms with width under 1e-3 of the initial loss.
"""

from __future__ import annotations

import argparse
import statistics
import time

from deplbench.instances.evaluate import certify, evaluate
from deplbench.instances.paper import load_paper
from deplbench.instances.plan import Plan, Segment

PLANS = {
    "fast-unsteady x60": (Segment("fast-unsteady", "A-class", 1.0, 60),),
    "slow-steady x60": (Segment("slow-steady", "A-class", 1.0, 60),),
    "mixed 20/20/20": (Segment("fast-unsteady", "A-class", 1.0, 20), Segment("intermediate", "A-class", 1.0, 20),
                       Segment("slow-steady", "B-class", 1.0, 20)),
}


def _median_time(fn, repeat: int) -> float:
    fn()  # warm caches (distribution objects)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"{'instance':<28} {'plan':<18} {'rtol':>7} {'certify ms':>10} {'evaluate ms':>11} "
          f"{'width/l0':>9} {'terms':>5}  bracket")
    for mode in ("per_run", "per_epoch"):
        inst = load_paper(f"paper-alexnet-{mode}-t9")
        for label, segs in PLANS.items():
            plan = Plan(("cifar10",), segs)
            for rtol in (1e-3, 5e-4):
                tc = _median_time(lambda i=inst, p=plan, r=rtol: certify(i, p, rtol=r), args.repeat)
                te = _median_time(lambda i=inst, p=plan, r=rtol: evaluate(i, p, samples=0, rtol=r), args.repeat)
                br = certify(inst, plan, rtol=rtol)
                print(f"{inst.name:<28} {label:<18} {rtol:>7.0e} {tc * 1e3:>10.2f} {te * 1e3:>11.2f} "
                      f"{br.width / inst.loss.initial:>9.2e} {br.n_terms:>5}  [{br.lo:.5f}, {br.hi:.5f}]")


if __name__ == "__main__":
    main()
