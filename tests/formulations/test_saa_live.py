"""Live count vectors and the cost cap of the block enumeration (``formulations/saa``).

The dynamic programme limited to live count vectors and run in scenario chunks equals the full
one; with a cap (the cost of a plan that meets the sample strictly) every SAA-feasible plan of
cost at most the cap still satisfies every row of the strengthened model, and the MILP finds
the optimum found by brute force; ``cap_of`` accepts only strictly feasible plans of the
selection.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from test_blocks import sequences
from test_saa_milp import enumerate_saa, small

from deplbench.formulations.backends.milp_highs_direct import solve_subset
from deplbench.formulations.saa import blocks as saa_blocks
from deplbench.formulations.saa.common import cap_of, plan_cost, verify
from deplbench.formulations.saa.cuts import quantile_cut_sets
from deplbench.formulations.saa.model import build, subset_data
from deplbench.formulations.saa.start import encode
from deplbench.formulations.saa.strength import count_bounds, count_vectors, strengthen
from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios
from deplbench.results import Status


def feasible_plans(inst, sc, opts=None):
    """(cost, plan) of the plans of selection d1 that meet the rules and the SAA on ``sc``.

    Every plan, or those whose epochs all use the (cluster, level) options ``opts``.
    """
    opts = opts or [(c.id, f) for c in inst.clusters for f in c.levels]
    out = []
    for runs in sequences(inst):
        models = [inst.model_ids[m] for m, n in runs for _ in range(n)]
        for alloc in itertools.product(opts, repeat=len(models)):
            plan = Plan.from_epochs(("d1",), [(m, c, f) for m, (c, f) in zip(models, alloc, strict=True)])
            if not verify(inst, plan, sc):
                out.append((plan_cost(inst, plan), plan))
    return sorted(out, key=lambda cp: cp[0])


@pytest.mark.parametrize("B", [1, 2])
def test_long_bounds_live_and_chunked_equal_the_full_programme(B, monkeypatch):
    inst = small(K=6, neg_penalty=True)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 25, 3))
    Q = count_vectors(3, 6)
    least, most = saa_blocks.long_bounds(data, Q, B)
    live = np.random.default_rng(B).random(len(Q)) < 0.3
    monkeypatch.setattr(saa_blocks, "DP_SCENARIOS", 7)  # four passes over the 25 scenarios
    lo2, hi2 = saa_blocks.long_bounds(data, Q, B, live)
    assert np.array_equal(lo2[:, live], least[:, live]) and np.array_equal(hi2[:, live], most[:, live])
    assert np.all(lo2[:, ~live] == np.inf) and np.all(hi2[:, ~live] == -np.inf)
    assert np.isfinite(least[:, live]).any()  # the comparison is not between empty columns


@pytest.mark.parametrize("rank", [0.0, 0.5])
def test_rows_hold_for_every_plan_within_the_cap(rank, monkeypatch):
    monkeypatch.setattr(saa_blocks, "MAX_BLOCK_SEQUENCES", 30)  # few blocks: relaxed columns too
    inst = small(K=5, target=7.0)
    sc = sample_scenarios(inst, 30, 1)
    plans = feasible_plans(inst, sc, [("A", 1.0), ("B", 0.25)])  # a subset of the plans: fewer to try
    assert len(plans) >= 2
    cap = plans[int(rank * (len(plans) - 1))][0]
    data = subset_data(inst, ("d1",), sc)
    full = count_bounds(data)
    capped = count_bounds(data, cap=cap)
    assert capped.blocks == full.blocks and 1 <= full.blocks < 5
    assert np.all(capped.h <= full.h + 1e-12)  # dead vectors enter h through weaker bounds
    data, ex = strengthen(replace(data, cut_sets=quantile_cut_sets(data)), bigm="quantile", fixing="on",
                          cuts="mixing", cap=cap)
    model = build(data, "aggregated")
    within = [p for c, p in plans if c <= cap]
    assert within
    for plan in within:
        act = model.A @ encode(model, plan)
        assert np.all(act <= model.row_ub + 1e-7) and np.all(act >= model.row_lb - 1e-7)
        assert np.all(evaluate_on_scenarios(inst, plan, sc).losses - inst.loss.target <= data.bigm_q + 1e-9)
    assert ex["bound_count"] <= plans[0][0] * (1 + 1e-9)


def test_the_capped_model_finds_the_enumerated_optimum(monkeypatch):
    monkeypatch.setattr(saa_blocks, "MAX_BLOCK_SEQUENCES", 30)
    inst = small(noise_mode="per_run", target=6.0, budget=30.0, K=4)
    opt = enumerate_saa(inst, 30, 1)
    sc = sample_scenarios(inst, 30, 1)
    best = feasible_plans(inst, sc)
    data = subset_data(inst, ("d1",), sc)
    data, _ = strengthen(replace(data, cut_sets=quantile_cut_sets(data)), bigm="quantile", fixing="on",
                         cuts="mixing", cap=best[0][0])  # the cap at the optimum itself: nothing to spare
    r = solve_subset(data, formulation="aggregated", margin=0.0, time_limit=60.0, mip_gap=0.0, threads=1, seed=0)
    assert r.status == Status.OPTIMAL and plan_cost(inst, r.plan) == pytest.approx(best[0][0], rel=1e-9)
    assert best[0][0] >= opt * (1 - 1e-9)  # selection d1's optimum is no cheaper than the overall one


def test_cap_of_takes_only_strictly_feasible_plans_of_the_selection():
    inst = small(K=4, target=6.0)
    sc = sample_scenarios(inst, 30, 1)
    plans = feasible_plans(inst, sc, [("A", 1.0), ("B", 0.25)])
    cost, plan = plans[0]
    assert cap_of(inst, (None, plan), ("d1",), sc) == pytest.approx(cost)
    assert cap_of(inst, (plan,), ("d2",), sc) == float("inf")  # another selection's plan
    losses = evaluate_on_scenarios(inst, plan, sc).losses
    # a target that this plan meets within the registry's 1e-9 but not strictly
    k = sc.n - evaluate_on_scenarios(inst, plan, sc).allowed  # scenarios that must hold
    edge = np.sort(losses)[k - 1] - 5e-10
    tight = small(K=4, target=float(edge))
    sc = sample_scenarios(tight, 30, 1)
    assert np.array_equal(evaluate_on_scenarios(tight, plan, sc).losses, losses)  # the sample is the same
    assert verify(tight, plan, sc) == ""
    assert cap_of(tight, (plan,), ("d1",), sc) == float("inf")


def test_a_screen_cut_short_gives_no_bounds(monkeypatch):
    """Past the deadline the relaxation is refused, never built on an incomplete screen."""
    import time

    from deplbench.formulations.saa import strength

    inst = small(K=5, target=7.0)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 30, 1))
    assert count_bounds(data, deadline=time.perf_counter() - 1.0) is None
    calls = []

    def screen(*args):
        calls.append(args)
        return None  # as when the deadline passes inside the screen

    monkeypatch.setattr(strength, "_screen", screen)
    assert count_bounds(data) is None and calls
