"""DepL and best-exp against the exact optimum on the paper families (both noise modes).

Run: ``python -m deplbench.benchmarks.perf.depl [--only SUBSTRING] [--no-bruteforce]``;
``--speed [-- --rounds N]`` compares the old and the new code path instead (``bench_depl_speed``).

Prints one row per paper instance: the ``bruteforce`` optimum, ``depl`` cost / ratio
to the optimum for eta 25, 50, 100, 200 (eps 0.05) and for eps 0.2, 0.05, 0.01
(eta 200), the ``depl-plus`` variant (eta 200; its other etas in the summary),
``best-exp`` cost and its excess over ``depl`` (eta 200), and runtimes (``runtime_s``: the
method alone, without the evaluator's re-check); then a summary (mean/max ratios, mean runtimes, per_run tightening: the surrogate
target scale that certification ends at, > 1 means tightened) and stage 1's
submodularity violations, and the speed-ups of ``depl`` (eta 200) over ``bruteforce`` on the
paper instances and over ``exact`` on default ``random`` (``--random-seeds``, both modes), as
ratios of geometric means of ``runtime_s`` (aims: 10x and 20x), each solve timed as in a
fresh process (:func:`timed`, after an untimed warm-up of each method). Aims: depl at eta = 200 within 1 % of the optimum and
under 0.5 s per instance. All figures are measured; nothing is tuned to them.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics

import deplbench.heuristics.depl_plus  # noqa: F401 - registers depl-plus
from deplbench.heuristics.datasets.selection import submodularity_report
from deplbench.instances.evaluator import caches
from deplbench.instances.families.paper import canonical_names, load_paper
from deplbench.registry import generate, solve
from deplbench.results import Status

ETAS = (25, 50, 100, 200)
EPSS = (0.2, 0.05, 0.01)


def timed(name: str, inst, params: dict):
    """``solve(name, inst, params)`` as in a fresh process (the evaluator's memos emptied; stage 2's memory
    pool is emptied by every DepL run) with the garbage collector off, as ``timeit`` times: a full collection of the earlier solves' objects (some 40 ms in this process)
    would otherwise fall inside whichever solve triggers it. (A ``gc.collect()`` before each solve
    instead was measured to slow the solve after it by a fifth: the walk through every object
    leaves the caches cold.)"""
    caches.clear()
    gc.disable()
    try:
        return solve(name, inst, params)
    finally:
        gc.enable()


def run(name: str, inst, params: dict) -> tuple[float, float, dict]:
    """(certified cost or inf, runtime_s, extra) of one solve.

    ``runtime_s`` is the registry's time of the method alone (the evaluator's re-check of the
    plan is not in it), the figure every stored run carries. Every solve starts as in a fresh
    process (:func:`timed`), so no method reads the lattices another computed on the same
    instance, reuses its memory or pays for collecting its garbage.
    """
    res = timed(name, inst, params)
    ok = res.status in (Status.FEASIBLE, Status.OPTIMAL)
    return (res.evaluation.cost if ok else math.inf), res.runtime_s, res.extra


def warm_up(inst, methods: dict[str, dict]) -> None:
    """Solve ``inst`` once with each method, untimed: the first call of a method in a process pays
    one-off costs (lazy imports, first calls into scipy; about 0.15 s for ``bruteforce``) that a
    ratio should charge to neither side."""
    for name, params in methods.items():
        solve(name, inst, params)
    caches.clear()


def geomean(xs: list[float]) -> float:
    """Geometric mean of positive values (nan when there are none)."""
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else math.nan


def speed_paper(rows: list[dict]) -> None:
    """Print DepL's (eta 200) speed-up over ``bruteforce`` on the paper instances (aim: 10x)."""
    sel = [r for r in rows if math.isfinite(r["opt"])]
    if not sel:
        return
    t_opt, t_depl = [r["t_opt"] for r in sel], [r["t_depl"] for r in sel]
    each = [a / b for a, b in zip(t_opt, t_depl, strict=True)]
    ratio = geomean(t_opt) / geomean(t_depl)
    print(f"\nspeed on the paper instances ({len(sel)}, runtime_s): bruteforce geometric mean {geomean(t_opt):.3f} s, "
          f"depl (eta 200) {geomean(t_depl):.4f} s: {ratio:.1f}x (aim >= 10x: {'met' if ratio >= 10 else 'NOT met'}); "
          f"per instance {min(each):.1f}x to {max(each):.1f}x")


