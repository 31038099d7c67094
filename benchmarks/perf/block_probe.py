"""Is an open instance's gap its incumbent's or its bound's? A deeper block scan, certified.

Run: ``python -m deplbench.benchmarks.perf.block_probe INSTANCE.json [--step S] [--time-limit T]``.
``exact`` starts from ``depl-plus`` and a block scan of one- and two-run sequences whose first run
takes every fourth length (``formulations/exact/incumbent.py``). This script repeats that start,
then scans, over every (dataset selection, cluster set) group, the two-run sequences at *every*
split and the three-run sequences ``a -> b -> c`` (allowed switches) whose first two runs take
every ``--step``-th length, with the least certified length of the last run found by bisection
(the evaluator's own decision, as in the block scan). It prints the cheapest certified plan after
each stage, the evaluator decisions and the time. A cheaper plan would lower the instance's
``=best=``; none found says that the gap between ``=best=`` and ``=bestdual=`` lies in the bound
(a heuristic statement: sequences of four runs and more are not scanned).
"""

from __future__ import annotations

import argparse
import time

from deplbench.formulations.exact.exact import _BranchAndBound
from deplbench.formulations.exact.incumbent import BlockScan
from deplbench.instances.evaluator.evaluate import evaluate
from deplbench.instances.io import load_instance


def _three_runs(scan: BlockScan, order: list[int], step: int) -> None:
    s, K = scan.s, scan.K
    for gi in order:
        g = s.groups[gi].g
        for a in range(s.M):
            for b in (b for b in s.seqs.nxt[a] if b != a):
                for c in (c for c in s.seqs.nxt[b] if c != b):
                    for na in range(step, K, step):
                        if scan.out_of_time() or scan.dearer(gi, scan.counts(((a, na),))):
                            break
                        for nb in range(step, K - na, step):
                            if scan.dearer(gi, scan.counts(((a, na), (b, nb)))):
                                break  # more epochs of b cost more still (Lemma 1)
                            nc = scan.least(g, ((a, na), (b, nb)), c, K - na - nb)
                            if nc is not None:
                                scan.offer(gi, ((a, na), (b, nb), (c, nc)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instance")
    ap.add_argument("--step", type=int, default=2, help="lengths of the first two runs of three-run scans")
    ap.add_argument("--time-limit", type=float, default=1800.0)
    args = ap.parse_args(argv)
    inst = load_instance(args.instance)
    t0 = time.perf_counter()
    deadline = t0 + args.time_limit
    search = _BranchAndBound(inst, deadline, max_nodes=1)
    search._incumbent(min(60.0, args.time_limit))
    scan = BlockScan(search, deadline)

    def line(stage: str) -> None:
        cost = f"{search.best[0]:.4f}" if search.best else "none"
        print(f"{stage:<34} cheapest {cost:>12}  decisions {scan.calls:>7}  {time.perf_counter() - t0:7.1f} s",
              flush=True)

    line("depl-plus")
    scan.run()
    line("block scan (exact's start)")
    if search.best is None:
        return 0
    order = sorted(range(len(search.groups)), key=lambda i: -search.groups[i].g)
    scan.two_runs(order, 1)
    line("two runs, every split")
    _three_runs(scan, order, max(args.step, 1))
    line(f"three runs, splits every {args.step}")
    if scan.out_of_time():
        print("time limit reached: the scan is incomplete")
    ev = evaluate(inst, search.best[1])  # the judge, not the scan
    print(f"evaluator: {'feasible' if ev.feasible else 'INFEASIBLE'}, cost {ev.cost:.4f}")
    print(search.best[1])
    return 0 if ev.feasible else 1


if __name__ == "__main__":
    raise SystemExit(main())
