"""``deplbench library build``: instances, SAA MPS files, references, solutions, manifest.

Per entry of :mod:`deplbench.benchmarks.library.spec` (one worker task each):

1. generate the instance and run the exact methods in a fixed order (``bruteforce``, then
   ``exact`` with a deterministic work limit, then any other registered one) until one proves;
   that proof is the reference; without one, a family proof (:mod:`~deplbench.benchmarks.library.known`,
   e.g. the knapsack reduction's dynamic programs) gives it, and where both exist they must agree.
   The least deterministic work of a search's proof grades the tier (MIPLIB's rule: ``easy``
   within :data:`EASY_WORK`, ``medium`` proven with more or by a family proof, ``hard`` not
   proven within the deterministic limits: open);
2. the true-problem reference: ``=opt=`` / ``=inf=`` when proven, else ``=best=`` (best
   certified plan) with ``=bestdual=`` (best proven bound) or ``=unkn=``;
3. for S in :data:`~deplbench.benchmarks.library.spec.SCENARIOS`, the SAA MILP of the selection
   of every dataset, in both formulations, as MPS (seed in the name); one solve gives the
   reference of both files: HiGHS on the strengthened aggregated model at ``mip_rel_gap = 0``
   within a node limit, the decoded plan re-checked on the sample. Both formulations model
   the same plans on the same sample (docs/formulations.md), so they share the optimum; the
   tests solve each file again and compare.

Determinism: the reference files depend only on deterministic limits (sequence cap, work
limit, node limit, one thread, fixed seeds); the wall-clock limits are safety nets whose hits
are reported (then that problem's reference may differ between builds). Tiers and runtimes
are measurements: they live in the manifest and ``timings.json``, outside the checksummed files.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict
from pathlib import Path

from deplbench.benchmarks.library.runs import reference_run, stopped, watched_saa_solve
from deplbench.benchmarks.library.solu import Reference
from deplbench.benchmarks.library.spec import (
    FORMULATIONS,
    SAA_MAX_MK,
    SCENARIO_SEED,
    SCENARIOS,
    Entry,
)
from deplbench.formulations.exact.work import UNITS_PER_S
from deplbench.results import Status

#: MIPLIB's rule in reference seconds: proven within 60 s of the reference machine is easy. The
#: grade uses the deterministic work (:mod:`deplbench.formulations.exact.work`), not the clock
EASY_S = 60.0
EASY_WORK = int(EASY_S * UNITS_PER_S)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


#: exact methods in the order the build tries them, with their deterministic limits: the first
#: proof gives the reference (a fixed order, not the fastest: rebuilds must not depend on timing)
REFERENCE_ORDER = ("bruteforce", "exact")
#: ``exact``'s deterministic work limit per budget unit (work units: 150 s of the reference machine)
EXACT_WORK = 150_000
#: HiGHS's node limit of an SAA reference solve (deterministic: one thread, seed 0) and its safety
#: time limit (s): three times the slowest reference of the default build (docs/library.md)
SAA_NODES = 500
SAA_SAFETY_S = 1200.0
#: the safety time limit of a reference run, as a multiple of its work limit in reference seconds
#: (a net for a runaway run: with the deterministic limit binding first, builds agree)
SAFETY_FACTOR = 4.0


def work_model() -> dict:
    """The work model that grades the tiers, for the manifest's rules."""
    from deplbench.formulations.exact.work import WORK_MODEL

    return {"units_per_s": UNITS_PER_S, "weights": WORK_MODEL}


def exact_methods() -> list[str]:
    """Registered methods of kind ``exact`` (aliases once): :data:`REFERENCE_ORDER` first, then by name."""
    from deplbench.registry import get_solver, solver_names

    names = sorted(solver_names(kind="exact"), key=lambda n: (REFERENCE_ORDER.index(n) if n in REFERENCE_ORDER
                                                              else len(REFERENCE_ORDER), n))
    seen, out = set(), []
    for name in names:
        func = get_solver(name).func
        if func not in seen:
            seen.add(func)
            out.append(name)
    return out


