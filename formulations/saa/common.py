"""What every SAA backend shares: dataset subsets, the subset loop, verification, the result.

Each backend provides a subset solve (:class:`~deplbench.formulations.saa.contract.SolveSubset`,
returning a :class:`~deplbench.formulations.saa.contract.SubResult`, both re-exported here);
:func:`run_saa` samples the scenarios, loops over the dataset selections, verifies every
decoded plan on the sample (retrying once with a safety margin on the target) and
assembles one :class:`~deplbench.results.SolveResult`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from deplbench.errors import InputError
from deplbench.formulations.saa.contract import SolveSubset, SubResult
from deplbench.incumbent import offer
from deplbench.instances.evaluator.evaluate import plan_costs
from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import Scenarios, evaluate_on_scenarios, sample_scenarios
from deplbench.instances.semantics import data_effect, nonempty_subsets, within_budget
from deplbench.results import SolveResult, Status

#: at most this many dataset selections (each one MILP); more datasets are refused
MAX_SUBSETS = 1024
#: margin (relative to loss.initial) of the retry when a plan fails the check at margin 0
RETRY_MARGIN = 1e-7
#: extra figures summed over the selections (the bounds take the least: the SAA optimum is a min)
SUMMED = ("n_fixed", "mixing_rows", "strength_s")
BOUNDS = ("bound_quantile", "bound_count")


def dataset_subsets(instance) -> list[tuple[str, ...]]:
    """Every non-empty dataset selection with g > 0, smallest first."""
    ids = instance.dataset_ids
    if 2 ** len(ids) - 1 > MAX_SUBSETS:
        raise InputError(f"{len(ids)} datasets give {2 ** len(ids) - 1} selections; the SAA MILPs "
                         f"enumerate at most {MAX_SUBSETS} (10 datasets)")
    return [sub for sub in nonempty_subsets(ids) if data_effect(instance, sub).g > 0]


def verify(instance, plan: Plan, sc: Scenarios, strict: bool = False) -> str:
    """Empty string if ``plan`` meets every rule and the SAA constraint on ``sc``, else why not.

    ``strict``: the time within the budget and the losses within the target without the
    evaluator's tolerances (a plan the MILP itself must accept).
    """
    models = plan.models()
    if not 1 <= len(models) <= instance.max_epochs:
        return f"K = {len(models)} epochs"
    for a, b in zip(models, models[1:], strict=False):
        if not instance.allowed(a, b):
            return f"forbidden switch {a} -> {b}"
    _, _, t = plan_costs(instance, plan)
    if not (t <= instance.time_budget if strict else within_budget(t, instance.time_budget)):
        return f"time {t:.10g} > budget {instance.time_budget:g}"
    chk = evaluate_on_scenarios(instance, plan, sc, tol=0.0) if strict else evaluate_on_scenarios(instance, plan, sc)
    if not chk.ok:
        return f"{chk.n_violated} scenarios violated, {chk.allowed} allowed"
    return ""


def plan_cost(instance, plan: Plan) -> float:
    compute, transfer, _ = plan_costs(instance, plan)
    return compute + transfer



def check_options(formulation: str, scenarios: int, cuts, bigm: str, fixing: str) -> str:
    """Refuse unknown options (``InputError``); ``cuts`` as a string (booleans: quantile / none)."""
    from deplbench.formulations.saa.model import FORMULATIONS
    from deplbench.formulations.saa.strength import BIGM_CHOICES, CUT_CHOICES, FIXING_CHOICES

    if isinstance(cuts, bool):
        cuts = "quantile" if cuts else "none"
    for key, val, choices in (("formulation", formulation, FORMULATIONS), ("cuts", cuts, CUT_CHOICES),
                              ("bigm", bigm, BIGM_CHOICES), ("fixing", fixing, FIXING_CHOICES)):
        if val not in choices:
            raise InputError(f"{key} must be one of {', '.join(choices)}, not {val!r}", "--set", key)
    if scenarios < 1:
        raise InputError("scenarios must be >= 1", "--set", "scenarios")
    return cuts


#: shares of the time left that the cut separation, and all of the preparation, may use
CUT_SHARE, PREP_SHARE = 0.25, 0.7
#: share of the time limit kept for the registry's certification, beyond the sampling's time
CERTIFY_SHARE = 0.05
#: seconds a selection's MILP needs at least to be built and started (less: ``timeout`` without it)
MIN_SOLVE_S = 0.05


def prepare(data, *, cuts: str, bigm: str, fixing: str, deadline: float, cap: float = math.inf):
    """The strengthening of :mod:`~deplbench.formulations.saa.strength`, then the quantile cut sets.

    The cuts are separated on the strengthened LP (quantile big-M, fixed scenarios, objective
    rows): smaller and tighter than the plain one, so each round is cheaper and its cuts are
    the ones the MILP still needs. ``cap``: the cost of a plan of this selection that meets the
    sample strictly (:func:`cap_of`).
    """
    from dataclasses import replace

    from deplbench.formulations.saa.cuts import quantile_cut_sets
    from deplbench.formulations.saa.strength import strengthen

    left = deadline - time.perf_counter()
    # the MILP keeps a share: a limit must find the model built and the start plan passed
    data, ex = strengthen(data, bigm=bigm, fixing=fixing, cuts=cuts, deadline=deadline - (1 - PREP_SHARE) * left,
                          cap=cap)
    if cuts in ("quantile", "mixing"):
        left = deadline - time.perf_counter()
        data = replace(data, cut_sets=quantile_cut_sets(data, deadline=deadline - (1 - CUT_SHARE) * left))
    return data, ex


def cap_of(instance, plans, datasets: tuple[str, ...], sc: Scenarios) -> float:
    """Least cost of the ``plans`` of selection ``datasets`` that meet the SAA strictly (inf: none).

    Strictly: every rule, the time within the budget and the loss within the target in at
    least ``S - allowed`` scenarios, all without tolerance, so the plan is feasible for the
    MILP itself and the optimum of this selection costs at most this much.
    """
    ok = [plan_cost(instance, p) for p in plans
          if p is not None and tuple(p.datasets) == tuple(datasets) and not verify(instance, p, sc, strict=True)]
    return min(ok, default=math.inf)


def merge_extra(total: dict, part: dict) -> None:
    """Add one selection's strengthening figures to ``total``."""
    for key, val in part.items():
        if key in BOUNDS:
            total[key] = min(total.get(key, math.inf), val)  # nan stays nan
        elif key in SUMMED or key == "count_vectors":
            total[key] = total.get(key, 0) + val
        elif key in ("blocks", "bounds_exact"):  # what the selections' relaxations used: the largest
            total[key] = max(total.get(key, 0), val)


