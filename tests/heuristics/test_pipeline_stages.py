"""DepL stages 1-3: brute-force references for each stage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.heuristics.allocation import allocate, mckp_fptas
from deplbench.heuristics.datasets.selection import objective, ranked_datasets, submodularity_report
from deplbench.heuristics.datasets.submodular import brute_force_minimum
from deplbench.heuristics.models.selection import (
    ExpandedGraph,
    cgf_surrogate,
    chernoff_arguments,
    mean_surrogate,
    noise_log_laplace,
    penalty_log_mgf,
)
from deplbench.instances.families.paper import load_paper
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.laws.noise import model_noise
from deplbench.instances.semantics import options, transfer_cost
from deplbench.registry import generate, solve


# ---- stage 1 ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_stage1_equals_brute_force(seed):
    inst = generate("random", {"datasets": 4, "epochs": 12, "noise_mode": "per_epoch"}, seed=seed)
    f = objective(inst)
    first, val = next(ranked_datasets(inst))
    _, best = brute_force_minimum(f, len(inst.datasets))
    # exact when f is submodular; the report says whether it is
    if submodularity_report(inst) <= 1e-9:
        assert val == pytest.approx(best)
    assert val >= best - 1e-9
    assert f(frozenset(inst.dataset_ids.index(d) for d in first)) == pytest.approx(val)


def test_stage1_single_dataset_needs_no_scoring():
    inst = load_paper("paper-alexnet-per_run-t9")
    assert next(ranked_datasets(inst)) == (("cifar10",), None)
    assert submodularity_report(inst) is None


# ---- stage 2 ---------------------------------------------------------------------------
def test_invgamma_laplace_closed_form_matches_quadrature():
    inst = load_paper("paper-alexnet-per_run-t9")
    noise = inst.models[0].noise
    d = model_noise(inst.models[0])
    u = (np.arange(200_000) + 0.5) / 200_000
    x = d.from_uniform(u)
    for s in (0.1, 1.0, 5.0):
        ref = math.log(np.mean(np.exp(-s * x)))
        assert float(noise_log_laplace(noise, np.array([s]))[0]) == pytest.approx(ref, rel=1e-3, abs=1e-6)


def test_penalty_mgf_matches_sampling():
    p = load_paper("paper-alexnet-per_run-t9").switches[0].penalty
    d = penalty_dist(p)
    x = d.from_uniform((np.arange(200_000) + 0.5) / 200_000)
    for t in (0.5, 3.0):
        assert penalty_log_mgf(p, t) == pytest.approx(math.log(np.mean(np.exp(t * x))), rel=1e-3)


@pytest.mark.parametrize("name", ["paper-alexnet-per_epoch-t9", "paper-mobilenet-per_run-t7"])
def test_stage2_paths_are_conservative(name):
    """A path reaching bucket j has true gain >= j buckets and its own allocation fits the budget."""
    inst = load_paper(name)
    ds = inst.dataset_ids
    opts = options(inst, ds)
    sur = cgf_surrogate(inst, 1.0, chernoff_arguments(inst, 1.0)[1])
    graph = ExpandedGraph(inst, ds, sur, 50, 1.0, opts)
    ids = inst.model_ids
    for j in graph.candidates()[-5:]:
        path = graph.path(j)
        gain, prev = 0.0, None
        for k, (m, _) in enumerate(path):
            i = ids.index(m)
            gain += sur.gain[i, k] - (sur.penalty[prev, i] if prev is not None and prev != i else 0.0)
            prev = i
        assert gain >= j * graph.step - 1e-9
        assert sum(opts.time[ids.index(m), o] for m, o in path) <= inst.time_budget
        assert sum(opts.cost[o] for _, o in path) == pytest.approx(graph.cost(j))


def test_candidates_are_plateau_tops():
    """One candidate per distinct least cost, at the highest bucket of its plateau; its path reaches it."""
    inst = generate("knapsack", {}, seed=4)  # integer costs: long plateaus
    ds = inst.dataset_ids
    opts = options(inst, ds)
    sur = cgf_surrogate(inst, 1.0, chernoff_arguments(inst, 1.0)[1])
    graph = ExpandedGraph(inst, ds, sur, 1000, 1.0, opts)
    cands = graph.candidates()
    costs = [graph.cost(j) for j in cands]
    assert costs == sorted(set(costs))
    for j in cands:
        assert j == graph.L or graph.cost(j + 1) > graph.cost(j)
    finite = [j for j in range(graph.L + 1) if math.isfinite(graph.cost(j))]
    assert set(costs) == {graph.cost(j) for j in finite}
    # the requirement bucket itself is reached at cost 4 (3 x item0 + item3: value 73 >= 72.5)
    assert cands[-1] == graph.L and graph.cost(graph.L) == 4.0
    ids = inst.model_ids
    path = graph.path(cands[-1])
    assert sum(sur.gain[ids.index(m), k] for k, (m, _) in enumerate(path)) >= sur.requirement


def test_mean_surrogate_is_the_expected_loss():
    from deplbench.instances.evaluator.loss import loss_terms

    inst = load_paper("paper-alexnet-per_run-t9")
    sur = mean_surrogate(inst, 1.0)
    seq = ["fast-unsteady"] * 5 + ["intermediate"] * 7
    ids = inst.model_ids
    gain = sum(sur.gain[ids.index(m), k] for k, m in enumerate(seq)) - sur.penalty[0, 1]
    assert inst.loss.initial - gain == pytest.approx(loss_terms(inst, seq, 1.0).mean, rel=1e-9)


# ---- stage 3 ---------------------------------------------------------------------------
def exact_mckp(cost, time, budget):
    best = math.inf
    for ch in itertools.product(range(cost.shape[1]), repeat=cost.shape[0]):
        rows = np.arange(cost.shape[0])
        if time[rows, ch].sum() <= budget:
            best = min(best, cost[rows, ch].sum())
    return best


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("eps", [0.5, 0.2, 0.05])
def test_mckp_fptas_ratio(seed, eps):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 6)), int(rng.integers(2, 5))
    time = rng.uniform(1, 10, (n, k))
    cost = 40.0 / time * rng.uniform(0.7, 1.3, (n, k))
    budget = float(time.min(axis=1).sum() + rng.uniform(0, 0.6) * (time.max(axis=1) - time.min(axis=1)).sum())
    opt = exact_mckp(cost, time, budget)
    res = mckp_fptas(cost, time, budget, eps)
    assert res is not None
    choice, c = res
    rows = np.arange(n)
    assert time[rows, choice].sum() <= budget
    assert c == pytest.approx(cost[rows, choice].sum())
    assert opt - 1e-9 <= c <= (1 + eps) * opt + 1e-9


def test_mckp_infeasible_returns_none():
    assert mckp_fptas(np.ones((2, 2)), np.full((2, 2), 5.0), 9.0, 0.1) is None


@pytest.mark.parametrize("seed", [0, 3])
def test_allocate_with_transfer_costs_within_ratio(seed):
    inst = generate("random", {"clusters": 2, "levels": 3, "transfer": 40.0, "epochs": 6}, seed=seed)
    ds = inst.dataset_ids
    opts = options(inst, ds)
    models = [inst.model_ids[0]] * 3 + [inst.model_ids[-1]] * 2 if inst.allowed(
        inst.model_ids[0], inst.model_ids[-1]) else [inst.model_ids[0]] * 5
    rows = [inst.model_ids.index(m) for m in models]
    best = math.inf
    for ch in itertools.product(range(len(opts)), repeat=len(models)):
        t = sum(opts.time[r, o] for r, o in zip(rows, ch, strict=True))
        if t <= inst.time_budget:
            used = {opts.clusters[o] for o in ch}
            best = min(best, sum(opts.cost[o] for o in ch) + transfer_cost(inst, ds, used))
    eps = 0.05
    alloc = allocate(inst, ds, models, eps, opts)
    if math.isinf(best):
        assert alloc is None
        return
    used = {opts.clusters[o] for o in alloc.choice}
    true_cost = sum(opts.cost[o] for o in alloc.choice) + transfer_cost(inst, ds, used)
    assert alloc.time <= inst.time_budget
    assert best - 1e-9 <= true_cost <= alloc.cost + 1e-9 <= (1 + eps) * best + 1e-6


@pytest.mark.parametrize(("spread", "quantile", "misses"), [(0.01, 0.95, 0), (1.0, 0.95, 1)])
def test_best_exp_records_whether_its_expectation_plan_misses_the_quantile(spread, quantile, misses):
    # nearly deterministic noise: the plan meeting the expected target meets the quantile; wide noise: not
    inst = generate("quantile", {"models": 2, "epochs": 8, "spread": spread, "quantile": quantile}, seed=0)
    res = solve("best-exp", inst, {"eta": 50})
    assert res.extra["exp_plan_misses"] == misses
    assert "exp_plan_misses" not in solve("depl", inst, {"eta": 50}).extra  # depl plans for the quantile


def test_stage_cpu_times_are_recorded_beside_the_wall_times():
    inst = generate("quantile", {"models": 2, "epochs": 8}, seed=1)
    res = solve("depl", inst, {"eta": 50})
    cpu = [res.extra[f"cpu_{k}_s"] for k in ("stage1", "stage2", "stage3", "certify")]
    wall = [res.extra[f"t_{k}_s"] for k in ("stage1", "stage2", "stage3", "certify")]
    assert all(c >= 0 for c in cpu) and sum(cpu) > 0
    assert sum(cpu) <= sum(wall) + 0.01  # a thread's CPU time cannot exceed the wall time around it
