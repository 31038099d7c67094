"""Tiny methods that exercise the harness (tests and ``bench_harness.py``), not DepL solvers.

They are not listed in :data:`deplbench.registry.SOLVER_MODULES`; a config names
them with ``module = "deplbench.benchmarks.harness_testing"``, which every run
process (local or on a Dask worker) can import.

* ``harness-ok``: the ``random`` family's reference plan (feasible by construction);
* ``harness-saa``: the same plan under kind ``saa`` (so it gets the out-of-sample check);
* ``harness-sleep``: sleeps ``seconds`` ignoring its time limit, then returns the plan;
* ``harness-busy``: burns CPU for ``seconds`` (a CPU-bound grid), then returns the plan;
* ``harness-raise``: raises;
* ``harness-hog``: allocates and touches ``mb`` megabytes.
"""

from __future__ import annotations

import time

import numpy as np

from deplbench.instances.plan import Plan, Segment
from deplbench.registry import register_solver
from deplbench.results import SolveResult, Status

MODULE = __name__


def reference_plan(instance) -> Plan:
    """The reference plan a ``random`` instance carries in its metadata."""
    meta = instance.metadata
    return Plan(tuple(meta["reference_datasets"]), tuple(Segment(**s) for s in meta["reference_plan"]))


def _ok(instance) -> SolveResult:
    plan = reference_plan(instance)
    return SolveResult(Status.FEASIBLE, plan, objective=float(instance.metadata["reference_cost"]),
                       extra={"note": "reference plan"})


@register_solver("harness-ok", kind="heuristic", description="returns the reference plan")
def solve_ok(instance, *, time_limit, seed, threads) -> SolveResult:
    return _ok(instance)


@register_solver("harness-saa", kind="saa", defaults={"scenarios": 200},
                 description="the reference plan, as a sampled method")
def solve_saa(instance, *, scenarios, time_limit, seed, threads) -> SolveResult:
    return _ok(instance)


@register_solver("harness-sleep", kind="heuristic", defaults={"seconds": 1.0},
                 description="sleeps, ignoring its time limit")
def solve_sleep(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    time.sleep(seconds)
    return _ok(instance)


@register_solver("harness-busy", kind="heuristic", defaults={"seconds": 0.5},
                 description="burns CPU for a while")
def solve_busy(instance, *, seconds, time_limit, seed, threads) -> SolveResult:
    end = time.process_time() + seconds  # CPU time, so that a busy machine does not shorten the work
    x = 0
    while time.process_time() < end:
        for i in range(10_000):
            x += i * i
    return _ok(instance)


@register_solver("harness-raise", kind="heuristic", description="raises an exception")
def solve_raise(instance, *, time_limit, seed, threads) -> SolveResult:
    raise RuntimeError("boom: deliberate failure")


@register_solver("harness-hog", kind="heuristic", defaults={"mb": 1024.0},
                 description="allocates memory")
def solve_hog(instance, *, mb, time_limit, seed, threads) -> SolveResult:
    block = np.ones(int(mb * 2**20 / 8))  # touched pages: resident, not just reserved
    return SolveResult(Status.FEASIBLE, reference_plan(instance), extra={"sum": float(block[-1])})
