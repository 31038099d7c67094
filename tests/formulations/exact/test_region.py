"""Region keys of ``exact`` (docs/exact.md, "Region keys"): audited against enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_exact import Oracle

from deplbench.formulations.exact import exact as exact_mod
from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.conditions import conditions
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.registry import generate, solve
from deplbench.results import Status

TINY = {"models": 3, "clusters": 2, "levels": 3, "datasets": 2, "epochs": 4, "density": 1.0}
MID = {"models": 3, "clusters": 2, "levels": 3, "datasets": 2, "epochs": 9, "density": 1.0}


def _bound(b: Bounder, c, n: tuple[int, ...]) -> float:
    """The quantile lower bound ``v`` behind condition ``c`` at counts ``n`` (fails iff v > target')."""
    base = b.l0 - b.target - 1e-6 * abs(b.l0)
    return b.l0 - float(sum(c.h[m, n[m]] for m in range(b.M))) + (c.need - base)


def _lattice(M: int, K: int):
    return [n for n in itertools.product(range(K + 1), repeat=M) if 1 <= sum(n) <= K]


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conditions_bound_the_relaxed_quantile(mode, seed):
    """Every condition's quantile bound lies below the count-level relaxation's quantile (C1, C2)."""
    inst = generate("random", {**MID, "noise_mode": mode}, seed=seed)
    b = Bounder(inst, {"cantelli": 0, "brackets": 0, "product": 0, "pruned_dominance": 0})
    K, checked = inst.max_epochs, 0
    for g in (0.5, 1.0):
        conds = {s: conditions(b, g, K, s) for s in range(1, b.M + 1)}
        for n in _lattice(b.M, K):
            s = sum(1 for c in n if c)
            hi = quantile_bracket(b.counts_terms(g, n), b.omega, 1e-3 * b.l0).hi
            for c in conds[s]:
                if c.entries is None:  # with entries, their laws are per model, not the relaxation's P_min
                    assert _bound(b, c, n) <= hi + 1e-9 * b.l0, (n, s)
                    checked += 1
    assert checked > 1000


def _all(reg, s: int) -> list:
    return [c for group in reg.conds[s].values() for c in group]


def _with_covers(reg, n) -> list:
    """The conditions of ``n``'s support size and the cover conditions of its support (Lemma 12)."""
    U = tuple(m for m, c in enumerate(n) if c)
    return _all(reg, len(U)) + (reg._covers(U) if reg._wants_cover(U, -math.inf) else [])


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_conditions_hold_for_every_certified_sequence(mode):
    """Enumeration: every count vector with a certified sequence meets every condition, its models
    placed as Lemma 8 allows (offsets), and every condition's bound lies below every sequence's quantile."""
    hits = 0
    for seed in range(3):
        inst = generate("random", {**TINY, "noise_mode": mode}, seed=seed)
        bb = exact_mod._BranchAndBound(inst, math.inf, 10**6)
        bb.build_regions()
        assert bb.bounder.shape is not None  # the random family has a common progress shape
        oracle = Oracle(inst)
        for grp, reg in zip(bb.groups, bb.regions, strict=True):
            for n in _lattice(bb.M, inst.max_epochs):
                seqs = list(oracle.sequences((), n))
                if not any(oracle.hi(grp.g, seq) <= inst.loss.target for seq in seqs):
                    continue
                hits += 1
                s = sum(1 for c in n if c)
                assert reg.meets(n, _with_covers(reg, n)), (seed, grp.datasets, n)
                lo = np.asarray(n)
                for c in _all(reg, s):
                    v = bb.bounder.l0 - reg._knapsack(c, lo, 0, np.zeros(0, dtype=np.int64))[1] + c.need_for(lo > 0) + bb.bounder.target - \
                        bb.bounder.l0 + 1e-6 * abs(bb.bounder.l0)  # the quantile bound behind c at n
                    for seq in seqs:
                        exact = loss_terms(inst, [inst.model_ids[m] for m in seq], grp.g)
                        assert quantile_bracket(exact, bb.bounder.omega, 1e-3 * bb.bounder.l0).hi >= v - 1e-9, seq
    assert hits > 10  # not vacuous


def _subtree(n: tuple[int, ...], K: int):
    M = len(n)
    j = max((i for i in range(M) if n[i] > 0), default=0)
    for m in _lattice(M, K):
        if all(m[i] == n[i] for i in range(j)) and all(m[i] >= n[i] for i in range(j, M)):
            yield m


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
@pytest.mark.parametrize("seed", [0, 3])
def test_region_key_bounds_every_node_of_its_subtree(mode, seed):
    """key(n) <= LB(n') for every n' of the subtree of n meeting the conditions of its support."""
    inst = generate("random", {**MID, "noise_mode": mode, "datasets": 1}, seed=seed)
    bb = exact_mod._BranchAndBound(inst, math.inf, 10**6)
    bb.build_regions()
    K, M = inst.max_epochs, bb.M
    tight = infinite = 0
    for grp, reg in zip(bb.groups, bb.regions, strict=True):
        nodes = _lattice(M, K)
        lbs = dict(zip(nodes, grp.alloc.lower_bounds(np.array(nodes, dtype=float)), strict=True))
        ok = {n for n in nodes if reg.meets(n, _with_covers(reg, n))}
        assert reg.root_key <= min((lbs[m] for m in ok), default=math.inf) + 1e-9
        for n in [(0,) * M] + nodes:
            key = reg.key(n)
            feas = [lbs[m] for m in _subtree(n, K) if m in ok]
            least = min(feas, default=math.inf)
            assert key <= least + 1e-9 * max(1.0, abs(least)) or not feas, (n, key, least)
            if not feas:
                infinite += 1
            elif key > lbs.get(n, 0.0) + 1e-6:
                tight += 1  # the region key beats the node's own bound: the rule is not vacuous
    assert tight > 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_region_keys_keep_the_optimum(mode):
    for seed in range(2):
        inst = generate("random", {**TINY, "noise_mode": mode, "epochs": 5}, seed=seed)
        on = solve("exact", inst, {"incumbent": False})
        off = solve("exact", inst, {"incumbent": False, "region": False})
        ref = Oracle(inst).optimum()
        for res in (on, off):
            assert res.status == (Status.OPTIMAL if ref is not None else Status.INFEASIBLE), res.message
            if ref is not None:
                assert math.isclose(res.evaluation.cost, ref, rel_tol=1e-9)
        assert on.extra["count_vectors"] <= off.extra["count_vectors"]


def test_walkable_supports_match_enumerated_sequences():
    """A support is walkable iff some switch sequence (consecutive models allowed) uses exactly it."""
    from deplbench.formulations.exact.walks import walkable

    rng = np.random.default_rng(3)
    for _ in range(20):
        M = 4
        allowed = {(a, b) for a in range(M) for b in range(M) if a != b and rng.random() < 0.35}
        seen = set()
        frontier = [(m,) for m in range(M)]
        for _depth in range(M * M):  # a covering walk has at most 1 + (M - 1)^2 models
            nxt = {}
            for seq in frontier:
                seen.add(sum(1 << m for m in set(seq)))
                for b in range(M):
                    if (seq[-1], b) in allowed:  # keep one sequence per (last model, models used)
                        nxt.setdefault((b, frozenset(seq) | {b}), seq + (b,))
            frontier = list(nxt.values())
        for seq in frontier:
            seen.add(sum(1 << m for m in set(seq)))
        assert walkable(M, allowed) == seen, allowed


def test_chain_blocks_are_passed_in_order_by_every_walk():
    """Lemma 8b: every switch walk that uses exactly ``U`` passes the components of ``chain_blocks``
    one after the other, in their order; the blocks exist exactly for the walkable supports."""
    from deplbench.formulations.exact.walks import chain_blocks, walkable

    rng = np.random.default_rng(5)
    nontrivial = 0
    for _ in range(30):
        M = 5
        allowed = {(a, b) for a in range(M) for b in range(M) if a != b and (b == a + 1 or rng.random() < 0.3)}
        walks: dict[int, list[tuple[int, ...]]] = {}
        frontier = [(m,) for m in range(M)]
        for _depth in range(7):  # every walk of at most 7 runs
            nxt = []
            for seq in frontier:
                walks.setdefault(sum(1 << m for m in set(seq)), []).append(seq)
                nxt += [seq + (b,) for b in range(M) if (seq[-1], b) in allowed]
            frontier = nxt
        ok = walkable(M, allowed)
        for mask in range(1, 1 << M):
            U = tuple(m for m in range(M) if mask >> m & 1)
            blocks = chain_blocks(U, allowed)
            assert (blocks is not None) == (mask in ok), (allowed, U)
            if blocks is None:
                continue
            assert sorted(m for blk in blocks for m in blk) == list(U)
            nontrivial += len(blocks) > 1
            where = {m: i for i, blk in enumerate(blocks) for m in blk}
            for seq in walks.get(mask, []):
                idx = [where[m] for m in seq]
                assert idx == sorted(idx), (allowed, U, blocks, seq)
    assert nontrivial > 50  # the order is exercised, not only single components


def test_covering_walk_matches_enumerated_completions():
    """The sequence search's walk test: a prefix ending with ``last`` and remaining counts ``r`` has a
    completion of allowed switches iff ``covering_walk`` says so (enumerated, counts included, on
    remaining counts of one epoch per model, where a walk must use each model exactly once, and of
    three, where it may come back)."""
    from deplbench.formulations.exact.walks import covering_walk

    def completes(last, r, allowed):
        if not any(r):
            return True
        return any(completes(m, tuple(c - (i == m) for i, c in enumerate(r)), allowed)
                   for m in range(len(r)) if r[m] and (m == last or (last, m) in allowed))

    rng = np.random.default_rng(7)
    cut = kept = 0
    for _ in range(25):
        M = 4
        allowed = {(a, b) for a in range(M) for b in range(M) if a != b and rng.random() < 0.35}
        nxt = [[k for k in range(M) if k == a or (a, k) in allowed] for a in range(M)]
        for last in range(M):
            for need in range(1, 1 << M):
                walk = covering_walk(nxt, last, need)
                r3 = tuple(3 * (need >> m & 1) for m in range(M))
                assert walk == completes(last, r3, allowed), (allowed, last, need)
                if not walk:  # necessary: no completion, whatever the counts
                    assert not completes(last, tuple(need >> m & 1 for m in range(M)), allowed)
                cut += not walk
                kept += walk
    assert cut > 100 and kept > 100


MANY_GROUPS = {"noise_mode": "per_run", "models": 5, "clusters": 3, "datasets": 3, "transfer": 5.0, "epochs": 30}


def test_region_keys_are_built_under_the_work_limit():
    """49 (datasets, clusters) groups, each with its region keys: building them all takes about 60,000
    work units (14 s), and a work limit stops inside, not after, with the bound of the groups built."""
    inst = generate("random", MANY_GROUPS, seed=0)
    res = solve("exact", inst, {"max_work": 200, "time_limit": 600, "incumbent": False})
    assert res.status == Status.TIMEOUT and "work limit" in res.message
    assert res.extra["count_vectors"] == 0 and 200 < res.extra["work"] < 2000
    assert res.bound > 0.0  # the least root key, or the least LB of a root's children, over the groups


def _compiled_interrupt() -> SystemError:
    """What CPython raises when a Ctrl-C lands while a compiled (numba) call builds its result."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise SystemError("CPUDispatcher(<function _trim>) returned a result with an exception set") from stop
    except SystemError as exc:
        return exc


@pytest.mark.slow
@pytest.mark.parametrize("stop", [KeyboardInterrupt, "compiled"])
def test_an_interrupt_while_region_keys_are_built_returns_the_incumbent(monkeypatch, stop):
    """SIGINT/SIGTERM (KeyboardInterrupt, also as the SystemError of a compiled call it interrupted)
    in the third group's region keys: the incumbent comes back."""
    inst = generate("random", MANY_GROUPS, seed=0)
    built = []
    orig = exact_mod.RegionBound.__init__

    def init(self, *args, **kwargs):
        if len(built) == 2:
            raise _compiled_interrupt() if stop == "compiled" else KeyboardInterrupt
        built.append(1)
        orig(self, *args, **kwargs)

    monkeypatch.setattr(exact_mod.RegionBound, "__init__", init)
    res = solve("exact", inst, {"time_limit": 600})
    assert res.status == Status.INTERRUPTED and res.plan is not None and res.evaluation.feasible
    assert res.extra["count_vectors"] == 0 and len(built) == 2


@pytest.mark.parametrize("cause", ["interrupt", "none"])
def test_a_compiled_call_interrupted_in_the_search_is_a_stop_other_system_errors_are_crashes(monkeypatch, cause):
    """The SystemError of a compiled call that a Ctrl-C interrupted ends the search as ``interrupted``
    with its incumbent and bound; a SystemError of anything else stays an ``error``."""
    inst = generate("random", {"noise_mode": "per_run"}, seed=1)
    calls = []
    orig = exact_mod.SequenceSearch.find

    def find(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise _compiled_interrupt() if cause == "interrupt" else SystemError("a bug")
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(exact_mod.SequenceSearch, "find", find)
    res = solve("exact", inst, {"time_limit": 600})
    if cause == "interrupt":
        assert res.status == Status.INTERRUPTED and res.plan is not None and res.evaluation.feasible
        assert res.bound is not None and res.bound <= res.evaluation.cost
    else:
        assert res.status == Status.ERROR and "SystemError: a bug" in res.message
    assert len(calls) == 3