def run_saa(instance, solve_subset: SolveSubset, *, scenarios: int, seed: int, formulation: str,
            time_limit: float, cuts="mixing", bigm: str = "quantile", fixing: str = "on",
            root: bool = False) -> SolveResult:
    """Solve the SAA over every dataset selection with ``solve_subset`` and assemble the result.

    ``solve_subset(data, formulation=..., margin=..., time_limit=...)`` solves one
    selection. Statuses combine as documented in ``docs/formulations.md``: optimal only
    if every selection is optimal or infeasible. With ``root``, the LP relaxation of each
    selection's model is solved too (:mod:`~deplbench.formulations.saa.root`).
    """
    from dataclasses import replace

    from deplbench.formulations.saa.model import subset_data
    from deplbench.formulations.saa.root import lp_bound

    cuts = check_options(formulation, scenarios, cuts, bigm, fixing)
    strong: dict = {}
    t0 = time.perf_counter()
    subsets = dataset_subsets(instance)
    sc = sample_scenarios(instance, scenarios, seed)
    # shared preparation (sampling, coefficients, cuts) is kept apart from the model build,
    # so that build_s compares the modelling layers (Pyomo vs matrices) alone
    prep_s = time.perf_counter() - t0
    # the registry certifies the plan on the same sample after the method: keep its time (about
    # the sampling's) and a little more out of the budget, so the whole solve ends in the limit
    budget = max(time_limit - prep_s - CERTIFY_SHARE * time_limit, 0.5 * time_limit)
    build_s = solve_s = 0.0
    subs: list[SubResult] = []
    margin_used = 0.0
    known = heuristic_start(instance, sc, t0 + max(0.1 * budget, min(2.0, 0.3 * budget)))  # an incumbent, early
    for ds in subsets:
        left = budget - (time.perf_counter() - t0)
        if left <= 0:
            subs.append(SubResult(Status.TIMEOUT, message="time limit reached before this selection"))
            continue
        tb = time.perf_counter()
        raw = subset_data(instance, ds, sc)
        early = _early_start(instance, raw, tb + 0.2 * left)  # before the cuts: a plan to return on a stop
        data, part = prepare(raw, cuts=cuts, bigm=bigm, fixing=fixing, deadline=t0 + budget,
                             cap=cap_of(instance, (early, known), ds, sc))
        if data.start is None and early is not None:
            data = replace(data, start=early)  # the plan mip_start would enumerate again
        merge_extra(strong, part)
        prep_s += time.perf_counter() - tb
        if data.start is not None:  # the strengthening's start plan: an incumbent for every backend
            offer(data.start, plan_cost(instance, data.start), source="start plan")
        if root:
            tr = time.perf_counter()
            left = budget - (tr - t0)  # the LP never takes more than half of what the MILP has left
            rb = lp_bound(data, min(10.0, max(1.0, 0.2 * left), 0.5 * left)) if left > 2 * MIN_SOLVE_S else None
            prev = strong.get("root_bound", math.inf)  # nan (a selection's LP unsolved) stays nan
            strong["root_bound"] = math.nan if rb is None or math.isnan(prev) else min(prev, rb)
            strong["root_s"] = strong.get("root_s", 0.0) + time.perf_counter() - tr
        left = budget - (time.perf_counter() - t0)  # what the preparation left
        if left <= MIN_SOLVE_S:  # no build of a model that gets no time (at S = 20,000 seconds of it)
            subs.append(SubResult(Status.TIMEOUT, message="time limit reached before the MILP of this selection"))
            continue
        r = solve_subset(data, formulation=formulation, margin=0.0, time_limit=left)
        if r.plan is not None and verify(instance, r.plan, sc):
            # solver tolerances let the plan slip past the target: re-solve with a margin,
            # then the result is only feasible for the SAA (the margin excludes plans)
            why = verify(instance, r.plan, sc)
            build_s += r.build_s
            solve_s += r.solve_s
            margin_used = RETRY_MARGIN * max(1.0, abs(instance.loss.initial))
            left = max(budget - (time.perf_counter() - t0), 1e-3)
            # fixed scenarios hold at margin 0 only; the quantile big-M + margin stays valid
            r = solve_subset(replace(data, hard=None), formulation=formulation, margin=margin_used,
                             time_limit=left)
            # the margin excludes plans: a proof holds for the tightened model only
            r.status = {Status.OPTIMAL: Status.FEASIBLE, Status.INFEASIBLE: Status.UNKNOWN}.get(r.status, r.status)
            if r.plan is not None and verify(instance, r.plan, sc):
                r = SubResult(Status.ERROR, message=f"decoded plan fails the SAA check ({why})",
                              build_s=r.build_s, solve_s=r.solve_s, n_vars=r.n_vars, n_cons=r.n_cons)
        build_s += r.build_s
        solve_s += r.solve_s
        for key, val in r.extra.items():
            strong[key] = strong.get(key, 0) + val
        subs.append(r)
    return assemble(instance, subs, sc, build_s=build_s, solve_s=solve_s, extra={
        "formulation": formulation, "scenarios": scenarios, "n_subsets": len(subsets),
        "margin": margin_used, "cuts": cuts, "bigm": bigm, "fixing": fixing, "prep_s": prep_s, **strong})


