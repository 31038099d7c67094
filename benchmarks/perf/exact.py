"""``exact`` on the ``random`` family: status, optimum or certified gap, time and search figures.

Run: ``python -m deplbench.benchmarks.perf.exact [--tier default|large|both|sweep|combo|m5e40|next]
[--seeds N] [--first-seed K] [--time-limit S] [--large-time-limit S] [--modes per_run,per_epoch]
[--set KEY=VALUE ...]`` (``--set``: parameters of ``exact``, e.g. ``cover=false`` or ``max_work=60000``,
checked against its declaration). The ``work`` column is the run's deterministic work (units of about 1 ms
of the reference machine, ``formulations/exact/work.py``): with ``--set max_work=W`` the same stop on any
machine and load.
Prints one Markdown row per instance:

* tier ``default``: the family's default size (3 models, 20 epochs, 2 clusters, 5 levels,
  1 dataset, density 0.5), seeds 0-9, both noise modes, 60 s each;
* tier ``large``: ``models=5, epochs=60, clusters=4, levels=10, datasets=3``, seeds 0-4,
  both noise modes, 300 s each;
* tier ``sweep``: sizes between the two, one axis at a time from the default size (epochs 30,
  40, 60; models 4, 5; datasets 2, 3; clusters x levels 4 x 10), seeds 0-1 (``--seeds``),
  both noise modes, ``--time-limit`` (60 s) each; the tier column names the changed axis;
* tier ``combo``: several axes at once (models 5 with epochs 40 or 60; models 4, epochs 60,
  datasets 3; the larger tier with 40 epochs), seeds 0-1, both modes, 60 s each;
* tier ``m5e40``: the combination tier of the speed goal (``docs/exact.md``), ``models=5, epochs=40``, seeds 0-9, both modes,
  ``--time-limit`` (60 s) each;
* tier ``next``: one step beyond the larger tier, ``models=6, epochs=60, clusters=4, levels=10,
  datasets=3``, seeds 0-4, both modes, ``--large-time-limit`` (300 s) each.

The cost of the ``depl-plus`` incumbent is shown beside the optimum (``exact`` starts from it),
and the block scan's cost when it improved on it (``-`` otherwise). Each row starts with the
evaluator's memos empty and a garbage collection (outside its time), as in a process of its own.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

from deplbench.cli.args import parse_sets
from deplbench.errors import InputError
from deplbench.instances.evaluator import caches
from deplbench.registry import generate, get_solver, solve

LARGE = {"models": 5, "epochs": 60, "clusters": 4, "levels": 10, "datasets": 3}
M5E40 = {"models": 5, "epochs": 40}
NEXT = {"models": 6, "epochs": 60, "clusters": 4, "levels": 10, "datasets": 3}
SWEEP = ({"epochs": 30}, {"epochs": 40}, {"epochs": 60}, {"models": 4}, {"models": 5}, {"datasets": 2},
         {"datasets": 3}, {"clusters": 4, "levels": 10})
COMBO = ({"models": 5, "epochs": 40}, {"models": 5, "epochs": 60}, {"models": 4, "epochs": 60, "datasets": 3},
         {"models": 5, "epochs": 40, "clusters": 4, "levels": 10, "datasets": 3})
COLUMNS = ("nodes", "count_vectors", "pruned_bound", "pruned_dominance", "pruned_quantile", "pruned_region",
           "brackets", "certified", "cover_brackets", "root_bound", "peak_mem_mb", "work")


def _row(tier: str, mode: str, seed: int, params: dict, limit: float, sets: dict | None = None) -> str:
    inst = generate("random", {**params, "noise_mode": mode}, seed=seed)
    # each row as in a process of its own: no memo or garbage of the rows before it (a long proof
    # ran 2-3 % slower after another one in the same process), outside the timed call
    caches.clear()
    gc.collect()
    t0 = time.perf_counter()
    res = solve("exact", inst, {"time_limit": limit, **(sets or {})})
    dt = time.perf_counter() - t0
    x = res.extra
    cost = f"{res.evaluation.cost:.4f}" if res.evaluation is not None else "-"
    bound = f"{res.bound:.4f}" if res.bound is not None else "-"
    gap = f"{100 * res.gap:.2f}%" if res.gap is not None else "-"
    inc = f"{x['incumbent_cost']:.4f}" if "incumbent_cost" in x else "-"
    block = f"{x['block_cost']:.4f}" if "block_cost" in x else "-"
    figs = " | ".join(f"{x.get(k, 0):.0f}" for k in COLUMNS)
    return (f"| {tier} | {mode} | {seed} | {res.status.value} | {cost} | {bound} | {gap} | {inc} | {block} | "
            f"{dt:.1f} | {figs} |")


def _check_seeds(first: int, end: int | None) -> None:
    """Refuse a seed range that runs nothing (``--seeds`` is the end of the range, not a count)."""
    if first < 0:
        raise InputError(f"--first-seed: {first} is negative")
    if end is not None and end <= first:
        raise InputError(f"--seeds: the range {first}..{end - 1} is empty (--seeds is the END of the range: "
                         f"use --seeds {first + 1} --first-seed {first} for seed {first} alone)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=("default", "large", "both", "sweep", "combo", "m5e40", "next"), default="both")
    ap.add_argument("--seeds", type=int, default=None,
                    help="the END of the seed range: seeds FIRST..N-1 (default 10, large tier 5)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the first seed (so --seeds 9 --first-seed 8 runs seed 8 alone)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--large-time-limit", type=float, default=300.0)
    ap.add_argument("--modes", default="per_run,per_epoch")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE", help="a parameter of exact (repeatable)")
    args = ap.parse_args(argv)
    try:  # a bad --set or an empty seed range: one line and exit status 2, before any run
        sets = parse_sets(args.set)
        get_solver("exact").parse_params({"time_limit": args.time_limit, **sets})
        _check_seeds(args.first_seed, args.seeds)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print("| tier | mode | seed | status | cost | bound | gap | depl-plus | block scan | s | "
          + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * (10 + len(COLUMNS)))
    tiers = [("default", {}, 10, args.time_limit), ("large", LARGE, 5, args.large_time_limit),
             ("m5e40", M5E40, 10, args.time_limit), ("next", NEXT, 5, args.large_time_limit)]
    if args.tier in ("sweep", "combo"):
        tiers = [(" ".join(f"{k}={v}" for k, v in p.items()), p, 2, args.time_limit)
                 for p in (SWEEP if args.tier == "sweep" else COMBO)]
    for tier, params, seeds, limit in tiers:
        if args.tier not in (tier, "sweep", "combo") and not (args.tier == "both" and tier in ("default", "large")):
            continue
        for mode in args.modes.split(","):
            for seed in range(args.first_seed, args.seeds if args.seeds is not None else seeds):
                print(_row(tier, mode, seed, params, limit, sets), flush=True)


if __name__ == "__main__":
    main()
