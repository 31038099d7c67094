"""The SAA backend contract (formulations/saa/contract.py), checked on every registered backend.

The backends are the registry's (``register_solver(..., backend=solve_subset)``,
:func:`~deplbench.registry.backend_names`): a new one is enrolled by registering it.
"""

from __future__ import annotations

import importlib
import time

import pytest

from deplbench.formulations.saa.contract import (
    BackendSolve,
    SolveSubset,
    SubResult,
    keywords,
    mismatches,
)
from deplbench.registry import backend_names, get_solver, register_solver
from deplbench.results import Status

from builders import tiny_dict

BACKENDS = backend_names()


def test_backends_are_listed():
    """Each backend is an ``saa`` method whose ``solve_subset`` lives in the module that registers it."""
    from deplbench.registry import SOLVER_MODULES

    assert BACKENDS and len(set(BACKENDS)) == len(BACKENDS)
    for name in BACKENDS:
        spec = get_solver(name)
        assert spec.kind == "saa" and spec.backend.__module__ == SOLVER_MODULES[name], name


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_conforms_to_the_protocol(name):
    """Every keyword of BackendSolve, annotated alike; nothing else required; returns SubResult."""
    func = get_solver(name).backend
    assert mismatches(func) == [], name


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_status_map(name):
    """A STATUS_MAP beside the call: the solver's codes by name (str), each mapped to a Status."""
    module = importlib.import_module(get_solver(name).backend.__module__)
    table = module.STATUS_MAP
    assert table and all(isinstance(k, str) for k in table), name
    assert all(isinstance(v, Status) for v in table.values()), name
    assert {Status.OPTIMAL, Status.INFEASIBLE, Status.TIMEOUT} <= set(table.values()), name


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_solves_one_selection(name):
    """Called as the protocol says on one selection: a SubResult, with the plan decoded and sized."""
    from deplbench.formulations.saa.common import dataset_subsets
    from deplbench.formulations.saa.model import subset_data
    from deplbench.instances.io import instance_from_dict
    from deplbench.instances.scenarios import sample_scenarios

    inst = instance_from_dict(tiny_dict("per_run", "constant"))
    sc = sample_scenarios(inst, 10, 0)
    data = subset_data(inst, dataset_subsets(inst)[0], sc)
    func: BackendSolve = get_solver(name).backend
    t0 = time.perf_counter()
    r = func(data, formulation="aggregated", margin=0.0, time_limit=30.0, mip_gap=0.0, threads=1, seed=0,
             start=True)
    assert isinstance(r, SubResult) and isinstance(r.status, Status), name
    assert r.status in (Status.OPTIMAL, Status.INFEASIBLE, Status.FEASIBLE), (name, r.status, r.message)
    assert (r.plan is not None) == (r.status != Status.INFEASIBLE), name
    assert r.n_vars > 0 and r.n_cons > 0 and r.build_s >= 0.0 and r.solve_s >= 0.0, name
    assert r.build_s + r.solve_s <= time.perf_counter() - t0 + 1e-6, name
    if r.status == Status.OPTIMAL:
        assert r.bound is None or r.bound <= r.objective * (1 + 1e-6) + 1e-9, name


def test_mismatches_names_each_breach():
    def missing(data, *, formulation: str, margin: float, time_limit: float) -> SubResult: ...

    def retyped(data, *, formulation: str, margin: int, time_limit: float, mip_gap: float, threads: int,
                seed: int, start: bool) -> SubResult: ...

    def extra(data, *, formulation: str, margin: float, time_limit: float, mip_gap: float, threads: int,
              seed: int, start: bool, tokens: list) -> SubResult: ...

    def returns(data, *, formulation: str, margin: float, time_limit: float, mip_gap: float,
                threads: int, seed: int, start: bool) -> dict: ...

    assert mismatches(missing, SolveSubset) == []
    assert {w.split("'")[1] for w in mismatches(missing)} == {"mip_gap", "threads", "seed", "start"}
    assert mismatches(retyped) == ["'margin' is annotated 'int', the contract says 'float'"]
    assert mismatches(extra) == ["'tokens' is not in the contract and has no default"]
    assert mismatches(returns) == ["returns 'dict', the contract says 'SubResult'"]
    assert list(keywords()) == ["formulation", "margin", "time_limit", "mip_gap", "threads", "seed", "start"]


def test_only_an_saa_method_has_a_backend():
    with pytest.raises(ValueError, match="saa"):
        register_solver("not-saa", kind="heuristic", backend=lambda data, **kw: None)
