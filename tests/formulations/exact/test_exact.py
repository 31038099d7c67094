"""``exact``: every pruning rule audited against plain enumeration, optima against references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.formulations.allocation import Allocator
from deplbench.formulations.exact import exact as exact_mod
from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.laws import min_law
from deplbench.formulations.exact.search import SequenceSearch
from deplbench.instances.evaluator.evaluate import certify
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.families.paper import load_paper
from deplbench.instances.laws.distributions import penalty_dist
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, options
from deplbench.registry import generate, solve
from deplbench.results import Status

SMALL = {"models": 3, "clusters": 1, "levels": 2, "datasets": 2, "epochs": 4, "density": 1.0}


def small(seed: int, mode: str):
    return generate("random", {**SMALL, "noise_mode": mode}, seed=seed)


class Oracle:
    """Plain enumeration: every allowed model sequence and the evaluator's verdict on it."""

    def __init__(self, inst):
        self.inst = inst
        self.cache: dict = {}

    def sequences(self, prefix: tuple[int, ...], counts: tuple[int, ...]):
        ids = self.inst.model_ids
        rest = list(counts)
        for m in prefix:
            rest[m] -= 1
        pool = [m for m, c in enumerate(rest) for _ in range(c)]
        for tail in set(itertools.permutations(pool)):
            seq = tuple(prefix) + tail
            if all(self.inst.allowed(ids[a], ids[b]) for a, b in zip(seq, seq[1:], strict=False)):
                yield seq

    def hi(self, g: float, seq: tuple[int, ...]) -> float:
        key = (g, seq)
        if key not in self.cache:
            terms = loss_terms(self.inst, [self.inst.model_ids[m] for m in seq], g)
            self.cache[key] = certify(self.inst, Plan((), ()), decide=self.inst.loss.target, terms=terms).hi
        return self.cache[key]

    def optimum(self) -> float | None:
        """Least cost over every (datasets, sequence) the evaluator certifies (exact allocation)."""
        inst, cands = self.inst, []
        for r in range(1, len(inst.datasets) + 1):
            for ds in itertools.combinations(inst.dataset_ids, r):
                g = data_effect(inst, ds).g
                opts = options(inst, ds)
                al = Allocator(opts.cost, opts.time, inst.time_budget)
                for n in itertools.product(range(inst.max_epochs + 1), repeat=len(inst.models)):
                    a = al.solve(n) if 1 <= sum(n) <= inst.max_epochs and g > 0 else None
                    if a is not None:
                        cands.append((a.cost, g, n))
        for cost, g, n in sorted(cands):  # cheapest first: the first certified one is the optimum
            if any(self.hi(g, s) <= inst.loss.target for s in self.sequences((), n)):
                return cost
        return None


def _audit(monkeypatch):
    """Record every refutation the search makes, with the rule that made it."""
    seen: dict[str, list] = {"prefix": [], "counts": [], "leaf": []}
    rules: set[str] = set()
    orig_prefix, orig_screen, orig_leaf = Bounder.prefix_refuted, exact_mod._BranchAndBound._screen, \
        SequenceSearch._leaf

    def prefix(self, g, p, bracket=True):
        before = dict(self.stats)
        out = orig_prefix(self, g, p, bracket)
        if out:
            for key in ("pruned_dominance", "cover_prefixes", "product", "brackets"):
                if self.stats[key] > before[key]:
                    rules.add(key)
                    break
            else:
                rules.add("cantelli")
            seen["prefix"].append((g, tuple(p.epoch_models), tuple(c + sum(1 for m in p.epoch_models if m == i)
                                                                  for i, c in enumerate(p.r))))
        return out

    def screen(self, g, n, gi=None):
        before, region = self.stats["pruned_dominance"], self.stats["pruned_region"]
        out = orig_screen(self, g, n, gi)
        if not out:
            rules.add("count_region" if self.stats["pruned_region"] > region else
                      "count_dominance" if self.stats["pruned_dominance"] > before else "count_bound")
            seen["counts"].append((g, n))
        return out

    def leaf(self, g, datasets, runs, p):
        before = self.stats["pruned_dominance"]
        out = orig_leaf(self, g, datasets, runs, p)
        if out is None:
            if self.stats["pruned_dominance"] > before:
                rules.add("run_extension")
            seen["leaf"].append((g, tuple(m for m, k in runs for _ in range(k))))
        return out

    monkeypatch.setattr(Bounder, "prefix_refuted", prefix)
    monkeypatch.setattr(exact_mod._BranchAndBound, "_screen", screen)
    monkeypatch.setattr(SequenceSearch, "_leaf", leaf)
    return seen, rules