def method_params(name: str, safety_s: float, exact_work: int = EXACT_WORK) -> dict:
    """Parameters of a reference run: the deterministic limit of the method and the safety time limit."""
    params = {"time_limit": safety_s}
    if name == "exact":
        params["max_work"] = exact_work
    return params


def entry_limits(entry: Entry, time_limit: float | None, exact_work: int) -> tuple[float, int]:
    """(safety time limit, work limit) of an entry's exact reference run: its budget scales both.

    ``time_limit`` None: :data:`SAFETY_FACTOR` times the work limit in reference seconds."""
    work = exact_work * entry.budget
    if time_limit is None:
        return SAFETY_FACTOR * work / UNITS_PER_S, work
    return time_limit * entry.budget, work


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


def _safety_hit(r) -> bool:
    """The run stopped on its wall-clock safety limit (its outcome then depends on the load)."""
    return r.status == Status.TIMEOUT and "time limit" in (r.message or "")


def run_work(r) -> int | None:
    """The deterministic work a run reports (``extra["work"]``, units), None when it reports none."""
    w = (r.extra or {}).get("work")
    return int(round(w)) if isinstance(w, (int, float)) else None


def _record(r, cpu_s: float) -> dict:
    """What the build keeps of a reference run (timings.json): outcome, clock, work and counters."""
    from deplbench.formulations.exact.work import counters

    return {"status": str(r.status), "wall_s": round(r.runtime_s, 3), "cpu_s": round(cpu_s, 3),
            "work": run_work(r), "counters": counters(r.solver, r.extra)}


def _agree(first, other) -> bool:
    return other.status == first.status and (other.status == Status.INFEASIBLE or math.isclose(
        other.evaluation.cost, first.evaluation.cost, rel_tol=1e-9))


def true_reference(inst, safety_s: float, exact_work: int = EXACT_WORK) -> dict:
    """The reference of the true problem, its proving method, the work that grades it, the runs.

    The exact methods run in :func:`exact_methods` order under deterministic limits
    (``bruteforce`` refuses above ``max_sequences``, ``exact`` stops at ``max_work``) and a
    wall-clock safety limit ``safety_s``; the first proof gives the reference and its plan. The
    grade is the least deterministic work of a proof (:func:`grade`): while no proof within
    :data:`EASY_WORK` is in, the next method runs too (a method that reports no work grades
    nothing). Nothing here depends on the clock unless a safety limit fires (reported). Each run is
    a watched child killed :data:`~deplbench.benchmarks.library.runs.EXACT_GRACE_S` past ``safety_s``
    (:func:`~deplbench.benchmarks.library.runs.reference_run`).
    """
    runs, records, proofs = [], {}, []
    for name in exact_methods():
        if any(w is not None and w <= EASY_WORK for w, _, _ in proofs):
            break
        params = method_params(name, safety_s, exact_work)
        r, cpu_s = reference_run(name, inst, params)
        if r.status == Status.INTERRUPTED:
            stopped(f"{inst.name}: {name}")
        records[name] = _record(r, cpu_s)
        if r.status in (Status.OPTIMAL, Status.INFEASIBLE):
            if proofs and not _agree(proofs[0][1], r):
                raise RuntimeError(f"{inst.name}: {proofs[0][1].solver} and {name} prove different references")
            proofs.append((run_work(r), r, params))
        elif not proofs or _safety_hit(r):
            runs.append((r, params))
    safety = [r.solver for r, _ in runs if _safety_hit(r)]
    base = {"runs": records, "safety": safety, "proof_work": None, "proof_s": None}
    known = _known(inst, proofs[0][1] if proofs else None)
    if known is not None and not proofs:  # a family proof closes what the searches left open
        ref = Reference("inf") if known.status == "infeasible" else Reference("opt", known.cost)
        return base | {"ref": ref, "plan": known.plan, "method": known.method, "params": {}}
    if proofs:
        _, best, params = proofs[0]
        works = [(w, r) for w, r, _ in proofs if w is not None]
        least = min(works, key=lambda wr: wr[0]) if works else (None, None)
        ref = Reference("inf") if best.status == Status.INFEASIBLE else Reference("opt", float(best.evaluation.cost))
        return base | {"ref": ref, "plan": best.plan, "method": best.solver, "params": params,
                       "proof_work": least[0], "proof_s": None if least[1] is None else round(least[1].runtime_s, 3)}
    feas = [(r, p) for r, p in runs if r.plan is not None and r.evaluation is not None and r.evaluation.feasible]
    bounds = [r.bound for r, _ in runs if r.bound is not None]
    if feas:
        best, params = min(feas, key=lambda rp: (rp[0].evaluation.cost, exact_methods().index(rp[0].solver)))
        lo = max(bounds) if bounds else None
        cost = float(best.evaluation.cost)
        ref = Reference("best", cost, None if lo is None else min(float(lo), cost))
        return base | {"ref": ref, "plan": best.plan, "method": best.solver, "params": params}
    return base | {"ref": Reference("unkn"), "plan": None, "method": None, "params": {},
                   "why": "; ".join(f"{r.solver}: {r.status} {r.message[:80]}" for r, _ in runs)}