#: the heuristic whose plan, if it meets the sample, is an SAA method's first incumbent
START_HEURISTIC = "depl"


def heuristic_start(instance, sc: Scenarios, deadline: float) -> Plan | None:
    """DepL's plan offered as the first incumbent when it meets the SAA constraint on ``sc`` (or None).

    Only offered (a plan to return on a limit or a Ctrl-C), never passed to the MILP: the
    solve itself is unchanged. DepL takes 0.05-0.3 s on ``random`` instances with 40 epochs,
    while the first SAA start plan can take minutes at 10,000 scenarios.
    """
    from deplbench.incumbent import muted
    from deplbench.registry import solve

    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    with muted():  # its own incumbents are the true problem's; this one is offered once checked
        res = solve(START_HEURISTIC, instance, {"time_limit": max(left, 1e-3)}, check=False)
    plan = res.plan  # a stopped DepL's plan too: the sample is the test here
    if plan is None or not plan.segments or verify(instance, plan, sc):
        return None
    offer(plan, plan_cost(instance, plan), source=f"{START_HEURISTIC} plan meeting the sample")
    return plan


def _early_start(instance, data, deadline: float) -> Plan | None:
    """The enumerated start plan of one selection, offered as incumbent at once (or None)."""
    from deplbench.formulations.saa.start import enumerated_start

    plan = enumerated_start(data, deadline)
    if plan is not None:
        offer(plan, plan_cost(instance, plan), source="start plan")
    return plan


