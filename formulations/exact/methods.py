"""The declarations of ``exact`` and ``bruteforce``: parameters, outputs, test parameters, entries.

Light on purpose: ``deplbench solvers`` lists both methods without importing the search (which
imports the evaluator and scipy); the registry imports :mod:`.exact` or :mod:`.bruteforce` on the
first call (:class:`~deplbench.registry.Entry`).

May import: ``deplbench.params``, ``deplbench.registry``. Imported by: the registry (by module name),
``formulations.exact.exact`` and ``formulations.exact.bruteforce`` (their defaults).
"""

from __future__ import annotations

import math

from deplbench.params import Param
from deplbench.registry import register_solver
from deplbench.results import SolveResult, Status

CLAIM = "optimal among plans certified at the evaluator's tolerance"
DEFAULT_MAX_NODES = 2_000_000
DEFAULT_MAX_SEQUENCES = 200_000

PARAMS = (
    Param("max_nodes", int, DEFAULT_MAX_NODES, "most heap entries kept (memory bound); beyond it: memout with gap",
          low=1, high=10**9),
    Param("max_work", int, 0, "deterministic work limit in work units, about 1 ms of the reference machine's CPU "
          "each (formulations/exact/work.py; 0: none); beyond it: timeout with gap", low=0, high=10**12),
    Param("incumbent", bool, True, "start from the certified depl-plus plan and the cheapest certified one- and "
          "two-run sequences (prunes from the start)"),
    Param("region", bool, True, "region keys: bound whole lattice subtrees under a necessary quantile condition"),
    Param("cover", bool, True, "per_run: cover conditions per support, certified by exact brackets of the sum of "
          "the models' noise (docs/exact-proofs.md, Lemma 12)"),
    Param("positions", bool, True, "position-aware bounds when every model has the same progress shape: later "
          "models' epochs are placed after the earlier ones' (docs/exact-proofs.md, Lemmas 8 and 9)"),
)
OUTPUTS = {
    "nodes": "sequence-search nodes", "count_vectors": "count vectors popped from the heap",
    "pruned_bound": "nodes cut by the cost bound", "pruned_dominance": "relaxations or sequences cut by dominance",
    "pruned_quantile": "relaxations or sequences refuted by a quantile bound",
    "pruned_walk": "prefixes whose remaining models are unreachable", "brackets": "coarse certified brackets",
    "cantelli": "Cantelli tests", "product": "refutations by the product bound",
    "sequences": "complete sequences reached", "certified": "evaluator decisions",
    "allocations": "exact allocations", "milp_allocations": "exact allocations by MILP",
    "incumbent_cost": "cost of the depl-plus incumbent",
    "block_cost": "cost of the best block-scan plan that improved the incumbent", "peak_mem_mb": "peak resident memory (MB)",
    "unproven_rejections": "sequences rejected while their finest bracket straddled the target (not proven infeasible)",
    "pruned_region": "lattice subtrees cut by their region key", "root_bound": "least root region key (global bound)",
    "cover_brackets": "certified brackets spent on cover conditions (Lemma 12)",
    "cover_tangents": "cover conditions added at the search's own directions (beyond each support's first)",
    "cover_prefixes": "sequence prefixes refuted by a cover condition with the remaining epochs placed",
    "supports": "support minimisations of the region keys (their set-up and refinements)",
    "support_cells": "entries of the (increments x multipliers) arrays of those minimisations",
    "work": "deterministic work (units of about 1 ms of the reference machine's CPU; formulations/exact/work.py)",
}
DESCRIPTION = ("certified optimum of the true problem: lazy best-first branch-and-bound over (datasets, "
               "clusters, epoch counts) with quantile bounds (optimal among plans certified at the "
               "evaluator's tolerance; timeout gives the certified gap)")
#: imported before the clock starts: the exact allocations' MILPs and the compiled term lattices
#: (the evaluator's same bits, ``lattice_jit``; DepL imports them too); ``exact`` adds its incumbent's DepL
RUN_IMPORTS = ("highspy", "deplbench.instances.scenarios", "deplbench.instances.evaluator.lattice_jit")
TEST_PARAMS = {"time_limit": 300.0}  # generous: the conformance checks compare two runs on a loaded machine


register_solver("exact", kind="exact", params=PARAMS, outputs=OUTPUTS, test_params=TEST_PARAMS,
                description=DESCRIPTION, entry="deplbench.formulations.exact.exact:solve_exact",
                imports=RUN_IMPORTS + ("deplbench.heuristics.pipeline", "deplbench.heuristics.depl_plus"))

register_solver("bruteforce", kind="exact",
                params=(Param("max_sequences", int, DEFAULT_MAX_SEQUENCES, "refuse above this many model sequences",
                              low=1, high=10**9),),
                description="exact optimum by enumeration of model sequences and exact allocation "
                            "(optimal among plans certified at the evaluator's tolerance; the reference "
                            "method of the paper instances, see `exact` for the branch-and-bound)",
                entry="deplbench.formulations.exact.bruteforce:solve_bruteforce", imports=RUN_IMPORTS)


def proof_result(plan, cost: float | None, undecided: float, extra: dict, nodes: int | None = None) -> SolveResult:
    """The result of a finished exact search, saying what was proven.

    ``undecided`` is the least cost lower bound of a count vector holding a sequence that was
    rejected only because its finest certified bracket still straddled the target (``inf``:
    none). Such a sequence may be feasible, so the claim holds only below it: ``optimal``
    (``infeasible``) when nothing undecided is cheaper than the plan (when nothing is undecided),
    else ``feasible`` (``unknown``) with the bound ``min(cost, undecided)`` and its gap.
    """
    if plan is None:
        if math.isinf(undecided):
            return SolveResult(Status.INFEASIBLE, message="no plan is certified feasible (" + CLAIM + ")",
                               extra=extra, nodes=nodes)
        return SolveResult(Status.UNKNOWN, bound=undecided, nodes=nodes, extra=extra, message=(
            "no plan is certified feasible, but a sequence was rejected on an undecided bracket: "
            "infeasibility not proven"))
    if undecided < cost:
        gap = (cost - undecided) / max(abs(cost), 1e-9)
        return SolveResult(Status.FEASIBLE, plan, objective=cost, bound=undecided, gap=gap, nodes=nodes, extra=extra,
                           message="a cheaper sequence was rejected on an undecided bracket: optimality not proven")
    return SolveResult(Status.OPTIMAL, plan, objective=cost, bound=cost, gap=0.0, message=CLAIM, extra=extra,
                       nodes=nodes)