def speed_random(seeds: int, time_limit: float) -> None:
    """Print DepL's (eta 200) speed-up over ``exact`` on default ``random``, both modes (aim 20x).

    Each ``exact`` optimum must be proven and no DepL plan may beat it (a wrong claim stops the bench).
    """
    warm_up(generate("random", {}, seed=1000), {"exact": {"time_limit": time_limit}, "depl": {"eta": 200, "eps": 0.05}})
    print(f"\nspeed on default random, seeds 0-{seeds - 1}, both modes (runtime_s; exact time limit {time_limit:g} s):")
    print(f"{'instance':<42} {'opt':>10} {'t_exact':>8} {'depl':>10} {'t_depl':>7} {'ratio':>6}")
    t_ex, t_dp = [], []
    parts: dict[str, list[float]] = {}  # DepL's stage timers (extra t_<stage>_s), per mode
    for mode in ("per_run", "per_epoch"):
        for seed in range(seeds):
            inst = generate("random", {"noise_mode": mode}, seed=seed)
            res = timed("exact", inst, {"time_limit": time_limit})
            cost, t_depl, extra = run("depl", inst, {"eta": 200, "eps": 0.05})
            for key in ("stage1", "stage2", "stage3", "certify"):
                parts.setdefault(f"{mode} {key}", []).append(extra.get(f"t_{key}_s", math.nan))
            if res.status != Status.OPTIMAL:
                print(f"{inst.name:<42} exact: {res.status.value} (left out)")
                continue
            if cost < res.evaluation.cost - 1e-6 * abs(res.evaluation.cost):
                raise AssertionError(f"{inst.name}: depl {cost} beats the proven optimum {res.evaluation.cost}")
            t_ex.append(res.runtime_s)
            t_dp.append(t_depl)
            print(f"{inst.name:<42} {res.evaluation.cost:>10.2f} {res.runtime_s:>8.3f} {cost:>10.2f} {t_depl:>7.3f} "
                  f"{res.runtime_s / t_depl:>6.1f}", flush=True)
    if t_ex:
        ratio = geomean(t_ex) / geomean(t_dp)
        each = [a / b for a, b in zip(t_ex, t_dp, strict=True)]
        print(f"  exact geometric mean {geomean(t_ex):.3f} s, depl {geomean(t_dp):.4f} s: {ratio:.1f}x "
              f"(aim >= 20x: {'met' if ratio >= 20 else 'NOT met'}); per instance {min(each):.1f}x to {max(each):.1f}x")
    print("  depl's parts, mean ms per solve: " + ", ".join(f"{k} {1000 * statistics.fmean(v):.1f}"
                                                          for k, v in parts.items() if v))


def fmt(x: float, nd: int = 0) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{nd}f}"