def mip_start(model, deadline: float) -> np.ndarray | None:
    """Column vector of a start plan, or None.

    The plan of the block enumeration (``SubsetData.start``, cyclic ``per_run`` switch graphs)
    if the strengthening found one, else :func:`~deplbench.formulations.saa.start.enumerated_start`'s.
    """
    from deplbench.formulations.saa.start import encode, enumerated_start

    plan = model.data.start if model.data.start is not None else enumerated_start(model.data, deadline)
    if plan is None:
        return None
    try:
        x0 = encode(model, plan)
    except (ValueError, KeyError):
        return None
    # SAA-feasible: the incumbent if the MILP is stopped before it finds one (a limit, Ctrl-C)
    offer(plan, float(model.c @ x0 + model.offset), source="start plan")
    return x0




def assemble(instance, subs: list[SubResult], sc: Scenarios, *, build_s: float, solve_s: float,
             extra: dict) -> SolveResult:
    """Combine the selections' outcomes into one result (best plan, min bound, status)."""
    best: SubResult | None = None
    best_cost = math.inf
    for r in subs:
        if r.plan is not None:
            c = plan_cost(instance, r.plan)
            if c < best_cost:
                best, best_cost = r, c
    sts = {r.status for r in subs}
    bounds = [math.inf if r.status == Status.INFEASIBLE else (r.bound if r.bound is not None else 0.0)
              for r in subs]
    bound = min(bounds) if bounds else None
    if best is not None and bound is not None:
        bound = min(bound, best_cost)  # a bound above the incumbent is rounding noise
    msgs = "; ".join(r.message for r in subs if r.message)
    if Status.ERROR in sts:
        status = Status.ERROR
    elif sts <= {Status.OPTIMAL, Status.INFEASIBLE}:
        status = Status.OPTIMAL if Status.OPTIMAL in sts else Status.INFEASIBLE
    elif Status.MEMOUT in sts:
        status = Status.MEMOUT
    elif Status.TIMEOUT in sts:
        status = Status.TIMEOUT
    elif best is not None:  # some selection only feasible or unknown (not proven either way)
        status = Status.FEASIBLE
    elif Status.UNKNOWN in sts:  # no plan, and some selection neither solved nor proven infeasible
        status = Status.UNKNOWN
    else:
        status = Status.ERROR
    if status == Status.ERROR and not msgs:
        msgs = "no selection was solved and nothing was proven"
    if status == Status.INFEASIBLE:
        bound = None
    ex = dict(extra)
    if "root_bound" in ex:
        from deplbench.formulations.saa.root import root_gap

        if not math.isfinite(ex["root_bound"]):
            ex["root_bound"] = math.nan  # an infeasible LP has no gap to report
        rg = root_gap(best_cost if best is not None else None, ex["root_bound"])
        ex["root_gap"] = math.nan if rg is None else rg
    ex.update({"n_vars": int(sum(r.n_vars for r in subs)), "n_cons": int(sum(r.n_cons for r in subs)),
               "saa_allowed": int(sc.n - math.ceil(instance.loss.quantile * sc.n - 1e-9))})
    plan = best.plan if best is not None else None
    if plan is not None:
        ex["saa_violated"] = int(evaluate_on_scenarios(instance, plan, sc).n_violated)
    gap = None
    if plan is not None and bound is not None and math.isfinite(bound):
        gap = max(0.0, (best_cost - bound) / max(abs(best_cost), 1e-9))
    nodes = [r.nodes for r in subs if r.nodes is not None]
    return SolveResult(status, plan=plan, objective=best_cost if plan is not None else None,
                       bound=bound if bound is None or math.isfinite(bound) else None,
                       build_s=build_s, solve_s=solve_s, gap=gap,
                       nodes=int(np.sum(nodes)) if nodes else None, message=msgs, extra=ex)
