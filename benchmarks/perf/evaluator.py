"""Evaluator speed and bracket width on 60-epoch plans of the paper instances, both noise modes.

Run: ``python -m deplbench.benchmarks.perf.evaluator [--repeat N] [--decisions] [--no-guess] [--clock cpu]
[--compiled]``. Two tables:

1. *Brackets.* For each noise mode, plan and requested width ``rtol`` (1e-3, 5e-4 of the
   initial loss): the median time of the certified bracket with the CDF tables and the term
   lattices cached (``terms``: a search's steady state, where plans of one length share term
   lattices), with the tables only (``warm``: every law of the plan tabulated), from nothing
   (``cold``: the laws read as a fresh process reads them, at the points the lattices need
   until those reach half a table, ``lattice.TABULATE_AFTER``), of the plain construction of the first
   evaluator (``plain``, :mod:`deplbench.instances.evaluator.plain_quantile`), and of
   ``evaluate(samples=0)``; the achieved width relative to loss.initial, the bracket's kind
   (``hist``: histogram terms, :mod:`deplbench.instances.evaluator.smooth`; ``lattice``) and the bracket.
2. *Decisions* (``certify(..., decide=t)``, coarse brackets first) at ``rtol`` 1e-3 for
   targets at a signed distance from the bracket's midpoint (in units of the 1e-3 bracket
   width; ``far`` is the instance's target; ``inside`` needs refinement to rtol / 8), with
   the tables cached, then with the tables and term lattices cached. ``--no-guess`` turns off the
   normal guess that lets ``certify`` skip the ladder's steps near the target (every step tried):
   what the guess saves, at one load.

``--compiled`` imports :mod:`deplbench.instances.evaluator.lattice_jit` first, as the methods
that certify many plans do (DepL's, ``exact``, ``bruteforce``, the SAA methods): the term
lattices, merges' trims and crossings run compiled, to the same bits.
``--clock cpu`` times with the thread's CPU clock instead of the wall clock: on a loaded machine
the wall clock counts the time other processes hold the cores, the CPU clock only this one's work
(still slowed by a shared core's caches).

Target: a per_epoch decision in at most 10 ms at width 1e-3 for a 60-epoch plan.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

from deplbench.instances.evaluator import evaluate as evaluate_module
from deplbench.instances.evaluator import lattice, lattice_batch, quantile
from deplbench.instances.evaluator.evaluate import certify, evaluate
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.plain_quantile import plain_bracket
from deplbench.instances.families.paper import load_paper
from deplbench.instances.plan import Plan, Segment
from deplbench.instances.semantics import data_effect

PLANS = {
    "fast-unsteady x60": (Segment("fast-unsteady", "A-class", 1.0, 60),),
    "slow-steady x60": (Segment("slow-steady", "A-class", 1.0, 60),),
    "mixed 20/20/20": (Segment("fast-unsteady", "A-class", 1.0, 20), Segment("intermediate", "A-class", 1.0, 20),
                       Segment("slow-steady", "B-class", 1.0, 20)),
}
#: target - bracket midpoint, in 1e-3 bracket widths: +-0.75 is just outside the bracket (decided
#: at 1e-3), +0.25 inside it (undecided at 1e-3: refined to rtol/8, reported apart)
OFFSETS = (-8.0, -2.0, -0.75, 0.75, 2.0, 8.0)
INSIDE = 0.25
#: the clock of every timing (``--clock``): wall (``time.perf_counter``) or CPU (``time.thread_time``)
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
_CLOCK = [time.perf_counter]


def _clear(keep: str) -> None:
    """Empty the memo caches but those ``keep`` names: "tables", "terms" (tables and term lattices), "none"."""
    if keep == "none":
        lattice.clear_tables()
    if keep != "terms":
        lattice_batch.clear()
    quantile._cached_bracket.cache_clear()
    quantile._cached_lattice.cache_clear()


def _median_ms(fn, repeat: int, keep: str = "tables") -> float:
    _clear("none")
    after, lattice.TABULATE_AFTER = lattice.TABULATE_AFTER, 0.0
    try:
        fn()  # warm the laws' tables (every law tabulated at its first read) and distribution objects
    finally:
        lattice.TABULATE_AFTER = after
    times = []
    for _ in range(repeat):
        _clear(keep)
        clock = _CLOCK[0]
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return 1e3 * statistics.median(times)


def kind(br) -> str:
    """``hist`` for a bracket with histogram terms, ``lattice`` otherwise."""
    return "hist" if getattr(br, "kolmogorov", 0.0) > 0 else "lattice"


def brackets(repeat: int) -> None:
    print(f"{'instance':<28} {'plan':<18} {'rtol':>6} {'terms ms':>8} {'warm ms':>8} {'cold ms':>8} {'plain ms':>8} "
          f"{'eval ms':>8} {'width/l0':>9} {'terms':>5} {'kind':>7}  bracket")
    for mode in ("per_run", "per_epoch"):
        inst = load_paper(f"paper-alexnet-{mode}-t9")
        for label, segs in PLANS.items():
            plan = Plan(("cifar10",), segs)
            terms = loss_terms(inst, plan.models(), data_effect(inst, plan.datasets).g)
            for rtol in (1e-3, 5e-4):
                w = rtol * inst.loss.initial
                q = inst.loss.quantile
                fn = lambda t=terms, w=w, q=q: quantile.quantile_bracket(t, q, w)  # noqa: E731
                shared = _median_ms(fn, repeat, "terms")
                warm = _median_ms(fn, repeat, "tables")
                cold = _median_ms(fn, repeat, "none")
                plain = _median_ms(lambda t=terms, w=w, q=q: plain_bracket(t, q, w), repeat)
                ev = _median_ms(lambda i=inst, p=plan, r=rtol: evaluate(i, p, samples=0, rtol=r), repeat)
                br = certify(inst, plan, rtol=rtol)
                print(f"{inst.name:<28} {label:<18} {rtol:>6.0e} {shared:>8.2f} {warm:>8.2f} {cold:>8.2f} {plain:>8.2f} "
                      f"{ev:>8.2f} {br.width / inst.loss.initial:>9.2e} {br.n_terms:>5} {kind(br):>7}  "
                      f"[{br.lo:.5f}, {br.hi:.5f}]")


def decisions(repeat: int, keep: str) -> None:
    rtol = 1e-3
    what = {"tables": "CDF tables cached", "terms": "tables and term lattices cached (a search's steady state)"}
    print(f"\nper_epoch decisions certify(decide=t) at rtol {rtol:g}, {what[keep]} (ms; t - mid in 1e-3 widths)")
    print(f"{'plan':<18} {'far':>8}" + "".join(f"{o:>+8g}" for o in OFFSETS) + f"{'max':>8}"
          f"{'inside':>9}")
    inst = load_paper("paper-alexnet-per_epoch-t9")
    worst = 0.0
    for label, segs in PLANS.items():
        plan = Plan(("cifar10",), segs)
        terms = loss_terms(inst, plan.models(), data_effect(inst, plan.datasets).g)
        br = certify(inst, plan, rtol=rtol, terms=terms)
        mid = 0.5 * (br.lo + br.hi)
        targets = [inst.loss.target] + [mid + o * br.width for o in OFFSETS]
        targets.append(mid + INSIDE * br.width)
        ms = [_median_ms(lambda t=t, p=plan, x=terms: certify(inst, p, rtol, decide=t, terms=x), repeat, keep)
              for t in targets]
        ms, inside = ms[:-1], ms[-1]
        worst = max(worst, max(ms))
        print(f"{label:<18}" + "".join(f"{m:>8.2f}" for m in ms) + f"{max(ms):>8.2f}{inside:>9.2f}")
    print(f"slowest per_epoch decision decided at width 1e-3: {worst:.2f} ms (target <= 10 ms)")


def decisions_only(repeat: int) -> None:
    """The two decision tables alone (``--decisions``: a before/after comparison at one load)."""
    decisions(repeat, "tables")
    decisions(repeat, "terms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--decisions", action="store_true", help="only the decision tables")
    ap.add_argument("--no-guess", action="store_true", help="certify tries every ladder step (no normal guess)")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="wall clock (default) or thread CPU time")
    ap.add_argument("--compiled", action="store_true", help="the compiled twin (lattice_jit) loaded, as in a search")
    args = ap.parse_args()
    _CLOCK[0] = CLOCKS[args.clock]
    if args.compiled:
        import deplbench.instances.evaluator.lattice_jit  # noqa: F401  (numba's cache read before any timing)
    if args.no_guess:
        evaluate_module.normal_guess = lambda terms, omega: math.nan
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{args.clock} clock, {'compiled' if args.compiled else 'numpy'} term lattices")
    if not args.decisions:
        brackets(args.repeat)
    decisions_only(args.repeat)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
