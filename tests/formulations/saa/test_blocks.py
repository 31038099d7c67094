"""Block sequences of cyclic ``per_run`` switch graphs (``formulations/saa/blocks.py``).

Checked against brute force: the dynamic programme of the long sequences gives the exact
per-scenario least and greatest loss, the exact columns are the short sequences, and with the
enumeration cut short (so the relaxed columns carry the proof) every option still finds the
enumerated SAA optimum and the plain formulation's optimum.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from test_saa_milp import enumerate_saa, run, small

from deplbench.formulations.saa import blocks as saa_blocks
from deplbench.formulations.saa.common import plan_cost, verify
from deplbench.formulations.saa.cuts import quantile_cut_sets
from deplbench.formulations.saa.data import PastDeadline
from deplbench.formulations.saa.model import build, subset_data
from deplbench.formulations.saa.start import encode, sequence_losses
from deplbench.formulations.saa.strength import count_vectors, strengthen
from deplbench.instances.plan import Plan
from deplbench.instances.scenarios import evaluate_on_scenarios, sample_scenarios
from deplbench.registry import get_family
from deplbench.results import Status

OPTIONS = [dict(bigm="quantile", fixing="on", cuts="none"), dict(bigm="quantile", fixing="on", cuts="mixing")]


def sequences(inst):
    """Every allowed model sequence of 1..max_epochs epochs, run-length encoded (model indices)."""
    ids = inst.model_ids
    out = []
    for K in range(1, inst.max_epochs + 1):
        for seq in itertools.product(range(len(ids)), repeat=K):
            if all(inst.allowed(ids[a], ids[b]) for a, b in zip(seq, seq[1:], strict=False)):
                out.append(tuple((m, len(list(g))) for m, g in itertools.groupby(seq)))
    return out


def counts(runs, M):
    q = [0] * M
    for m, n in runs:
        q[m] += n
    return tuple(q)


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
@pytest.mark.parametrize("B", [1, 2, 3])
def test_long_bounds_are_the_exact_extremes(B, mode):
    inst = small(mode, K=6, neg_penalty=True)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 25, 3))
    Q = count_vectors(3, 6)
    least, most = saa_blocks.long_bounds(data, Q, B)
    seqs = [r for r in sequences(inst) if len(r) > B]
    loss = sequence_losses(data, seqs)
    for j, q in enumerate(map(tuple, Q)):
        mine = [i for i, r in enumerate(seqs) if counts(r, 3) == q]
        if not mine:
            assert np.all(least[:, j] == np.inf) and np.all(most[:, j] == -np.inf)
            continue
        assert least[:, j] == pytest.approx(loss[:, mine].min(axis=1), abs=1e-9)
        assert most[:, j] == pytest.approx(loss[:, mine].max(axis=1), abs=1e-9)


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_sequence_losses_are_the_evaluators(mode):
    inst = small(mode, K=5, neg_penalty=True)
    sc = sample_scenarios(inst, 12, 2)
    data = subset_data(inst, ("d1",), sc)
    seqs = sequences(inst)[::7]
    loss = sequence_losses(data, seqs)
    for j, runs in enumerate(seqs):
        plan = Plan.from_epochs(("d1",), [(inst.model_ids[m], "A", 1.0) for m, n in runs for _ in range(n)])
        assert loss[:, j] == pytest.approx(evaluate_on_scenarios(inst, plan, sc).losses, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_block_columns_are_the_short_sequences_and_the_relaxed_columns(mode):
    inst = small(mode, K=6)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 10, 0))
    Q = count_vectors(3, 6)
    B = 2
    exact, relaxed = [], []
    for owner, least, most, runs in saa_blocks.block_columns(data, Q, B):
        if runs is None:
            relaxed += owner.tolist()
            assert np.all(least <= most)
            continue
        assert np.array_equal(least, most)
        assert least == pytest.approx(sequence_losses(data, runs))
        assert all(tuple(Q[o]) == counts(r, 3) for o, r in zip(owner, runs, strict=True))
        exact += runs
    short = [r for r in sequences(inst) if len(r) <= B]
    assert sorted(exact) == sorted(short)
    long_q = {counts(r, 3) for r in sequences(inst) if len(r) > B}
    assert {tuple(Q[j]) for j in relaxed} == long_q


def test_block_limit():
    sw = ((0, 1), (1, 0))
    assert saa_blocks.walks(2, sw, 3) == [(0, 1, 0), (1, 0, 1)]
    B, n = saa_blocks.block_limit(2, 5, sw, max_sequences=10 + 2 * 10)
    assert (B, n) == (2, 2 * 5 + 2 * 10)
    assert saa_blocks.dp_fits(3, 20, 1000, 6) and not saa_blocks.dp_fits(5, 20, 1000, 4)


@pytest.fixture(params=[12, 30, None], ids=["B1", "B2", "all"])
def block_cap(request, monkeypatch):
    """A small enumeration cap: the relaxed columns of long sequences carry the proof."""
    if request.param is not None:
        monkeypatch.setattr(saa_blocks, "MAX_BLOCK_SEQUENCES", request.param)
    return request.param


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_saa_feasible_plans_satisfy_the_rows_with_a_block_cap(block_cap, mode):
    inst = small(mode, K=4, target=6.0)
    sc = sample_scenarios(inst, 30, 1)
    data = subset_data(inst, ("d1",), sc)
    data, ex = strengthen(replace(data, cut_sets=quantile_cut_sets(data)), bigm="quantile", fixing="on",
                          cuts="mixing")
    assert ex["blocks"] == {12: 1, 30: 2, None: 4}[block_cap]
    model = build(data, "aggregated")
    opts = [("A", 1.0), ("B", 0.25)]
    n_ok = 0
    for runs in sequences(inst):
        models = [inst.model_ids[m] for m, n in runs for _ in range(n)]
        for alloc in itertools.product(opts, repeat=len(models)):
            plan = Plan.from_epochs(("d1",), [(m, c, f) for m, (c, f) in zip(models, alloc, strict=True)])
            if verify(inst, plan, sc):
                continue
            x = encode(model, plan)
            act = model.A @ x
            assert np.all(act <= model.row_ub + 1e-7) and np.all(act >= model.row_lb - 1e-7), runs
            assert np.all(evaluate_on_scenarios(inst, plan, sc).losses - inst.loss.target <= data.bigm_q + 1e-9)
            assert plan_cost(inst, plan) >= ex["bound_count"] - 1e-6
            n_ok += 1
    assert n_ok > 0
    if data.start is not None:  # the start plan meets the SAA on this sample
        assert verify(inst, data.start, sc) == ""


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_options_find_the_enumerated_optimum_with_a_block_cap(block_cap, mode):
    inst = small(noise_mode=mode, target=6.0, budget=30.0, K=4)
    opt = enumerate_saa(inst, 30, 1)
    for o in OPTIONS:
        for name in ("milp-highs-direct", "milp-scip"):
            res = run(name, inst, **o)
            assert res.status == Status.OPTIMAL and res.objective == pytest.approx(opt, rel=1e-6), (name, o)
            assert res.extra["bound_count"] <= opt * (1 + 1e-9)


@pytest.mark.slow
def test_random_cyclic_instance_matches_the_plain_formulation(block_cap):
    rnd = get_family("random")
    inst = rnd.func(0, **rnd.parse_params({"epochs": 7}))
    plain = run("milp-highs-direct", inst, S=30, bigm="worst", fixing="off", cuts="none")
    assert plain.status == Status.OPTIMAL
    for o in OPTIONS:
        res = run("milp-highs-direct", inst, S=30, **o)
        assert res.status == Status.OPTIMAL and res.objective == pytest.approx(plain.objective, rel=1e-6), o
        assert res.extra["blocks"] == {12: 0, 30: 1, None: 7}[block_cap]
        assert 0.0 <= res.extra["root_gap"] <= 1.0 and res.extra["root_bound"] <= res.objective * (1 + 1e-9)
    assert plain.extra["root_gap"] >= res.extra["root_gap"] - 1e-9  # the strengthened root is no weaker
    res = run("milp-cpsat", inst, S=30)  # with the start as a complete hint: a plan, never worse than optimal
    assert res.plan is not None and res.objective >= plain.objective * (1 - 1e-6)


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_a_passed_deadline_drops_the_long_columns_and_the_whole_relaxation(mode):
    """At 20,000 scenarios the long columns take seconds: past the deadline they stop, and the
    count-vector relaxation is dropped as a whole (a part of its columns bounds nothing)."""
    import time

    from deplbench.formulations.saa.strength import count_bounds

    inst = small(mode, K=6, neg_penalty=True)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 25, 3))
    Q = count_vectors(3, 6)
    with pytest.raises(PastDeadline):
        saa_blocks.long_bounds(data, Q, 1, deadline=time.perf_counter() - 1.0)
    cols = saa_blocks.block_columns(data, Q, 1, deadline=time.perf_counter() - 1.0)
    with pytest.raises(PastDeadline):
        for _ in cols:
            pass
    assert count_bounds(data) is not None  # the same relaxation without a deadline exists


def test_the_root_lp_counts_its_build_in_its_limit():
    from deplbench.formulations.saa.root import lp_bound

    inst = small("per_run", K=6, neg_penalty=True)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 25, 3))
    assert lp_bound(data, 1e-4) is None  # the build alone takes longer: no LP run
    assert lp_bound(data, 30.0) is not None


def test_the_pyomo_and_cpsat_builds_stop_at_a_passed_deadline():
    """At S = 20,000 the Pyomo rows take about 15 s and the CP-SAT rows about 3 s: both read the
    clock as they go, so a method past its limit returns instead of being killed."""
    import time

    from deplbench.formulations.backends.milp_cpsat import to_cpsat
    from deplbench.formulations.backends.pyomo_model import build_pyomo

    inst = small("per_run", K=6, neg_penalty=True)
    data = subset_data(inst, ("d1",), sample_scenarios(inst, 25, 3))
    past = time.perf_counter() - 1.0
    with pytest.raises(PastDeadline):
        build_pyomo(data, "aggregated", deadline=past)
    with pytest.raises(PastDeadline):
        to_cpsat(build(data, "aggregated", aggregate_runs=False), deadline=past)
    mdl = build_pyomo(data, "aggregated")  # without a deadline: every kept scenario has its row
    assert len(mdl.scenario) == int((~data.row_plan(0.0).drop).sum())