def _check_audit(inst, seen: dict, res) -> None:
    """Every refuted prefix, count vector and sequence of ``seen`` has no certifiable completion,
    and the result is the enumeration's optimum."""
    oracle = Oracle(inst)
    target = inst.loss.target
    for g, prefix, counts in seen["prefix"]:
        assert all(oracle.hi(g, s) > target for s in oracle.sequences(prefix, counts)), (prefix, counts)
    for g, n in seen["counts"]:
        assert all(oracle.hi(g, s) > target for s in oracle.sequences((), n)), n
    for g, seq in seen["leaf"]:
        assert oracle.hi(g, seq) > target, seq
    ref = oracle.optimum()
    assert res.status == (Status.OPTIMAL if ref is not None else Status.INFEASIBLE), res.message
    if ref is not None:
        assert math.isclose(res.evaluation.cost, ref, rel_tol=1e-9), (res.evaluation.cost, ref)


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_every_refutation_is_true_and_the_optimum_matches_enumeration(mode, monkeypatch):
    all_rules: set[str] = set()
    for seed, positions in itertools.product(range(2), (True, False)):
        inst = small(seed, mode)
        seen, rules = _audit(monkeypatch)
        res = solve("exact", inst, {"incumbent": False, "positions": positions, "region": positions})
        _check_audit(inst, seen, res)
        all_rules |= rules
        monkeypatch.undo()
    expected = {"cantelli", "brackets", "count_bound", "count_region"} | \
        ({"pruned_dominance", "product"} if mode == "per_run" else set())
    assert expected <= all_rules, all_rules  # the audit is not vacuous


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_relaxations_bound_every_completion(mode):
    inst = small(1, mode)
    b = Bounder(inst, {"cantelli": 0, "brackets": 0, "product": 0, "pruned_dominance": 0})
    oracle = Oracle(inst)
    g = data_effect(inst, inst.dataset_ids).g
    omega, l0 = inst.loss.quantile, inst.loss.initial
    checked = placed_checked = stronger = 0
    for n in [(2, 1, 1), (1, 2, 1), (0, 1, 3)]:
        for k in range(0, sum(n)):
            for prefix in {s[:k] for s in oracle.sequences((), n)}:
                p = _prefix(b, prefix, n)
                terms = b.prefix_terms(g, p)
                lo = quantile_bracket(terms, omega, 1e-3 * l0).lo
                prod = b.product.relaxation_bound(terms)
                placed = b._placed_cantelli(g, p) if b.shape is not None and any(p.r) else -math.inf
                stronger += placed > terms.mean - math.sqrt(terms.var) * b.cantelli  # than the relaxation's
                for s in oracle.sequences(prefix, n):
                    exact = loss_terms(inst, [inst.model_ids[m] for m in s], g)
                    q_hi = quantile_bracket(exact, omega, 1e-3 * l0).hi
                    assert max(lo, prod, placed) <= q_hi + 1e-9, (prefix, s, lo, prod, placed)
                    checked += 1
                    placed_checked += placed > -math.inf
    # Lemma 11's placed Cantelli, in both modes, and often stronger than the relaxation's own Cantelli
    assert checked > 50 and placed_checked > 50 and stronger >= 10


