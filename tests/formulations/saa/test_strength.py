"""Quantile big-M, scenario fixing, objective cut and mixing rows keep the SAA optimum.

Checked three ways: (1) every SAA-feasible plan of a tiny instance, encoded, satisfies every
row of the strengthened model (so nothing valid is cut off); (2) each option solves to the
enumerated optimum on tiny instances (acyclic and cyclic switch graphs, both noise modes);
(3) on a paper and a random instance (small S) each option and each backend finds the plain
formulation's optimum to 1e-6 relative.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from test_saa_milp import STOCHASTIC, enumerate_saa, run, small

from deplbench.formulations.saa.common import plan_cost
from deplbench.formulations.saa.cuts import quantile_cut_sets
from deplbench.formulations.saa.model import build, subset_data
from deplbench.formulations.saa.start import encode
from deplbench.formulations.saa.strength import count_bounds, count_vectors, star_cut, strengthen
from deplbench.instances.io import instance_from_dict
from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios
from deplbench.instances.semantics import within_budget
from deplbench.registry import get_family
from deplbench.results import Status

OPTIONS = [dict(bigm="quantile", fixing="off", cuts="none"), dict(bigm="quantile", fixing="on", cuts="none"),
           dict(bigm="worst", fixing="off", cuts="mixing"), dict(bigm="quantile", fixing="on", cuts="mixing")]


def acyclic(**kw):
    """``small`` without the switch small -> mid: an acyclic switch graph (exact sequences)."""
    d = small(**kw).to_json_dict()
    d["switches"] = [s for s in d["switches"] if (s["from"], s["to"]) != ("small", "mid")]
    d["name"] = "small-acyclic"
    return instance_from_dict(d)


def test_count_vectors():
    Q = count_vectors(3, 4)
    assert len(Q) == math.comb(7, 3) - 1 and Q.sum(axis=1).min() == 1 and Q.sum(axis=1).max() == 4
    assert len({tuple(q) for q in Q}) == len(Q)


@pytest.mark.parametrize("graph", ["cyclic", "acyclic"])
@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_every_saa_feasible_plan_satisfies_the_strengthened_rows(mode, graph):
    make = small if graph == "cyclic" else acyclic
    inst = make(noise_mode=mode, K=4, neg_penalty=(mode == "per_epoch"), target=6.0)
    sc = sample_scenarios(inst, 30, 1)
    data = subset_data(inst, ("d1",), sc)
    data = replace(data, cut_sets=quantile_cut_sets(data))
    data, ex = strengthen(data, bigm="quantile", fixing="on", cuts="mixing")
    assert data.obj_rows and ex["bounds_exact"] == int(graph == "acyclic" and mode == "per_run")
    b = count_bounds(data)
    model = build(data, "aggregated")
    opts = [("A", 1.0), ("B", 0.25), ("A", 0.5)]
    n_ok = 0
    best = math.inf
    for K in range(1, 5):
        for models in itertools.product(inst.model_ids, repeat=K):
            if any(not inst.allowed(a, b) for a, b in zip(models, models[1:], strict=False)):
                continue
            for alloc in itertools.product(opts, repeat=min(K, 2)):
                alloc = (*alloc, *[alloc[-1]] * (K - len(alloc)))
                plan = Plan.from_epochs(("d1",), [(m, c, f) for m, (c, f) in zip(models, alloc, strict=True)])
                chk = evaluate_on_scenarios(inst, plan, sc)
                if not (chk.ok and within_budget(plan_cost_time(inst, plan), inst.time_budget)):
                    continue
                x = encode(model, plan)
                act = model.A @ x
                assert np.all(act <= model.row_ub + 1e-7) and np.all(act >= model.row_lb - 1e-7), models
                assert np.all(chk.losses - inst.loss.target <= data.bigm_q + 1e-9)  # quantile big-M
                best = min(best, plan_cost(inst, plan))
                n_ok += 1
    assert n_ok > 0
    assert b.bound_quantile <= best + 1e-6 and b.bound_count <= best + 1e-6


def plan_cost_time(inst, plan):
    from deplbench.instances.evaluator.evaluate import plan_costs

    return plan_costs(inst, plan)[2]


@pytest.mark.slow
@pytest.mark.parametrize("graph", ["cyclic", "acyclic"])
@pytest.mark.parametrize("case", list(STOCHASTIC))
def test_options_find_the_enumerated_optimum(case, graph):
    inst = (small if graph == "cyclic" else acyclic)(**STOCHASTIC[case])
    opt = enumerate_saa(inst, 30, 1)
    assert opt is not None
    for o in OPTIONS:
        res = run("milp-highs-direct", inst, **o)
        assert res.status == Status.OPTIMAL and res.objective == pytest.approx(opt, rel=1e-6), o
        assert res.extra["bound_quantile"] <= opt + 1e-6
        assert res.extra["bound_count"] <= opt + 1e-6
    for o in ({}, dict(bigm="worst", fixing="off", cuts="none")):  # branch-and-cut: lazy rows only
        res = run("milp-scip-bc", inst, **o)
        assert res.status == Status.OPTIMAL and res.objective == pytest.approx(opt, rel=1e-6), o


def test_star_cut_separation():
    h = np.array([10.0, 8.0, 6.0, 1.0, 0.5])
    v = np.array([0.5, 0.2, 0.6, 0.0, 0.0])
    cut = star_cut(h, psi=1.0, v=v, y=3.0)
    assert cut is not None and list(cut.scen) == [0, 1]  # 2 is skipped: its v is not smaller
    assert cut.coef == pytest.approx([2.0, 7.0]) and cut.rhs == 10.0
    # not violated at a point that meets the largest h without any violation
    assert star_cut(h, psi=1.0, v=np.zeros(5), y=10.0) is None


def _instances():
    paper = get_family("paper-alexnet")
    rnd = get_family("random")
    return [paper.func(0, **paper.parse_params({"noise_mode": "per_run", "target": 9})),
            rnd.func(1, **rnd.parse_params({"epochs": 8}))]


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1])
def test_options_and_backends_match_the_plain_formulation(which):
    inst = _instances()[which]
    S = 20
    plain = run("milp-highs-direct", inst, S=S, cuts="none")
    assert plain.status == Status.OPTIMAL
    for o in OPTIONS:
        res = run("milp-highs-direct", inst, S=S, **o)
        assert res.status == Status.OPTIMAL and res.objective == pytest.approx(plain.objective, rel=1e-6), o
        assert res.extra["bound_quantile"] <= plain.objective * (1 + 1e-9)
    best = OPTIONS[-1]
    for name in ("milp-highs", "milp-scip", "milp-scip-bc"):
        res = run(name, inst, S=S, **best)
        assert res.status == Status.OPTIMAL and res.objective == pytest.approx(plain.objective, rel=1e-6), name
    res = run("milp-cpsat", inst, S=S, **best)  # inexact scaling: a feasible SAA plan, no optimality claim
    assert res.status in (Status.FEASIBLE, Status.TIMEOUT) and res.plan is not None
    assert res.objective >= plain.objective * (1 - 1e-6)


@pytest.mark.parametrize("target", [4.0, 6.0, 8.0])
@pytest.mark.parametrize("S,seed", [(20, 0), (60, 3)])
def test_dag_start_is_the_enumerated_start(target, S, seed):
    """On an acyclic per_run graph the strengthening's start is the plan ``enumerated_start`` picks."""
    import time

    from deplbench.formulations.saa.start import enumerated_start

    inst = acyclic(noise_mode="per_run", K=5, target=target)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, S, seed))
    b = count_bounds(data)
    want = enumerated_start(data, time.perf_counter() + 30)
    assert b.exact
    assert (b.start is None and want is None) or (b.start is not None and b.start[0] == want)
