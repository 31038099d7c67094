"""``bruteforce``: the exact optimum of the true (not sampled) DepL problem, by enumeration.

Structure used (MODEL.md section 4): the loss distribution depends only on the
dataset selection D and the per-epoch model sequence, never on clusters or levels;
cost and time depend only on how many epochs of each model run on each
(cluster, level) option, plus the one-time transfer cost of the clusters used.

Algorithm, for every dataset selection D with g > 0 and every set U of clusters
allowed to train (only U = all clusters when D has no transfer cost):

1. enumerate every model sequence the switch graph allows (cycles included) with
   K <= max_epochs whose fastest possible time fits the budget, grouped by count
   vector n (epochs per model);
2. give every (D, U, n) its Lagrangian lower bound on the allocation cost
   (:class:`~deplbench.formulations.allocation.Allocator`) plus the transfer cost,
   and process them best-first in a heap:

   * a popped *bound* entry: its sequences are screened for the quantile (Cantelli's
     inequality ``q_omega >= mean - sd sqrt((1 - omega) / omega)``, then a coarse
     certified bracket: ``lo > target`` proves infeasible); if a sequence survives,
     the exact cheapest allocation is computed and the entry goes back with its
     exact cost;
   * a popped *exact* entry: each surviving sequence is decided by the evaluator's
     own test (:func:`~deplbench.instances.evaluator.evaluate.certify` with ``decide=target``,
     feasible iff ``hi <= target``); the first feasible one is optimal, since every
     other entry's key is a lower bound on its cost.

The result is **optimal among plans certified at the evaluator's tolerance**: a
plan whose certified bracket still straddles the target at the finest width counts
as infeasible, exactly as :func:`~deplbench.instances.evaluator.evaluate.evaluate` does.
``infeasible`` is proven in the same sense. On ``time_limit`` the result is
``timeout`` with the best certified plan found so far (if any) and the smallest
key left in the heap as a lower bound. Instances whose enumeration exceeds
``max_sequences`` sequences are refused (an ``error`` result saying so).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from deplbench.formulations.allocation import Allocation, Allocator, cluster_sets
from deplbench.formulations.exact.knobs import COARSE_RTOL, MAX_DATASETS
from deplbench.formulations.exact.methods import DEFAULT_MAX_SEQUENCES, proof_result
from deplbench.formulations.exact.pauses import no_full_collections
from deplbench.formulations.exact.work import work_units
from deplbench.formulations.sequences import Refused, Runs, enumerate_sequences, run_models
from deplbench.instances.evaluator.evaluate import DEFAULT_RTOL, cantelli_lower, certify
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, nonempty_subsets, options
from deplbench.results import SolveResult, Status


@dataclass
class _Subset:
    """One dataset selection: its sequences grouped by count vector."""

    datasets: tuple[str, ...]
    g: float
    opts: object  # semantics.Options
    counts: np.ndarray  # (N, M) count vectors
    seqs: list[list[Runs]]  # seqs[i] = sequences with count vector counts[i]
    clusters_sets: list[tuple[int, ...]] = field(default_factory=list)
    allocators: list[Allocator] = field(default_factory=list)
    transfer: list[float] = field(default_factory=list)


class _Search:
    """State of one best-first search (see the module docstring)."""

    def __init__(self, instance, max_sequences: int, deadline: float):
        self.inst = instance
        self.deadline = deadline
        self.target = instance.loss.target
        self.omega = instance.loss.quantile
        self.scale = instance.loss.initial
        self.verdicts: dict[tuple[int, Runs], int] = {}  # 0 infeasible, 1 not rejected, 2 certified
        self.stats = {"sequences": 0, "count_vectors": 0, "screened": 0, "coarse_brackets": 0,
                      "certified": 0, "allocations": 0, "milp_allocations": 0, "unproven_rejections": 0}
        #: sequences rejected while their finest bracket still straddled the target (not proven infeasible)
        self.undecided: set[tuple[int, Runs]] = set()
        #: least cost of an entry that holds such a sequence: the optimum is at least min(this, plan found)
        self.undecided_key = math.inf
        self.subsets = self._build(max_sequences)
        # with X >= 0 a.s., one more epoch at the end of the last run lowers the loss pointwise
        # (no new switch, coefficient grows), so the quantile is non-increasing in that length
        # (used in per_run only: there a bracket costs the same at any length, while per_epoch
        # probes of long sequences cost one term per epoch and Cantelli already rejects most)
        self.monotone = instance.noise_mode == "per_run" and all(self._nonneg(m) for m in instance.models)
        self.proven: dict[tuple[int, Runs, int], int] = {}  # (subset, runs[:-1], model) -> max rejected length

    def _build(self, max_sequences: int) -> list[_Subset]:
        inst = self.inst
        if len(inst.datasets) > MAX_DATASETS:
            raise Refused(f"{len(inst.datasets)} datasets: at most {MAX_DATASETS} are enumerated")
        limit = inst.time_budget * (1 + 1e-9)
        subsets = []
        left = max_sequences
        for ds in nonempty_subsets(inst.dataset_ids):
            de = data_effect(inst, ds)
            if not de.g > 0:
                continue
            opts = options(inst, ds)
            seqs = enumerate_sequences(inst, opts.time.min(axis=1), limit, left)
            n_seq = sum(len(v) for v in seqs.values())
            left -= n_seq
            self.stats["sequences"] += n_seq
            if not seqs:
                continue
            keys = list(seqs)
            sub = _Subset(ds, de.g, opts, np.array(keys, dtype=float), [seqs[k] for k in keys])
            self._cluster_sets(sub)
            subsets.append(sub)
            self.stats["count_vectors"] += len(keys)
        return subsets

    def _cluster_sets(self, sub: _Subset) -> None:
        for cs in cluster_sets(self.inst, sub.datasets, sub.opts):
            sub.clusters_sets.append(cs.cols)
            sub.allocators.append(cs.alloc)
            sub.transfer.append(cs.transfer)

    @staticmethod
    def _nonneg(model) -> bool:
        from deplbench.instances.laws.noise import model_noise

        d = model_noise(model)
        return (d.value >= 0) if d.is_constant else d.lower >= 0

    # ---- quantile ------------------------------------------------------------------------------
    def screen(self, si: int, runs: Runs) -> int:
        """0 if the sequence is proven infeasible for the quantile, else 1 (or 2 if certified).

        With non-negative noise, a rejection of the sequence with its last run of length n
        also rejects every shorter last run; the largest rejected length of each prefix is
        found by bisection the first time the prefix is met.
        """
        if not self.monotone:
            return self._screen(si, runs)
        (m, n), pkey = runs[-1], (si, runs[:-1], runs[-1][0])
        if n <= self.proven.get(pkey, 0):
            return 0
        v = self._screen(si, runs)
        if v == 0:
            lo, hi = n, self.inst.max_epochs - sum(k for _, k in runs[:-1]) + 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self._screen(si, runs[:-1] + ((m, mid),)) == 0:
                    lo = mid
                else:
                    hi = mid
            self.proven[pkey] = max(self.proven.get(pkey, 0), lo)
        return v

    def _screen(self, si: int, runs: Runs) -> int:
        key = (si, runs)
        v = self.verdicts.get(key)
        if v is not None:
            return v
        self.stats["screened"] += 1
        terms = loss_terms(self.inst, run_models(self.inst, runs), self.subsets[si].g)
        v = 1
        if cantelli_lower(terms.mean, terms.var, self.omega, self.scale) > self.target:
            v = 0  # Cantelli: P(l <= mean - t) <= var / (var + t^2) < omega
        elif terms.dists:
            self.stats["coarse_brackets"] += 1
            if quantile_bracket(terms, self.omega, COARSE_RTOL * self.scale).lo > self.target:
                v = 0
        self.verdicts[key] = v
        return v

    def decide(self, si: int, runs: Runs) -> bool:
        """The evaluator's verdict on the quantile of this sequence (cached)."""
        key = (si, runs)
        if self.verdicts.get(key) == 2:
            return True
        if self.verdicts.get(key) == 0:
            return False
        sub = self.subsets[si]
        self.stats["certified"] += 1
        terms = loss_terms(self.inst, run_models(self.inst, runs), sub.g)
        br = certify(self.inst, Plan(sub.datasets, ()), DEFAULT_RTOL, decide=self.target, terms=terms)
        ok = br.hi <= self.target
        self.verdicts[key] = 2 if ok else 0
        if not ok and not br.lo > self.target:
            self.undecided.add(key)
            self.stats["unproven_rejections"] += 1
        return ok

    # ---- plan ----------------------------------------------------------------------------------
    def plan(self, si: int, ui: int, runs: Runs, alloc: Allocation) -> Plan:
        sub = self.subsets[si]
        cols = sub.clusters_sets[ui]
        queues = [sorted(o, reverse=True) for o in alloc.options]  # grouped: fewer segments
        epochs = []
        for m, n in runs:
            for _ in range(n):
                o = cols[queues[m].pop()]
                epochs.append((self.inst.model_ids[m], sub.opts.clusters[o], sub.opts.levels[o]))
        return Plan.from_epochs(sub.datasets, epochs)

    # ---- search --------------------------------------------------------------------------------
    def _extra(self) -> dict:
        """The counters and the run's deterministic work (formulations/exact/work.py)."""
        return {**self.stats, "work": work_units("bruteforce", self.stats)}

    def run(self) -> SolveResult:
        heap: list[tuple[float, int, int, int, int, int]] = []  # (key, tie, exact, subset, U, cv)
        tie = itertools.count()
        for si, sub in enumerate(self.subsets):
            for ui, al in enumerate(sub.allocators):
                lb = al.lower_bounds(sub.counts) + sub.transfer[ui]
                heap.extend((float(k), next(tie), 0, si, ui, i) for i, k in enumerate(lb) if math.isfinite(k))
        heapq.heapify(heap)
        allocs: dict[tuple[int, int, int], Allocation] = {}
        while heap:
            if time.perf_counter() > self.deadline:
                return self._timeout(heap, allocs)
            key, _, exact, si, ui, i = heapq.heappop(heap)
            sub = self.subsets[si]
            if not exact:
                if not any(self.screen(si, r) for r in sub.seqs[i]):
                    continue
                self.stats["allocations"] += 1
                al = sub.allocators[ui].solve(sub.counts[i])
                if al is None:
                    continue
                allocs[(si, ui, i)] = al
                self.stats["milp_allocations"] += al.method == "milp"
                heapq.heappush(heap, (al.cost + sub.transfer[ui], next(tie), 1, si, ui, i))
                continue
            for runs in sub.seqs[i]:
                if self.screen(si, runs) and self.decide(si, runs):
                    return self._found(self.plan(si, ui, runs, allocs[(si, ui, i)]), key)
            if any((si, r) in self.undecided for r in sub.seqs[i]):
                self.undecided_key = min(self.undecided_key, key)
        return proof_result(None, None, self.undecided_key, self._extra())

    def _found(self, plan: Plan, cost: float) -> SolveResult:
        return proof_result(plan, cost, self.undecided_key, self._extra())

    def _timeout(self, heap, allocs) -> SolveResult:
        bound = heap[0][0] if heap else None
        best = None
        # the cheapest already-allocated entries whose sequence the evaluator already certified
        for (si, ui, i), al in sorted(allocs.items(), key=lambda kv: kv[1].cost):
            for runs in self.subsets[si].seqs[i]:
                if self.verdicts.get((si, runs)) == 2:
                    best = (al.cost + self.subsets[si].transfer[ui], self.plan(si, ui, runs, al))
                    break
            if best:
                break
        if bound is not None:
            bound = min(bound, self.undecided_key)
        return SolveResult(Status.TIMEOUT, best[1] if best else None, objective=best[0] if best else None,
                           bound=bound, message="time limit reached", extra=self._extra())