def eta_summary(label: str, sel: list[dict], cost_key: str, time_key: str) -> None:
    """Print mean/max ratio over the instances with a plan, the count without one, and runtimes per eta."""
    for e in ETAS:
        rat = [r[cost_key][e] / r["opt"] for r in sel if math.isfinite(r["opt"]) and math.isfinite(r[cost_key][e])]
        fails = sum(not math.isfinite(r[cost_key][e]) for r in sel)
        if rat:
            print(f"  {label} eta={e:<3}: mean ratio {statistics.fmean(rat):.4f}  max {max(rat):.4f} (with a plan)  "
                  f"no plan {fails}  mean runtime {statistics.fmean(r[time_key][e] for r in sel):.2f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run only instances whose name contains this")
    ap.add_argument("--no-bruteforce", action="store_true", help="skip the exact optimum (ratios shown as -)")
    ap.add_argument("--speed", action="store_true",
                    help="instead: the old code path (before issue 16) against the installed one, plans compared "
                         "(bench_depl_speed; pass its options after --)")
    ap.add_argument("--random-seeds", type=int, default=10,
                    help="seeds of default random for the speed-up over exact (0 skips it)")
    ap.add_argument("--exact-time-limit", type=float, default=300.0, help="exact's limit on default random")
    args, rest = ap.parse_known_args(argv)
    if args.speed:
        from deplbench.benchmarks.perf.depl_speed import main as speed_main

        return speed_main([a for a in rest if a != "--"])
    if rest:
        ap.error(f"unrecognised arguments: {' '.join(rest)}")
    names = [n for n in canonical_names() if args.only in n]
    head = (["instance", "opt", "t_opt"] + [f"eta{e}" for e in ETAS] + [f"eps{e}" for e in EPSS]
            + ["plus", "bestexp", "bx/depl", "t_depl", "t_plus", "t_bx", "scale"])
    print(" ".join(f"{h:>9}" if i else f"{h:<30}" for i, h in enumerate(head)))
    if names and not args.no_bruteforce:
        warm_up(load_paper(names[0]), {"bruteforce": {"time_limit": 600}, "depl": {"eta": 200, "eps": 0.05}})
    rows = []
    for name in names:
        inst = load_paper(name)
        opt, t_opt = (math.inf, math.nan) if args.no_bruteforce else run("bruteforce", inst, {"time_limit": 600})[:2]
        by_eta = {e: run("depl", inst, {"eta": e, "eps": 0.05}) for e in ETAS}
        by_eps = {e: (by_eta[200] if e == 0.05 else run("depl", inst, {"eta": 200, "eps": e})) for e in EPSS}
        bx = run("best-exp", inst, {"eta": 200, "eps": 0.05})
        plus = {e: run("depl-plus", inst, {"eta": e, "eps": 0.05}) for e in ETAS}
        depl = by_eta[200][0]
        row = {"name": name, "opt": opt, "t_opt": t_opt, "eta": {e: v[0] for e, v in by_eta.items()},
               "eps": {e: v[0] for e, v in by_eps.items()}, "bx": bx[0], "t_depl": by_eta[200][1], "t_bx": bx[1],
               "t_eta": {e: v[1] for e, v in by_eta.items()}, "scale": by_eta[200][2].get("target_scale", math.nan),
               "plus": {e: v[0] for e, v in plus.items()}, "t_plus": {e: v[1] for e, v in plus.items()}}
        rows.append(row)

        def cell(c: float, opt: float = opt) -> str:
            return fmt(c) + ("" if not math.isfinite(opt) or not math.isfinite(c) else f"/{c / opt:.3f}")

        vals = ([fmt(opt), fmt(t_opt, 1)] + [cell(row["eta"][e]) for e in ETAS] + [cell(row["eps"][e]) for e in EPSS]
                + [cell(row["plus"][200]), cell(bx[0]), fmt(100 * (bx[0] / depl - 1), 1) + "%", fmt(row["t_depl"], 2),
                   fmt(row["t_plus"][200], 2), fmt(bx[1], 2), fmt(row["scale"], 3)])
        print(f"{name:<30} " + " ".join(f"{v:>9}" for v in vals), flush=True)
    print("\ncells: cost/ratio to the optimum; bx/depl: best-exp excess over depl (eta 200); scale: depl's final "
          "surrogate target / its requirement (> 1 = tightened)")
    for mode in ("per_epoch", "per_run"):
        sel = [r for r in rows if mode in r["name"]]
        if not sel:
            continue
        print(f"\n[{mode}] {len(sel)} instances")
        eta_summary("depl", sel, "eta", "t_eta")
        for e in EPSS:
            rat = [r["eps"][e] / r["opt"] for r in sel if math.isfinite(r["opt"])]
            if rat:
                print(f"  depl eps={e:<4}: mean ratio {statistics.fmean(rat):.4f}  max {max(rat):.4f}")
        eta_summary("depl-plus", sel, "plus", "t_plus")
        rat = [r["bx"] / r["opt"] for r in sel if math.isfinite(r["opt"])]
        exc = [r["bx"] / r["eta"][200] - 1 for r in sel if math.isfinite(r["eta"][200])]
        exc_plus = [r["bx"] / r["plus"][200] - 1 for r in sel if math.isfinite(r["plus"][200])]
        if rat:
            print(f"  best-exp     : mean ratio {statistics.fmean(rat):.4f}  max {max(rat):.4f}")
        print(f"  best-exp vs depl(eta 200): mean excess {100 * statistics.fmean(exc):.1f}%  max {100 * max(exc):.1f}%")
        if exc_plus:
            print(f"  best-exp vs depl-plus(eta 200): mean excess {100 * statistics.fmean(exc_plus):.1f}%  "
                  f"max {100 * max(exc_plus):.1f}%")
        print(f"  runtime depl {statistics.fmean(r['t_depl'] for r in sel):.2f} s, "
              f"best-exp {statistics.fmean(r['t_bx'] for r in sel):.2f} s; "
              f"final surrogate scale mean {statistics.fmean(r['scale'] for r in sel):.3f}")
    print("\nstage 1 submodularity (largest violation of f(S+i)+f(S+j) >= f(S+i+j)+f(S)):")
    print("  paper instances: one dataset each, no pair to test (vacuous)")
    for seed in range(3):
        inst = generate("random", {"datasets": 5, "epochs": 12, "noise_mode": "per_epoch"}, seed=seed)
        print(f"  {inst.name} seed {seed}: {submodularity_report(inst):.4g}")
    speed_paper(rows)
    if args.random_seeds > 0 and not args.only:
        speed_random(args.random_seeds, args.exact_time_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
