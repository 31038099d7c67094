"""Issue 16: DepL's per-stage timings and the dataset search of ``depl-plus``."""

from __future__ import annotations

import math

import pytest

from deplbench.errors import InputError
from deplbench.instances.families.paper import load_paper
from deplbench.registry import generate, solve

MULTI = {"datasets": 3, "models": 2, "epochs": 15, "transfer": 20.0, "density": 0.0}


def test_stage_timings_and_graph_size_recorded():
    res = solve("depl", load_paper("paper-alexnet-per_run-t9"))
    x = res.extra
    for key in ("t_stage1_s", "t_stage2_s", "t_stage3_s", "t_certify_s"):
        assert isinstance(x[key], float) and x[key] >= 0.0, key
    assert x["t_stage2_s"] > 0 and x["t_stage3_s"] > 0 and x["t_certify_s"] > 0
    # the stages are parts of the method's own time
    assert sum(x[k] for k in ("t_stage1_s", "t_stage2_s", "t_stage3_s", "t_certify_s")) <= res.runtime_s
    assert x["loop_iterations"] >= 1 and x["graphs_built"] >= 1
    assert x["graph_vertices"] > 0 and x["graph_edges"] > x["graph_vertices"]


def test_dataset_search_finds_the_optimum_where_stage1_misses():
    """Seed 4: stage 1 picks d1 alone (1.049 x the optimum); the optimum uses d0 and d1."""
    inst = generate("random", MULTI, seed=4)
    opt = solve("bruteforce", inst)
    plain = solve("depl-plus", inst)
    found = solve("depl-plus", inst, {"datasets": "search"})
    assert found.status.has_solution and found.evaluation.feasible
    assert found.extra["sets_evaluated"] == 7  # every non-empty subset of 3 datasets
    assert set(found.plan.datasets) == set(opt.plan.datasets) != set(plain.plan.datasets)
    assert found.evaluation.cost <= 1.01 * opt.evaluation.cost < plain.evaluation.cost


def test_dataset_local_search_beyond_exhaustive():
    inst = generate("random", {"datasets": 5, "models": 2, "epochs": 10, "transfer": 5.0, "density": 0.0}, seed=1)
    found = solve("depl-plus", inst, {"datasets": "search", "eta": 60})
    plain = solve("depl-plus", inst, {"eta": 60})
    assert found.status.has_solution
    assert 1 < found.extra["sets_evaluated"] < 31  # a local search, not the 31 subsets
    assert found.evaluation.cost <= plain.evaluation.cost + 1e-9 * abs(plain.evaluation.cost)
    assert math.isfinite(found.evaluation.cost)


def test_unknown_dataset_mode_is_input_error():
    with pytest.raises(InputError, match="datasets must be one of"):
        solve("depl-plus", load_paper("paper-alexnet-per_run-t9"), {"datasets": "all"})