def _known(inst, proof):
    """The family proof of ``inst`` (:mod:`~deplbench.benchmarks.library.known`), checked against
    the searches' ``proof`` when there is one (a disagreement stops the build)."""
    from deplbench.benchmarks.library.known import known_reference

    known = known_reference(inst)
    if known is not None and proof is not None:
        same = known.status == str(proof.status) and (known.cost is None or math.isclose(
            known.cost, proof.evaluation.cost, rel_tol=1e-9))
        if not same:
            raise RuntimeError(f"{inst.name}: {known.method} ({known.status} {known.cost}) and {proof.solver} "
                               f"({proof.status}) prove different references")
    return known


def grade(proof_work: int | None, proven: bool) -> str:
    """MIPLIB's rule in deterministic work: ``easy`` proven within :data:`EASY_WORK` units (60 s of
    the reference machine), ``medium`` proven with more (or by a method that reports no work),
    ``hard`` not proven within the deterministic limits (open)."""
    if not proven:
        return "hard"
    return "easy" if proof_work is not None and proof_work <= EASY_WORK else "medium"


def write_sol(path: Path, names: list[str], x, status_text: str, objective: float) -> None:
    """A solution file in HiGHS's format (every column)."""
    lines = ["Model status", status_text, "", "# Primal solution values", "Feasible",
             f"Objective {objective!r}", f"# Columns {len(names)}"]
    lines += [f"{n} {float(v)!r}" for n, v in zip(names, x, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def mps_files(model, out: Path, base: str, name: str) -> dict:
    """Write ``mps/BASE.mps`` (fixed format) and, unless it is the model exactly, ``free/BASE.mps``.

    The free file (every number to the bit, the model's names) is the model the references are of;
    the record says which file is which (``docs/library.md``, "MPS files and their columns").
    """
    from deplbench.formulations.saa.io import write_model

    fixed = write_model(model, out / "mps" / f"{base}.mps", name=name, fixed=True)
    rec = {"file": f"mps/{base}.mps", "sha256": sha256(out / "mps" / f"{base}.mps"), "exact": fixed.exact}
    if not fixed.exact:
        write_model(model, out / "free" / f"{base}.mps", name=name, fixed=False)
        rec.update(rounded=fixed.rounded, max_rel_change=float(f"{fixed.max_rel_change:.3g}"),
                   renamed=fixed.renamed, free=f"free/{base}.mps", free_sha256=sha256(out / "free" / f"{base}.mps"))
    return rec


def saa_files(inst, out: Path, time_limit: float, max_nodes: int,
              scenarios: tuple[int, ...] = SCENARIOS) -> tuple[list[dict], dict]:
    """Write the SAA files of ``inst`` (MPS + reference solution); their records and times."""
    from deplbench.formulations.saa.model import build, subset_data
    from deplbench.formulations.saa.start import encode
    from deplbench.instances.scenarios import sample_scenarios
    from deplbench.instances.semantics import data_effect

    ds = tuple(inst.dataset_ids)
    mk = len(inst.models) * inst.max_epochs
    if mk > SAA_MAX_MK:
        return [], {"note": f"{mk} (model, epoch) pairs, above SAA_MAX_MK = {SAA_MAX_MK}: no SAA file"}
    if not data_effect(inst, ds).g > 0:
        return [], {"note": "the selection of every dataset has g <= 0: no SAA file"}
    recs, times, safety = [], {}, []
    for S in scenarios:
        sc = sample_scenarios(inst, S, SCENARIO_SEED)
        data = subset_data(inst, ds, sc)
        models = {f: build(data, f, names=True) for f in FORMULATIONS}
        ref, plan, secs, hit, stop = watched_saa_solve(data, inst, sc, time_limit, max_nodes)
        if hit:
            safety.append(f"{inst.name} S={S}")
        for f, model in models.items():
            base = saa_name(inst.name, S, SCENARIO_SEED, f)
            rec = {"name": base, **mps_files(model, out, base, inst.name), "scenarios": S,
                   "scenario_seed": SCENARIO_SEED, "formulation": f, "datasets": list(ds),
                   "columns": model.n_vars, "rows": model.n_cons, "reference": ref.to_dict(),
                   "method": ("HiGHS (highspy, one thread, seed 0) on the aggregated model of the same sample, "
                              "strengthened (quantile and mixing cuts, quantile big-M, fixing), mip_rel_gap 0"),
                   "max_nodes": max_nodes, "time_limit": time_limit}
            if plan is not None:
                sol = out / "solutions" / f"{base}.sol"
                sol.parent.mkdir(parents=True, exist_ok=True)
                write_sol(sol, model.names, encode(model, plan), "Optimal" if ref.kind == "opt" else stop, ref.value)
                rec.update(solution=f"solutions/{base}.sol", solution_sha256=sha256(sol))
            recs.append(rec)
            times[base] = round(secs, 3)
    if safety:
        times["safety_hits"] = safety
    return recs, times


def build_one(entry: Entry, out: str, tiers: tuple[str, ...], time_limit: float | None, saa_time_limit: float,
              saa_nodes: int, scenarios: tuple[int, ...] = SCENARIOS, exact_work: int = EXACT_WORK) -> dict:
    """Everything of one entry (a worker task). Files are written only if its tier is selected.

    ``time_limit`` and ``saa_time_limit`` are safety limits; ``exact_work`` and ``saa_nodes`` the
    deterministic ones. ``timing["safety_hits"]`` lists the runs stopped by a safety limit.
    """
    from deplbench.instances.io import save_instance
    from deplbench.registry import generate

    out = Path(out)
    t0 = time.perf_counter()
    inst = generate(entry.family, entry.param_dict, entry.seed)
    tr = true_reference(inst, *entry_limits(entry, time_limit, exact_work))
    tier = grade(tr["proof_work"], tr["ref"].kind in ("opt", "inf"))
    rec = {"name": inst.name, "family": entry.family, "params": entry.param_dict, "seed": entry.seed,
           "tier": tier, "proof_work": tr["proof_work"], "reference": tr["ref"].to_dict(), "method": tr["method"],
           "method_params": tr["params"]}
    if "why" in tr:
        rec["why_unknown"] = tr["why"]
    known = inst.metadata.get("known_optimum") if isinstance(inst.metadata, dict) else None
    if known is not None:
        rec["known_optimum"] = known
    timing = {"exact": tr["runs"], "proof_work": tr["proof_work"], "proof_s": tr["proof_s"],
              "safety_hits": [f"{inst.name} {m}" for m in tr["safety"]]}
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
    if not rec["saa"] and "note" in timing["saa"]:
        rec["saa_note"] = timing["saa"]["note"]
    timing["safety_hits"] += timing["saa"].pop("safety_hits", [])
    timing["total_s"] = round(time.perf_counter() - t0, 3)
    return {"record": rec, "tier": tier, "name": inst.name, "timing": timing}


def entry_dict(e: Entry) -> dict:
    return asdict(e)
