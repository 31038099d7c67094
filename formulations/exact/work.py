"""Deterministic work of the exact methods: a linear model of their own counters, in work units.

A wall-clock limit makes a proof depend on the machine and its load; a deterministic one does
not (CPLEX's ticks, Gurobi's work units). The work of a run of ``exact`` or ``bruteforce`` is::

    work = intercept + sum(weight[k] * stats[k])        (work units; 1,000 units ~ 1 s)

over the counters the method reports (``SolveResult.extra``), with non-negative weights fitted
on CPU seconds of the suite's reference machine (2 cores; ``python -m
deplbench.benchmarks.perf.work_model``, fit and errors in ``docs/library.md``). The counters
are deterministic (one thread, fixed seeds), so the work is too: ``exact``'s ``max_work`` stops
on it and the library grades its tiers by it. The weights belong to the code version: a change
of the search that moves its speed refits them.

May import: nothing of ``deplbench`` (arithmetic on a counter dict).
"""

from __future__ import annotations

from collections.abc import Mapping

#: work units per second of the reference machine's CPU
UNITS_PER_S = 1000.0

#: work units per counter unit, per method (``intercept``: units per run); fitted, see the module doc
WORK_MODEL: dict[str, dict[str, float]] = {
    "exact": {"intercept": 55.47, "nodes": 0.06169, "sequences": 16.29, "brackets": 2.596, "milp_allocations": 4.603,
              "cover_brackets": 2.106, "supports": 0.1687, "support_cells": 0.000508},
    "bruteforce": {"intercept": 0.0, "sequences": 0.007517, "count_vectors": 0.009185, "screened": 0.03466,
                   "coarse_brackets": 0.4792, "allocations": 0.1566, "milp_allocations": 24.85},
}
#: the counters each method's fit may use (a counter left out weighs 0)
FEATURES: dict[str, tuple[str, ...]] = {
    "exact": ("nodes", "count_vectors", "sequences", "certified", "brackets", "cantelli", "allocations",
              "milp_allocations", "pruned_region", "cover_brackets", "supports", "support_cells"),
    "bruteforce": ("sequences", "count_vectors", "screened", "coarse_brackets", "certified", "allocations",
                   "milp_allocations"),
}


def work_units(method: str, stats: Mapping[str, object]) -> float:
    """The work of ``method``'s run with counters ``stats`` (0 for a method without a model)."""
    model = WORK_MODEL.get(method)
    if not model:
        return 0.0
    total = model.get("intercept", 0.0)
    for key, weight in model.items():
        if key != "intercept":
            value = stats.get(key, 0)
            if isinstance(value, (int, float)):
                total += weight * value
    return total


def counters(method: str, stats: Mapping[str, object] | None) -> dict[str, float]:
    """The counters of ``stats`` that the work model of ``method`` may use (for a fit's record)."""
    stats = stats or {}
    return {k: float(stats[k]) for k in FEATURES.get(method, ()) if isinstance(stats.get(k), (int, float))}