def test_fast_epoch_terms_equal_the_general_construction():
    """``prefix_terms``'s per_epoch fast path gives the general path's terms to the bit: the same
    offset, laws (the very objects) and coefficients, of the same types, in the same order."""
    inst = generate("random", {"models": 3, "epochs": 12, "noise_mode": "per_epoch"}, seed=4)
    b = Bounder(inst, {"cantelli": 0, "brackets": 0, "product": 0, "pruned_dominance": 0})
    assert b._plain
    g = data_effect(inst, inst.dataset_ids).g
    checked = 0
    for n in [(4, 4, 4), (6, 0, 6), (2, 9, 1), (3, 5, 4), (1, 1, 10)]:
        used = [m for m in range(3) if n[m]]
        orders = [o for o in itertools.permutations(used) if all(x in b.sw_index for x in zip(o, o[1:], strict=False))]
        assert orders
        for seq in (tuple(m for m in o for _ in range(n[m])) for o in orders):  # one run per model
            for k in range(sum(n) + 1):
                p = _prefix(b, seq[:k], n)
                fast = b.prefix_terms(g, p)
                b._plain = False
                slow = b.prefix_terms(g, p)
                b._plain = True
                assert fast.offset == slow.offset and fast.coefs == slow.coefs
                assert all(x is y for x, y in zip(fast.dists, slow.dists, strict=True))
                assert [type(c) for c in fast.coefs] == [type(c) for c in slow.coefs]
                assert len(fast.dists) == len(slow.dists) >= sum(n)
                checked += 1
    assert checked > 100


def _prefix(b: Bounder, prefix: tuple[int, ...], n: tuple[int, ...]):
    from deplbench.formulations.exact.prefix import Prefix

    r = list(n)
    s = [0.0] * b.M
    sw = []
    for k, m in enumerate(prefix):
        r[m] -= 1
        s[m] += b.a[m, k]
        if k and prefix[k - 1] != m:
            sw.append(b.sw_index[(prefix[k - 1], m)])
    return Prefix(len(prefix), prefix[-1] if prefix else -1, tuple(r), tuple(s), tuple(sw), tuple(prefix))


def test_min_law_is_below_every_penalty():
    inst = small(0, "per_run")
    laws = [penalty_dist(s.penalty) for s in inst.switches]
    low = min_law(laws)
    x = np.linspace(-0.5, 2.5, 301)
    for d in laws:
        assert np.all(low.cdf(x) >= d.cdf(x) - 1e-15) and np.all(low.sf(x) <= d.sf(x) + 1e-15)
        assert low.mean <= d.mean
    rng = np.random.default_rng(0)
    u = rng.random(2000)
    assert np.all(low.from_uniform(u) <= np.min([d.from_uniform(u) for d in laws], axis=0) + 1e-12)


def test_normal_noise_falls_back_to_plain_search():
    inst = small(2, "per_run")
    data = inst.model_dump(by_alias=True, exclude_none=True)
    for m in data["models"]:
        m["noise"] = {"family": "normal", "mean": m["noise"]["mean"], "var": m["noise"]["var"]}
    from deplbench.instances.io import instance_from_dict

    inst = instance_from_dict(data, "normal")
    res = solve("exact", inst, {"incumbent": False})
    assert not Bounder(inst, {}).valid
    assert res.extra["pruned_quantile"] == 0 or res.extra["brackets"] == 0  # no relaxation was used
    ref = Oracle(inst).optimum()
    assert res.status == Status.OPTIMAL and math.isclose(res.evaluation.cost, ref, rel_tol=1e-9)


# optima computed by the previous enumeration (`bruteforce`, docs/bruteforce.md table before issue 14)
PAPER_OPTIMA = {"paper-alexnet-per_run-t13": 268.0, "paper-mobilenet-per_run-t13": 190.0,
                "paper-alexnet-per_epoch-t13": 138.0, "paper-mobilenet-per_epoch-t11": 220.0}


