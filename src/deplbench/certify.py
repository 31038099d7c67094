"""Certification of a method's result by the evaluator (used by :func:`deplbench.registry.solve`).

May import: core, instances, instances.evaluator (inside functions). Imported by: the registry.
"""

from __future__ import annotations

from deplbench.results import SolveResult, Status


def check_result(kind: str, instance, params: dict, res: SolveResult) -> SolveResult:
    """Attach the evaluator's verdict; an untrue ``optimal`` / ``feasible`` claim becomes ``error``.

    A stopped result's incumbent is checked by :func:`check_incumbent`.
    """
    from deplbench.instances.evaluator.evaluate import HARD_VIOLATIONS, evaluate
    from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios

    if res.plan is None or not res.plan.segments:
        if res.status.has_solution:
            return res.replace(status=Status.ERROR, message=f"claimed {res.status} without a plan")
        return res
    ev = evaluate(instance, res.plan, samples=0)
    res = res.replace(evaluation=ev)
    if res.status.stopped:
        return check_incumbent(kind, instance, params, res)
    if not res.status.has_solution:
        return res
    hard = [v for v in ev.violations if v in HARD_VIOLATIONS]
    if hard:
        return res.replace(status=Status.ERROR, message=f"claimed {res.status} but the plan violates {hard}")
    if kind == "saa":
        sc = sample_scenarios(instance, int(params["scenarios"]), int(params["seed"]))
        chk = evaluate_on_scenarios(instance, res.plan, sc)
        if not chk.ok:
            return res.replace(status=Status.ERROR, message=(
                f"claimed {res.status} but violates {chk.n_violated} of {chk.n_scenarios} "
                f"scenarios (allowed {chk.allowed})"))
    elif not ev.feasible:
        return res.replace(status=Status.ERROR,
                           message=f"claimed {res.status} but the evaluator finds {ev.violations}")
    return res


def check_incumbent(kind: str, instance, params: dict, res: SolveResult) -> SolveResult:
    """A stopped method's incumbent stays only if certified (the sample's rule for an SAA method).

    An exact method's or heuristic's incumbent must be feasible for the true problem; an SAA
    method's must meet every hard rule and its sample (the true verdict is in ``certified``).
    A rejected incumbent is dropped (the status stays, the message says why).
    """
    from deplbench.instances.evaluator.evaluate import HARD_VIOLATIONS
    from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios

    ev = res.evaluation
    why = ""
    if [v for v in ev.violations if v in HARD_VIOLATIONS]:
        why = f"violates {[v for v in ev.violations if v in HARD_VIOLATIONS]}"
    elif kind == "saa":
        chk = evaluate_on_scenarios(instance, res.plan, sample_scenarios(instance, int(params["scenarios"]),
                                                                         int(params["seed"])))
        if not chk.ok:
            why = f"violates {chk.n_violated} of {chk.n_scenarios} scenarios (allowed {chk.allowed})"
    elif not ev.feasible:
        why = f"the evaluator finds {ev.violations}"
    if not why:
        return res
    msg = f"{res.message}; " if res.message else ""
    return res.replace(plan=None, objective=None, gap=None, evaluation=None,
                       message=f"{msg}incumbent dropped: {why}")
