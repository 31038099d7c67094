"""``deplbench library build``: instances, SAA MPS files, references, solutions, manifest.

Per entry of :mod:`deplbench.benchmarks.library_spec` (one worker task each):

1. generate the instance and run every registered exact method (kind ``exact``, aliases run
   once) with the reference time limit; the fastest proof grades the tier (MIPLIB's rule:
   ``easy`` proven within :data:`EASY_S`, ``medium`` proven within the limit, ``hard`` not
   proven: open);
2. the true-problem reference: ``=opt=`` / ``=inf=`` when proven (plan and method: the first
   proving method in name order, so rebuilds are identical), else ``=best=`` (best
   certified plan) with ``=bestdual=`` (best proven bound) or ``=unkn=``;
3. for S in :data:`~deplbench.benchmarks.library_spec.SCENARIOS`, the SAA MILP of the selection
   of every dataset, in both formulations, as MPS (seed in the name); its reference is solved
   by HiGHS on the aggregated model at ``mip_rel_gap = 0`` within the SAA time limit, and the
   decoded plan is re-checked on the sample. Both formulations model the same plans on the
   same sample (docs/formulations.md), so they share the value; tests recompute it on each file.

Files whose content depends only on the proofs are byte-identical across builds; measured
runtimes (and therefore a tier near a threshold, and a time-limited ``=best=``) can differ.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path

from deplbench.benchmarks.library_spec import FORMULATIONS, SCENARIO_SEED, SCENARIOS, Entry
from deplbench.benchmarks.solu import Reference
from deplbench.results import Status

#: MIPLIB's rule on this class of machine: proven within this many seconds is easy
EASY_S = 60.0


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def exact_methods() -> list[str]:
    """Registered methods of kind ``exact``, one name per implementation (aliases run once)."""
    from deplbench.registry import get_solver, solver_names

    seen, out = set(), []
    for name in sorted(solver_names(kind="exact")):
        func = get_solver(name).func
        if func not in seen:
            seen.add(func)
            out.append(name)
    return out


def saa_name(inst_name: str, scenarios: int, seed: int, formulation: str) -> str:
    """Base name of an SAA file: instance, scenarios, scenario seed, formulation."""
    return f"{inst_name}-s{scenarios}-seed{seed}-{formulation}"


def _clean_plan(plan, name: str, solver: dict, status: str, cost: float) -> dict:
    """A plan file without run-dependent fields (runtime), so that rebuilds are identical."""
    d = plan.annotate(instance=name, status=status, objective=cost, runtime_s=None).to_json_dict()
    d["solver"] = solver
    return d


def _write_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def true_reference(inst, time_limit: float) -> dict:
    """Run the exact methods; the reference, the proving method and the measured times."""
    from deplbench.registry import solve

    runs = []
    for name in exact_methods():
        r = solve(name, inst, {"time_limit": time_limit})
        runs.append(r)
    times = {r.solver: round(r.runtime_s, 3) for r in runs}
    proven = [r for r in runs if r.status in (Status.OPTIMAL, Status.INFEASIBLE)]
    if proven:
        # the first proving method in name order (not the fastest: run times vary, and two
        # methods may prove the same optimum with different plans, so rebuilds would differ)
        best = proven[0]
        if best.status == Status.INFEASIBLE:
            ref, plan = Reference("inf"), None
        else:
            ref, plan = Reference("opt", float(best.evaluation.cost)), best.plan
        return {"ref": ref, "plan": plan, "method": best.solver, "params": {"time_limit": time_limit},
                "proof_s": min(r.runtime_s for r in proven), "times": times}
    feas = [r for r in runs if r.plan is not None and r.evaluation is not None and r.evaluation.feasible]
    bounds = [r.bound for r in runs if r.bound is not None]
    if feas:
        best = min(feas, key=lambda r: r.evaluation.cost)
        lo = max(bounds) if bounds else None
        ref = Reference("best", float(best.evaluation.cost), None if lo is None else min(float(lo), best.evaluation.cost))
        return {"ref": ref, "plan": best.plan, "method": best.solver, "params": {"time_limit": time_limit},
                "proof_s": None, "times": times}
    return {"ref": Reference("unkn"), "plan": None, "method": None, "params": {"time_limit": time_limit},
            "proof_s": None, "times": times, "why": "; ".join(f"{r.solver}: {r.status} {r.message[:80]}" for r in runs)}


def grade(proof_s: float | None, time_limit: float) -> str:
    if proof_s is None or proof_s > time_limit:
        return "hard"
    return "easy" if proof_s <= EASY_S else "medium"


def write_sol(path: Path, names: list[str], x, status_text: str, objective: float) -> None:
    """A solution file in HiGHS's format (every column)."""
    lines = ["Model status", status_text, "", "# Primal solution values", "Feasible",
             f"Objective {objective!r}", f"# Columns {len(names)}"]
    lines += [f"{n} {float(v)!r}" for n, v in zip(names, x, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def solve_saa_file(data, inst, sc, time_limit: float, max_nodes: int) -> tuple[Reference, object, float]:
    """Solve one selection's SAA with HiGHS at gap 0: reference, plan, seconds.

    The solved model is the aggregated file plus the valid quantile cuts and an enumerated MIP
    start (same optimum, faster proof). ``max_nodes`` (deterministic, unlike a time limit) bounds
    the search; the time limit is a safety net.
    """
    from dataclasses import replace

    import highspy

    from deplbench.formulations.highs_direct import configure, run_highs, to_highs_lp
    from deplbench.formulations.saa_common import mip_start, plan_cost, verify
    from deplbench.formulations.saa_cuts import quantile_cut_sets
    from deplbench.formulations.saa_model import build

    t0 = time.perf_counter()
    model = build(replace(data, cut_sets=quantile_cut_sets(data)), "aggregated")
    h = highspy.Highs()
    configure(h, time_limit=time_limit, mip_gap=0.0, threads=1, seed=0)
    h.setOptionValue("mip_max_nodes", int(max_nodes))
    h.passModel(to_highs_lp(model))
    x0 = mip_start(model, time.perf_counter() + time_limit)
    if x0 is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(x0)
        sol.value_valid = True
        h.setSolution(sol)
    status, x, _, bound, _ = run_highs(h)
    secs = time.perf_counter() - t0
    plan = model.decode(x) if x is not None else None
    if plan is not None and verify(inst, plan, sc):
        plan = None  # tolerances let it slip past the sample's target: no claim from it
        status = Status.UNKNOWN if status == Status.OPTIMAL else status
    if status == Status.INFEASIBLE:
        return Reference("inf"), None, secs
    if plan is None:
        return Reference("unkn"), None, secs
    cost = plan_cost(inst, plan)
    if status == Status.OPTIMAL:
        return Reference("opt", cost), plan, secs
    lo = None if bound is None else min(float(bound), cost)
    return Reference("best", cost, lo), plan, secs


def saa_files(inst, out: Path, time_limit: float, max_nodes: int,
              scenarios: tuple[int, ...] = SCENARIOS) -> tuple[list[dict], dict]:
    """Write the SAA files of ``inst`` (MPS + reference solution); their records and times."""
    from deplbench.formulations.mps_solver import write_mps
    from deplbench.formulations.saa_model import build, subset_data
    from deplbench.formulations.saa_start import encode
    from deplbench.instances.scenarios import sample_scenarios
    from deplbench.instances.semantics import data_effect

    ds = tuple(inst.dataset_ids)
    if not data_effect(inst, ds).g > 0:
        return [], {"note": "the selection of every dataset has g <= 0: no SAA file"}
    recs, times = [], {}
    for S in scenarios:
        sc = sample_scenarios(inst, S, SCENARIO_SEED)
        data = subset_data(inst, ds, sc)
        models = {f: build(data, f, names=True) for f in FORMULATIONS}
        ref, plan, secs = solve_saa_file(data, inst, sc, time_limit, max_nodes)
        for f, model in models.items():
            base = saa_name(inst.name, S, SCENARIO_SEED, f)
            mps = out / "mps" / f"{base}.mps"
            mps.parent.mkdir(parents=True, exist_ok=True)
            write_mps(model, mps)
            rec = {"name": base, "file": f"mps/{base}.mps", "sha256": sha256(mps), "scenarios": S,
                   "scenario_seed": SCENARIO_SEED, "formulation": f, "datasets": list(ds),
                   "columns": model.n_vars, "rows": model.n_cons, "reference": ref.to_dict(),
                   "method": ("HiGHS (highspy) on the aggregated model of the same sample with the quantile "
                              "cuts, mip_rel_gap 0"), "max_nodes": max_nodes, "time_limit": time_limit}
            if plan is not None:
                sol = out / "solutions" / f"{base}.sol"
                sol.parent.mkdir(parents=True, exist_ok=True)
                write_sol(sol, model.names, encode(model, plan),
                          "Optimal" if ref.kind == "opt" else "Time limit reached", ref.value)
                rec.update(solution=f"solutions/{base}.sol", solution_sha256=sha256(sol))
            recs.append(rec)
            times[base] = round(secs, 3)
    return recs, times


def build_one(entry: Entry, out: str, tiers: tuple[str, ...], time_limit: float, saa_time_limit: float,
              saa_nodes: int, scenarios: tuple[int, ...] = SCENARIOS) -> dict:
    """Everything of one entry (a worker task). Files are written only if its tier is selected."""
    from deplbench.instances.io import save_instance
    from deplbench.registry import generate

    out = Path(out)
    t0 = time.perf_counter()
    inst = generate(entry.family, entry.param_dict, entry.seed)
    tr = true_reference(inst, time_limit)
    tier = grade(tr["proof_s"], time_limit)
    rec = {"name": inst.name, "family": entry.family, "params": entry.param_dict, "seed": entry.seed,
           "tier": tier, "reference": tr["ref"].to_dict(), "method": tr["method"], "method_params": tr["params"]}
    if "why" in tr:
        rec["why_unknown"] = tr["why"]
    known = inst.metadata.get("known_optimum") if isinstance(inst.metadata, dict) else None
    if known is not None:
        rec["known_optimum"] = known
    timing = {"exact": tr["times"], "proof_s": None if tr["proof_s"] is None else round(tr["proof_s"], 3)}
    if tier not in tiers:
        return {"record": None, "tier": tier, "name": inst.name, "timing": timing}
    path = out / "instances" / f"{inst.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_instance(inst, path)
    path.chmod(0o644)  # written through a private temporary file; a library is for reading by all
    rec.update(file=f"instances/{inst.name}.json", sha256=sha256(path))
    if tr["plan"] is not None:
        sol = out / "solutions" / f"{inst.name}.plan.json"
        st = "optimal" if tr["ref"].kind == "opt" else "feasible"
        _write_json(_clean_plan(tr["plan"], inst.name, {"name": tr["method"], "params": tr["params"]}, st,
                                tr["ref"].value), sol)
        rec.update(solution=f"solutions/{inst.name}.plan.json", solution_sha256=sha256(sol))
    rec["saa"], timing["saa"] = saa_files(inst, out, saa_time_limit, saa_nodes, scenarios)
    timing["total_s"] = round(time.perf_counter() - t0, 3)
    return {"record": rec, "tier": tier, "name": inst.name, "timing": timing}


def entry_dict(e: Entry) -> dict:
    return asdict(e)
