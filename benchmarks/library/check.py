"""``deplbench library check``: certify a solution and compare it with the library's reference.

A solution is a plan file (``depl-plan/1``) of an instance or of an SAA file, or a MIP solution
file (HiGHS, CBC or SCIP format) of one of the MPS files, mapped back to a plan by column names.
The evaluator certifies it: for an instance, feasibility of the true problem (the certified
quantile bracket); for an SAA file, the rules and the sample's chance constraint. Like MIPLIB's
checker, the result is *consistent* only if the solution is feasible, its stated objective (if
any) equals its certified cost, it is not cheaper than a proven optimum nor below a proven
bound, and the problem is not proven infeasible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from deplbench.benchmarks.library.catalog import Library
from deplbench.benchmarks.library.solu import Reference

#: relative tolerance of the cost comparisons (the .solu values are the certified costs)
RTOL = 1e-6


@dataclass
class CheckResult:
    """What the checker found: certified cost, feasibility, contradictions and notes."""

    problem: str
    feasible: bool
    cost: float | None
    reference: Reference
    contradictions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the new ``library.solu`` lines when a consistent solution improves the best known value
    submit: list[str] = field(default_factory=list)
    #: what the submission rests on: library version, the solution file's SHA-256, the certified figures
    certificate: dict = field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        return self.feasible and not self.contradictions

    def lines(self) -> list[str]:
        cost = "-" if self.cost is None else f"{self.cost!r}"
        ref = " ".join(self.reference.lines(self.problem))
        out = [f"{self.problem}: {'feasible' if self.feasible else 'INFEASIBLE'}, certified cost {cost}; "
               f"reference {ref}"]
        out += [f"  contradiction: {c}" for c in self.contradictions] + [f"  {n}" for n in self.notes]
        if self.consistent and self.submit:
            out.append("  submit (the new library.solu lines, with the solution file and this certificate):")
            out += [f"    {line}" for line in self.submit]
            out.append(f"    certificate: {json.dumps(self.certificate, sort_keys=True)}")
        out.append("consistent" if self.consistent else "NOT consistent")
        return out


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * max(1.0, abs(a), abs(b))


def _saa_model(lib: Library, inst, saa: dict):
    from deplbench.formulations.saa.model import build, subset_data
    from deplbench.instances.scenarios import sample_scenarios

    sc = sample_scenarios(inst, saa["scenarios"], saa["scenario_seed"])
    return build(subset_data(inst, tuple(saa["datasets"]), sc), saa["formulation"], names=True), sc


def _model_names(model, values: dict[str, float]) -> dict[str, float]:
    """A solution's values by the model's column names (the free file's): fixed-format names mapped (no model: as is)."""
    from deplbench.formulations.saa.mps_text import fixed_names

    if model is None:
        return values
    to_model = dict(zip(fixed_names(model), model.names, strict=True))
    own = set(model.names)
    return {n if n in own else to_model.get(n, n): v for n, v in values.items()}


def _is_plan(path: Path) -> bool:
    return path.suffix.lower() == ".json" or path.read_bytes()[:1] == b"{"


def _exact_rows(lib: Library, path: Path, saa: dict, res: CheckResult, inst) -> None:
    """The solution against the library's exact MPS file (the free one, if any) in rational arithmetic, MIPLIB's tolerances."""
    from deplbench.benchmarks.library.rational import check_solution, read_mps
    from deplbench.formulations.backends.solfile import read_solution

    sf = read_solution(path)
    exact = saa.get("free", saa["file"])  # the file that is the model to the bit
    model = _saa_model(lib, inst, saa)[0] if saa.get("renamed") else None
    values = _model_names(model, sf.values)
    verdict = check_solution(read_mps(lib.root / exact), values, sf.objective)
    res.notes += [f"exact (rational) check of {exact}: " + "; ".join(verdict.lines())]
    if not verdict.ok:
        res.feasible = False
        res.notes.append("violates its MPS file beyond MIPLIB's tolerances (feasibility 1e-6, integrality 1e-5)")


def _read(lib: Library, path: Path, inst, saa: dict | None):
    """(plan, stated objective, scenarios or None) of the solution file."""
    from deplbench.errors import InputError
    from deplbench.formulations.backends.mps import solution_vector
    from deplbench.formulations.backends.solfile import read_solution
    from deplbench.instances.io import load_plan

    is_plan = _is_plan(path)
    model, sc = _saa_model(lib, inst, saa) if saa is not None else (None, None)
    if is_plan:
        plan = load_plan(path, inst)
        return plan, plan.objective, sc
    if saa is None:
        raise InputError("a MIP solution file belongs to an SAA file: give its name (NAME-sS-seedN-FORMULATION)",
                         "--instance")
    sf = read_solution(path)
    if not sf.has_solution:
        raise InputError(f"holds no solution (status '{sf.raw_status}')", str(path))
    try:
        plan = model.decode(solution_vector(model, sf.values))
    except ValueError as exc:
        raise InputError(f"does not map back to a plan ({exc})", str(path)) from None
    return plan, sf.objective, sc


def check(lib: Library, solution: str | Path, name: str) -> CheckResult:
    """Certify ``solution`` for problem ``name`` of ``lib`` and compare it with the reference."""
    from deplbench.instances.evaluator.evaluate import HARD_VIOLATIONS, evaluate
    from deplbench.instances.io import load_instance
    from deplbench.instances.scenarios import evaluate_on_scenarios

    rec, saa = lib.find(name)
    inst = load_instance(lib.root / rec["file"])
    plan, stated, sc = _read(lib, Path(solution), inst, saa)
    ev = evaluate(inst, plan, samples=0)
    ref = lib.refs.get(name, Reference("unkn"))
    res = CheckResult(name, True, float(ev.cost), ref)
    chk = None  # the sample's check, for an SAA file
    if saa is None:
        if not ev.feasible:
            res.feasible = False
            res.notes.append(f"violates {', '.join(ev.violations)}")
    else:
        hard = [v for v in ev.violations if v in HARD_VIOLATIONS]
        chk = evaluate_on_scenarios(inst, plan, sc)
        if hard or not chk.ok:
            res.feasible = False
            res.notes.append(f"violates {', '.join(hard)}" if hard else
                             f"violates {chk.n_violated} of {chk.n_scenarios} scenarios (allowed {chk.allowed})")
    if saa is not None and not _is_plan(Path(solution)):
        _exact_rows(lib, Path(solution), saa, res, inst)
    if stated is not None and not _close(stated, res.cost):
        res.contradictions.append(f"stated objective {stated!r} differs from the certified cost {res.cost!r}")
    if res.feasible:
        _compare(res, ref)
        if _improves(res.cost, ref) and not res.contradictions:
            _submission(res, lib, Path(solution), ev, inst, chk)
    return res


def _improves(cost: float, ref: Reference) -> bool:
    """A feasible cost that is news for the reference: below a best known value, or any for ``=unkn=``."""
    return ref.kind == "unkn" or (ref.kind == "best" and cost < ref.value and not _close(cost, ref.value))


def _submission(res: CheckResult, lib: Library, solution: Path, ev, inst, chk) -> None:
    """The ``=best=`` line of the certified cost (keeping a proven bound below it) and its certificate."""
    import hashlib

    bound = res.reference.bound if res.reference.kind == "best" else None
    res.submit = Reference("best", res.cost, bound).lines(res.problem)
    cert = {"library": lib.manifest["version"], "problem": res.problem, "certified_cost": res.cost,
            "solution_sha256": hashlib.sha256(solution.read_bytes()).hexdigest()}
    if chk is None:  # the true problem: the evaluator's certified quantile bracket against the target
        cert |= {"quantile_bracket": [float(b) for b in ev.quantile_bounds], "target": float(inst.loss.target),
                 "quantile": float(inst.loss.quantile)}
    else:  # an SAA file: the sample's chance constraint
        cert |= {"scenarios_violated": int(chk.n_violated), "scenarios": int(chk.n_scenarios),
                 "allowed": int(chk.allowed)}
    res.certificate = cert


def _compare(res: CheckResult, ref: Reference) -> None:
    c = res.cost
    if ref.kind == "inf":
        res.contradictions.append("feasible for a problem proven infeasible")
    elif ref.kind == "opt":
        if c < ref.value and not _close(c, ref.value):
            res.contradictions.append(f"cheaper than the proven optimum {ref.value!r}")
        elif not _close(c, ref.value):
            res.notes.append(f"gap to the optimum {(c - ref.value) / max(abs(ref.value), 1e-9):.3%}")
        else:
            res.notes.append("optimal")
    elif ref.kind == "best":
        if ref.bound is not None and c < ref.bound and not _close(c, ref.bound):
            res.contradictions.append(f"cheaper than the proven lower bound {ref.bound!r}")
        elif c < ref.value and not _close(c, ref.value):
            res.notes.append(f"improves the best known value {ref.value!r}")


def report_json(res: CheckResult) -> str:
    return json.dumps({"problem": res.problem, "feasible": res.feasible, "cost": res.cost,
                       "reference": res.reference.to_dict(), "contradictions": res.contradictions,
                       "notes": res.notes, "consistent": res.consistent, "submit": res.submit,
                       "certificate": res.certificate})