@pytest.mark.parametrize("name", sorted(PAPER_OPTIMA))
def test_paper_optima_equal_the_enumeration(name):
    res = solve("exact", load_paper(name), {"incumbent": False})
    assert res.status == Status.OPTIMAL and res.evaluation.feasible
    assert math.isclose(res.evaluation.cost, PAPER_OPTIMA[name], rel_tol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_optimum_is_no_dearer_than_any_certified_plan(seed):
    inst = generate("random", {"noise_mode": "per_epoch"}, seed=seed)
    res = solve("exact", inst, {"incumbent": False})
    assert res.status == Status.OPTIMAL and res.evaluation.feasible, res.message
    others = [solve("depl", inst), solve("depl-plus", inst),
              solve("milp-highs-direct", inst, {"scenarios": 20, "time_limit": 30})]
    certified = [r for r in others if r.evaluation is not None and r.evaluation.feasible]
    assert certified  # the comparison is not vacuous
    for r in certified:
        assert res.evaluation.cost <= r.evaluation.cost * (1 + 1e-9), r.solver
    for key in ("nodes", "pruned_bound", "pruned_dominance", "pruned_quantile", "brackets", "peak_mem_mb"):
        assert isinstance(res.extra[key], float)


def test_node_limit_is_memout_with_the_incumbent():
    inst = generate("random", {"noise_mode": "per_run"}, seed=2)
    res = solve("exact", inst, {"max_nodes": 1, "time_limit": 60})
    assert res.status == Status.MEMOUT, res.message
    assert "node limit" in res.message
    assert res.bound is not None and (res.plan is None or res.bound <= res.objective)


def test_incumbent_budget_never_exceeds_the_time_left(monkeypatch):
    seen = []
    monkeypatch.setattr(exact_mod._BranchAndBound, "_incumbent", lambda self, t: seen.append(t))
    inst = generate("random", {"noise_mode": "per_run", "epochs": 5}, seed=0)
    exact_mod.solve_exact(inst, time_limit=0.4)
    assert seen and seen[0] <= 0.1 + 1e-9  # a quarter of 0.4 s (it was at least 1 s)
    seen.clear()
    exact_mod.solve_exact(inst, time_limit=0.1)
    assert not seen  # under 0.05 s left for it: skipped


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_block_scan_plans_are_certified_and_never_below_the_optimum(mode):
    """The block-scan incumbent: its plans are certified by the evaluator and cost at least the optimum."""
    from deplbench.formulations.exact.incumbent import BlockScan
    from deplbench.instances.evaluator.evaluate import evaluate

    found = 0
    for seed in range(3):
        inst = generate("random", {**SMALL, "epochs": 5, "noise_mode": mode}, seed=seed)
        search = exact_mod._BranchAndBound(inst, math.inf, 10**6)
        BlockScan(search, math.inf).run()
        ref = Oracle(inst).optimum()
        if search.best is None:
            continue
        found += 1
        cost, plan = search.best
        ev = evaluate(inst, plan)
        assert ev.feasible and math.isclose(ev.cost, cost, rel_tol=1e-9)
        assert ref is not None and cost >= ref * (1 - 1e-9)
    assert found  # not vacuous


def test_memo_dominance_matches_its_definition():
    """``search._dominated`` against its definition: g <= g2, r <= r2 and the same models remain."""
    from deplbench.formulations.exact.search import _dominated, memo_entry

    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(3000):
        r = tuple(int(x) for x in rng.integers(0, 3, 4))
        entries = [(tuple(int(x) for x in rng.integers(0, 3, 4)), float(rng.choice([0.5, 1.0, 1.5])))
                   for _ in range(int(rng.integers(1, 4)))]
        g = float(rng.choice([0.5, 1.0, 1.5]))
        want = any(g2 >= g and all(a >= b and (a > 0) == (b > 0) for a, b in zip(r2, r, strict=True))
                   for r2, g2 in entries)
        assert _dominated([memo_entry(*e) for e in entries], r, g) == want
        hits += want
    assert 100 < hits < 2900  # both answers occur


SPARSE = {"models": 4, "clusters": 1, "levels": 2, "datasets": 1, "epochs": 5, "density": 0.25}


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_component_offsets_bound_every_completion(mode):
    """Lemma 8b on prefixes: with a sparse switch graph the remaining models split into components
    that every completion passes in order; the relaxation, the placed Cantelli and product bounds and
    the placed sums built on those offsets stay below the certified quantile of every completion."""
    used = checked = 0
    for seed in range(3):
        inst = generate("random", {**SPARSE, "noise_mode": mode}, seed=seed)
        b = Bounder(inst, {"cantelli": 0, "brackets": 0, "product": 0, "pruned_dominance": 0})
        oracle = Oracle(inst)
        g = data_effect(inst, inst.dataset_ids).g
        omega, l0 = inst.loss.quantile, inst.loss.initial
        for n in [(2, 1, 1, 1), (1, 2, 1, 1), (1, 1, 2, 1), (2, 0, 2, 1), (1, 1, 0, 3)]:
            seqs = list(oracle.sequences((), n))
            for k in range(1, sum(n)):
                for prefix in {s[:k] for s in seqs}:
                    p = _prefix(b, prefix, n)
                    used += b.walks.offsets(p.r) is not None
                    lo = quantile_bracket(b.prefix_terms(g, p), omega, 1e-3 * l0).lo
                    placed = b._placed_cantelli(g, p) if any(p.r) else -math.inf
                    prod = b.product.placed_bound(g, p) if any(p.r) and mode == "per_run" else -math.inf
                    x = b.nmean * b.shape
                    for s in oracle.sequences(prefix, n):
                        exact = loss_terms(inst, [inst.model_ids[m] for m in s], g)
                        q_hi = quantile_bracket(exact, omega, 1e-3 * l0).hi
                        assert max(lo, placed, prod) <= q_hi + 1e-9, (seed, prefix, s, lo, placed, prod)
                        C = [sum(b.a[m, i] for i, mm in enumerate(s) if mm == m) for m in range(b.M)]
                        assert sum(x[m] * C[m] for m in range(b.M)) <= b._placed_sum(p, x) * (1 + 1e-12)
                        checked += 1
    assert used > 30 and checked > 100  # the offsets are exercised, not only single components


@pytest.mark.parametrize("mode", ["per_run", "per_epoch"])
def test_sparse_switch_graphs_refute_only_what_enumeration_refutes(mode, monkeypatch):
    """The audit above on sparse switch graphs, where the walk test and Lemma 8b's offsets act."""
    from deplbench.formulations.exact.walks import Blocks

    acted = {"offsets": 0, "walk": 0, "prefixes": 0}
    orig = Blocks.offsets

    def offsets(self, r):
        out = orig(self, r)
        acted["offsets"] += out is not None
        return out

    for seed in range(3):
        inst = generate("random", {**SPARSE, "epochs": 4, "datasets": 2, "noise_mode": mode}, seed=seed)
        seen, _rules = _audit(monkeypatch)
        monkeypatch.setattr(Blocks, "offsets", offsets)
        # without region keys, so that the sequence search (where the offsets act) does the refuting
        res = solve("exact", inst, {"incumbent": False, "region": seed == 2})
        _check_audit(inst, seen, res)
        acted["walk"] += res.extra["pruned_walk"]
        acted["prefixes"] += len(seen["prefix"])
        monkeypatch.undo()
    assert min(acted.values()) > 0, acted  # not vacuous: offsets used, walks cut, prefixes refuted


def test_memo_dominance_holds_the_earlier_components_fixed():
    """A refutation stored for ``r2`` covers ``r <= r2`` only when ``r`` equals ``r2`` on ``fixed``."""
    from deplbench.formulations.exact.search import _dominated, memo_entry

    assert _dominated([memo_entry((2, 3, 1), 1.0)], (2, 1, 1), 1.0, fixed=(0,))
    assert not _dominated([memo_entry((2, 3, 1), 1.0)], (1, 3, 1), 1.0, fixed=(0,))
    assert _dominated([memo_entry((2, 3, 1), 1.0)], (1, 3, 1), 1.0)


@pytest.mark.parametrize("method", ["exact", "bruteforce"])
def test_no_full_collection_runs_inside_a_search_and_the_thresholds_come_back(method, monkeypatch):
    """Full collections walk every object the search keeps, so their pauses grow with it
    (``formulations/exact/pauses.py``); with the most eager thresholds none runs inside the
    search, young ones still do, and the thresholds are restored afterwards."""
    import gc

    from deplbench.formulations.exact import bruteforce

    cls = exact_mod._BranchAndBound if method == "exact" else bruteforce._Search
    inside, seen = [False], []

    def run(self, _run=cls.run):
        inside[0] = True
        try:
            return _run(self)
        finally:
            inside[0] = False

    def log(phase, info):
        if phase == "start" and inside[0]:
            seen.append(info["generation"])

    monkeypatch.setattr(cls, "run", run)
    inst = generate("random", {"models": 3, "epochs": 12}, 0)
    before = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(log)
    try:
        solver = exact_mod.solve_exact if method == "exact" else bruteforce.solve_bruteforce
        res = solver(inst, time_limit=60.0)
        after = gc.get_threshold()
    finally:
        gc.callbacks.remove(log)
        gc.set_threshold(*before)
    assert res.status == Status.OPTIMAL
    assert after == (1, 1, 1)
    assert 0 in seen and 2 not in seen, sorted(set(seen))
