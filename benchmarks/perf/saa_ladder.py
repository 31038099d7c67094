"""The SAA formulation ladder: each rung adds one strengthening, measured on the same instances.

Rungs (``RUNGS``): ``time_indexed`` and ``aggregated`` (the unstrengthened
formulations, worst-case big-M), ``+quantile big-M`` (with the objective cut; on cyclic ``per_run`` switch graphs also the exact block sequences of
``formulations/saa/blocks.py``), ``+fixing``, ``+mixing cuts``
(all with the solver of ``--solver``, OR-Tools' SCIP by default) and ``+branch-and-cut``
(``milp-scip-bc``: the same model with the scenario rows and star inequalities added lazily by a
PySCIPOpt constraint handler); optionally ``cpsat`` (CP-SAT with quantile big-M, fixing and
mixing rows: does it return a feasible SAA plan?).

Columns per rung: build s (sampling, strengthening, model build; mean), root gap (LP relaxation
of the built model against the best cost any rung found; mean), nodes (mean), solve s (mean),
solved (proven optimal for the sample within the limit), shifted geometric mean of the total
time (shift 10 s, unsolved runs counted at the limit). A Dolan-More performance profile is drawn
to ``--profile`` (PNG). Rows are appended to ``--csv`` as they finish (a long run can be read
while it runs).

Usage::

    python -m deplbench.benchmarks.perf.saa_ladder --set paper --scenarios 1000 --time-limit 60
    python -m deplbench.benchmarks.perf.saa_ladder --set random --rungs aggregated,+fixing
    python -m deplbench.benchmarks.perf.saa_ladder --table ladder.csv     # print a finished CSV
    deplbench run saa-ladder --out DIR --workers 1                          # old and new side by side
    python -m deplbench.benchmarks.perf.saa_ladder --store DIR --time-limit 60   # its ladder
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

import numpy as np

from deplbench.registry import get_family, solve

#: rung -> (method, parameters)
RUNGS: dict[str, tuple[str | None, dict]] = {
    "time_indexed": (None, dict(formulation="time_indexed", bigm="worst", fixing="off", cuts="quantile")),
    "aggregated": (None, dict(formulation="aggregated", bigm="worst", fixing="off", cuts="quantile")),
    "+quantile big-M": (None, dict(formulation="aggregated", bigm="quantile", fixing="off", cuts="quantile")),
    "+fixing": (None, dict(formulation="aggregated", bigm="quantile", fixing="on", cuts="quantile")),
    "+mixing cuts": (None, dict(formulation="aggregated", bigm="quantile", fixing="on", cuts="mixing")),
    "+branch-and-cut": ("milp-scip-bc", dict(formulation="aggregated", bigm="quantile", fixing="on",
                                             cuts="mixing")),
    "cpsat": ("milp-cpsat", dict(formulation="aggregated", bigm="quantile", fixing="on", cuts="mixing")),
}
DEFAULT_RUNGS = [r for r in RUNGS if r != "cpsat"]
SHIFT = 10.0
FIELDS = ["set", "instance", "rung", "method", "status", "objective", "bound", "gap", "root_bound", "build_s",
          "solve_s", "total_s", "nodes", "bound_quantile", "bound_count", "n_fixed", "saa_ok", "strength_s"]


def instances(which: str) -> list:
    """The paper per_run instances (both families, targets 5..13) or ``random`` seeds 0-9."""
    if which == "paper":
        out = []
        for fam in ("paper-alexnet", "paper-mobilenet"):
            f = get_family(fam)
            out += [f.func(0, **f.parse_params({"noise_mode": "per_run", "target": t})) for t in (5, 7, 9, 11, 13)]
        return out
    f = get_family("random")
    return [f.func(seed, **f.parse_params({})) for seed in range(10)]


def root_bound(inst, params: dict, S: int, seed: int) -> float | None:
    """Least LP-relaxation bound over the dataset selections of the model a rung builds."""
    import highspy

    from deplbench.formulations.highs import new_highs
    from deplbench.formulations.saa.common import dataset_subsets, prepare
    from deplbench.formulations.saa.io import to_highs_lp
    from deplbench.formulations.saa.model import build, subset_data
    from deplbench.instances.scenarios import sample_scenarios

    sc = sample_scenarios(inst, S, seed)
    best = math.inf
    for ds in dataset_subsets(inst):
        data, _ = prepare(subset_data(inst, ds, sc), cuts=params["cuts"], bigm=params["bigm"],
                          fixing=params["fixing"], deadline=math.inf)
        lp = to_highs_lp(build(data, params["formulation"]))
        lp.integrality_ = []
        h = new_highs(threads=1)
        h.passModel(lp)
        h.run()
        if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            best = min(best, h.getInfo().objective_function_value)
        elif h.getModelStatus() != highspy.HighsModelStatus.kInfeasible:
            return None
    return best if math.isfinite(best) else None


def run_rung(inst, rung: str, args) -> dict:
    method, params = RUNGS[rung]
    method = method or args.solver
    t0 = time.perf_counter()
    res = solve(method, inst, {"scenarios": args.scenarios, "time_limit": args.time_limit, "seed": args.seed,
                               "threads": 1, **params})
    total = time.perf_counter() - t0
    ex = res.extra or {}
    # a plain rung computes the bounds for the report only: not part of its formulation's time
    diag = ex.get("strength_s", 0.0) if params["bigm"] == "worst" and params["cuts"] != "mixing" else 0.0
    total -= diag
    root = root_bound(inst, params, args.scenarios, args.seed) if args.root_gap else None
    return {"set": args.set, "instance": inst.name, "rung": rung, "method": method, "status": res.status.value,
            "objective": res.objective, "bound": res.bound, "gap": res.gap, "root_bound": root,
            "build_s": (res.build_s or 0.0) + ex.get("prep_s", 0.0) - diag, "solve_s": res.solve_s, "total_s": total,
            "nodes": res.nodes, "bound_quantile": ex.get("bound_quantile"), "bound_count": ex.get("bound_count"),
            "n_fixed": ex.get("n_fixed"), "saa_ok": int(ex.get("saa_violated", 1 << 30) <= ex.get("saa_allowed", -1)),
            "strength_s": ex.get("strength_s")}


def store_rows(path: str) -> list[dict]:
    """Ladder rows of the SAA runs in a ``deplbench run`` store (e.g. config ``saa-ladder``).

    The rung is the run's label (``solver[k=v,...]``), the set its experiment; ``root_bound`` is
    the run's ``x_root_bound`` (the LP relaxation of the model it built).
    """
    from deplbench.benchmarks.harness.store import Store

    with Store(path, read_only=True) as st:
        d = st.runs()
    d = d[d["solver_kind"] == "saa"]
    rows = []
    for _, r in d.iterrows():
        def get(k, r=r):
            v = r[k] if k in r.index else None
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        viol, allowed = get("x_saa_violated"), get("x_saa_allowed")
        rows.append({"set": r["experiment"], "instance": r["instance"], "rung": f"{r['experiment']}: {r['label']}",
                     "method": r["solver"], "status": r["status"], "objective": get("objective"),
                     "bound": get("bound"), "gap": get("gap"), "root_bound": get("x_root_bound"),
                     "build_s": (get("build_s") or 0.0) + (get("x_prep_s") or 0.0), "solve_s": get("solve_s"),
                     "total_s": get("runtime_s"), "nodes": get("nodes"), "bound_quantile": get("x_bound_quantile"),
                     "bound_count": get("x_bound_count"), "n_fixed": get("x_n_fixed"),
                     "saa_ok": int(viol is not None and allowed is not None and viol <= allowed),
                     "root_gap": get("x_root_gap"),
                     "strength_s": get("x_strength_s")})
    return rows


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def table(rows: list[dict], time_limit: float) -> str:
    """The ladder: one line per rung."""
    best: dict[str, float] = {}
    for r in rows:
        o = _num(r["objective"])
        if o is not None and r["saa_ok"] in (1, "1"):
            best[r["instance"]] = min(best.get(r["instance"], math.inf), o)
    wr = max([18, *(len(str(r["rung"])) for r in rows)])
    out = [f"{'rung':<{wr}} {'n':>3} {'build s':>8} {'root gap':>9} {'nodes':>8} {'solve s':>8} {'solved':>7} "
           f"{'sgm s':>7} {'final gap (unsolved)':>22}"]
    for rung in dict.fromkeys(r["rung"] for r in rows):
        rr = [r for r in rows if r["rung"] == rung]
        solved = [r for r in rr if r["status"] == "optimal"]
        times = [min(_num(r["total_s"]), time_limit) if r["status"] == "optimal" else time_limit for r in rr]
        sgm = math.exp(np.mean(np.log(np.array(times) + SHIFT))) - SHIFT
        # a store row carries its own root gap (against its own plan: rows of other samples differ)
        gaps = [_num(r["root_gap"]) if _num(r.get("root_gap")) is not None
                else (best[r["instance"]] - _num(r["root_bound"])) / best[r["instance"]] for r in rr
                if _num(r.get("root_gap")) is not None
                or (_num(r["root_bound"]) is not None and r["instance"] in best)]
        fg = [_num(r["gap"]) for r in rr if r["status"] != "optimal" and _num(r["gap"]) is not None]
        nodes = [_num(r["nodes"]) for r in rr if _num(r["nodes"]) is not None]
        out.append(f"{rung:<{wr}} {len(rr):>3} {np.mean([_num(r['build_s']) for r in rr]):>8.2f} "
                   f"{(f'{100 * np.mean(gaps):.1f}%' if gaps else '-'):>9} "
                   f"{(f'{np.mean(nodes):.0f}' if nodes else '-'):>8} "
                   f"{np.mean([_num(r['solve_s']) or 0.0 for r in rr]):>8.2f} {len(solved):>3}/{len(rr):<3} "
                   f"{sgm:>7.2f} {(' '.join(f'{100 * g:.0f}%' for g in fg) or '-'):>22}")
    return "\n".join(out)


def profile(rows: list[dict], time_limit: float, path: str) -> None:
    """Dolan-More performance profile of the total time (unsolved: infinite ratio)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rungs = list(dict.fromkeys(r["rung"] for r in rows))
    insts = list(dict.fromkeys(r["instance"] for r in rows))
    t = np.full((len(insts), len(rungs)), np.inf)
    for r in rows:
        if r["status"] == "optimal" and _num(r["total_s"]) <= time_limit:
            t[insts.index(r["instance"]), rungs.index(r["rung"])] = _num(r["total_s"])
    with np.errstate(invalid="ignore"):  # an instance no rung solved: every ratio inf
        ratio = t / np.min(t, axis=1, keepdims=True)
    taus = np.logspace(0, 2, 200)
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, rung in enumerate(rungs):
        ax.step(taus, [(ratio[:, j] <= tau).mean() for tau in taus], where="post", label=rung)
    ax.set_xscale("log")
    ax.set_xlabel("time ratio to the best rung (tau)")
    ax.set_ylabel("fraction of instances solved within tau")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("SAA formulation ladder: performance profile")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def read_csv(path: str) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("paper", "random"), default="paper")
    ap.add_argument("--scenarios", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solver", default="milp-scip", help="method of the rungs without their own")
    ap.add_argument("--rungs", default=",".join(DEFAULT_RUNGS))
    ap.add_argument("--instances", type=int, default=10, help="first N instances of the set")
    ap.add_argument("--no-root-gap", dest="root_gap", action="store_false")
    ap.add_argument("--csv", default="saa_ladder.csv")
    ap.add_argument("--profile", default=None, help="PNG of the performance profile")
    ap.add_argument("--table", default=None, help="only print the ladder of finished CSV files (comma list)")
    ap.add_argument("--store", default=None, help="only print the ladder of the SAA runs of a `deplbench run` store")
    args = ap.parse_args(argv)
    if args.store:
        rows = store_rows(args.store)
    elif args.table:
        rows = [r for p in args.table.split(",") for r in read_csv(p)]
    else:
        rungs = [r.strip() for r in args.rungs.split(",")]
        unknown = [r for r in rungs if r not in RUNGS]
        if unknown:
            print(f"error: unknown rung(s) {unknown}; known: {list(RUNGS)}", file=sys.stderr)
            return 2
        rows = []
        new = not os.path.exists(args.csv)
        with open(args.csv, "a", newline="") as fh:
            w = csv.DictWriter(fh, FIELDS)
            if new:
                w.writeheader()
            for inst in instances(args.set)[:args.instances]:
                for rung in rungs:
                    r = run_rung(inst, rung, args)
                    rows.append(r)
                    w.writerow(r)
                    fh.flush()
                    print(f"{r['instance']:<42} {rung:<16} {r['status']:<8} obj={r['objective']} "
                          f"total={r['total_s']:.1f}s nodes={r['nodes']}", flush=True)
        rows = read_csv(args.csv)
    print(table(rows, args.time_limit))
    if args.profile:
        profile(rows, args.time_limit, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