@no_full_collections()  # their pauses grow with the search (.pauses)
def solve_bruteforce(instance, *, max_sequences: int = DEFAULT_MAX_SEQUENCES, time_limit: float = 60.0,
                     seed: int = 0, threads: int = 1) -> SolveResult:
    """Exact optimum of the true problem by enumeration (``seed`` and ``threads`` are unused).

    Parameters
    ----------
    instance : Instance
    max_sequences : int
        Refuse (``error`` result) instances with more model sequences than this.
    time_limit : float
        Seconds; on expiry the result is ``timeout`` with the incumbent, if any.

    Returns
    -------
    SolveResult
        ``optimal`` (among plans certified at the evaluator's tolerance) and ``infeasible`` only
        when no cheaper sequence was rejected on an undecided bracket (else ``feasible`` or
        ``unknown`` with the bound that holds: :func:`~deplbench.formulations.exact.methods.proof_result`),
        ``timeout`` or ``error`` (refused).
    """
    t0 = time.perf_counter()
    try:
        search = _Search(instance, int(max_sequences), t0 + float(time_limit))
    except Refused as exc:
        return SolveResult(Status.ERROR, message=f"refused: {exc}")
    build = time.perf_counter() - t0
    res = search.run()
    return res.replace(build_s=build, solve_s=time.perf_counter() - t0 - build)
