"""``exact``: certified optimum of the true DepL problem by lazy best-first branch-and-bound.

Nodes are (dataset selection D, set U of clusters allowed to train, count vector n of
epochs per model). Cost and time depend on a plan only through (D, U, n) and the
allocation of epochs to options; the loss only through D and the model sequence.

* **Outer search** (this module): the count vectors of every (D, U) are generated lazily
  as a lattice (the children of n are n + e_j for j >= the last model n uses, so each
  vector has one parent) and kept in one heap keyed by a valid lower bound on cost: the
  Lagrangian (LP) allocation bound plus the transfer cost, non-decreasing from parent to
  child, raised lazily (on a node's first pop) to its *region key*: a bound on every
  certifiable count vector of its subtree (:mod:`.region`). A popped bound node pushes its
  children, is screened by the relaxed quantile of
  all its sequences (:mod:`.bounds`), and goes back with its exact allocation cost.
  A popped exact node has its sequences searched (:mod:`.search`); the first
  certified sequence is optimal, because every key left is a lower bound.
* **Incumbent**: ``depl-plus`` (certified by the evaluator) prunes from the start; a node
  whose key reaches the incumbent's cost is never expanded.
* **Limits**: on ``time_limit`` or ``max_work`` (the deterministic work of :mod:`.work`, unlike
  time; checked before each heap pop, every 8 sequence nodes and before each cover bracket) the
  result is ``timeout``, on ``max_nodes`` (heap entries,
  the memory bound) ``memout``, with the best certified plan, ``bound`` (the key being
  processed: every unexplored plan costs at least that) and ``gap``.

The result is optimal among plans certified at the evaluator's tolerance (as the
evaluator itself decides feasibility). Proofs of every rule: ``docs/exact-proofs.md``.
"""

from __future__ import annotations

import heapq
import itertools
import math
import resource
import time
from dataclasses import dataclass

import numpy as np

from deplbench.formulations.allocation import Allocation, Allocator, cluster_sets
from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.incumbent import BlockScan
from deplbench.formulations.exact.knobs import (
    BLOCK_SCAN_SHARE,
    INCUMBENT_SHARE,
    MAX_DATASETS,
    MAX_SCREENS,
    SCAN_CALL_WORK,
)
from deplbench.formulations.exact.methods import DEFAULT_MAX_NODES, proof_result
from deplbench.formulations.exact.pauses import no_full_collections
from deplbench.formulations.exact.region import RegionBound
from deplbench.formulations.exact.search import (
    Runs,
    SequenceSearch,
    Timeout,
    WorkLimit,
    check_limits,
)
from deplbench.formulations.exact.work import work_units
from deplbench.formulations.sequences import Refused
from deplbench.incumbent import is_interrupt
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, nonempty_subsets, options
from deplbench.results import SolveResult, Status

STAT_KEYS = ("nodes", "count_vectors", "pruned_bound", "pruned_dominance", "pruned_quantile", "pruned_walk",
             "brackets", "cantelli", "product", "sequences", "certified", "allocations", "milp_allocations",
             "pruned_region", "cover_brackets", "cover_tangents", "cover_prefixes", "supports", "support_cells")


@dataclass
class _Group:
    """One (dataset selection, cluster set): its allocator and fixed costs."""

    datasets: tuple[str, ...]
    g: float
    opts: object  # semantics.Options
    cols: tuple[int, ...]  # option indices of the clusters in U
    alloc: Allocator
    transfer: float


def _groups(inst) -> list[_Group]:
    if len(inst.datasets) > MAX_DATASETS:
        raise Refused(f"{len(inst.datasets)} datasets: at most {MAX_DATASETS}")
    out = []
    for ds in nonempty_subsets(inst.dataset_ids):
        de = data_effect(inst, ds)
        if not de.g > 0:
            continue
        opts = options(inst, ds)
        out += [_Group(tuple(ds), de.g, opts, cs.cols, cs.alloc, cs.transfer) for cs in cluster_sets(inst, ds, opts)]
    return out


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _BranchAndBound:
    """State of one search (see the module docstring)."""

    def __init__(self, instance, deadline: float, max_nodes: int, max_work: int = 0, region: bool = True,
                 positions: bool = True, cover: bool = True):
        self.inst = instance
        self.deadline = deadline
        self.max_nodes = max_nodes
        self.max_work = max_work
        self.undecided_key = math.inf  # least key of a count vector rejected on an undecided bracket
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        self.groups = _groups(instance)
        self.bounder = Bounder(instance, self.stats, positions)
        self.seqs = SequenceSearch(instance, self.bounder, self.stats, deadline, max_work)
        # region keys (docs/exact-proofs.md): need the earliest-position relaxation (X >= 0); built by
        # build_regions, under the limits (they take seconds on instances with many groups)
        self.use_region, self.cover = region and self.bounder.valid, cover
        self.regions: list[RegionBound | None] = [None] * len(self.groups)
        self.M = len(instance.models)
        # until a group's keys are built, the least LB of its root's children bounds its plans
        unit = np.eye(self.M)
        self._roots = [float(np.min(grp.alloc.lower_bounds(unit))) + grp.transfer for grp in self.groups]
        self.stats["root_bound"] = max(min(self._roots, default=0.0), 0.0)
        self.best: tuple[float, Plan] | None = None
        # count-level screens: counts -> largest g refuted / smallest g passed (dominance in (n, g))
        self.refuted: dict[tuple[int, ...], float] = {}
        self.passed: dict[tuple[int, ...], float] = {}

    # ---- count-level screen ------------------------------------------------------------------
    def _screen(self, g: float, n: tuple[int, ...], gi: int) -> bool:
        """False if no sequence with counts n can meet the quantile (proven), else True."""
        b = self.bounder
        if not b.valid:
            return True
        if self.regions[gi] is not None and not self.regions[gi].admits(n):
            self.stats["pruned_region"] += 1  # n itself fails a necessary condition (Lemma 8)
            return False
        # same models used: the relaxations count the same mandatory switches (docs/exact-proofs.md)
        units = [tuple(c + (i == j) for i, c in enumerate(n)) for j in range(self.M) if n[j] > 0]
        if self.refuted.get(n, -math.inf) >= g or any(self.refuted.get(u, -math.inf) >= g for u in units):
            self.stats["pruned_dominance"] += 1
            return False
        downs = [tuple(c - (i == j) for i, c in enumerate(n)) for j in range(self.M) if n[j] > 1]
        if self.passed.get(n, math.inf) <= g or any(self.passed.get(d, math.inf) <= g for d in downs):
            return True  # a dominated relaxation was not refuted: this one cannot be
        if len(self.refuted) + len(self.passed) > MAX_SCREENS:
            self.refuted.clear()
            self.passed.clear()
        if b.prefix_refuted(g, b.root(n)):
            self.refuted[n] = max(g, self.refuted.get(n, -math.inf))
            self.stats["pruned_quantile"] += 1
            return False
        self.passed[n] = min(g, self.passed.get(n, math.inf))
        return True

    # ---- plans -------------------------------------------------------------------------------
    def _plan(self, grp: _Group, runs: Runs, al: Allocation) -> Plan:
        queues = [sorted(o, reverse=True) for o in al.options]  # grouped options: fewer segments
        epochs = []
        for m, n in runs:
            for _ in range(n):
                o = grp.cols[queues[m].pop()]
                epochs.append((self.inst.model_ids[m], grp.opts.clusters[o], grp.opts.levels[o]))
        return Plan.from_epochs(grp.datasets, epochs)

    def _incumbent(self, time_limit: float) -> None:
        from deplbench.registry import solve

        res = solve("depl-plus", self.inst, {"time_limit": time_limit})
        if res.status.has_solution and res.evaluation is not None and res.evaluation.feasible:
            self.best = (float(res.evaluation.cost), res.plan)
            self.stats["incumbent_cost"] = float(res.evaluation.cost)

    # ---- search ------------------------------------------------------------------------------
    def _children(self, gi: int, n: tuple[int, ...], heap: list, tie, key: float = 0.0) -> None:
        start = max((j for j in range(self.M) if n[j] > 0), default=0)
        if sum(n) >= self.inst.max_epochs:
            return
        kids = [tuple(c + (i == j) for i, c in enumerate(n)) for j in range(start, self.M)]
        grp = self.groups[gi]
        lbs = grp.alloc.lower_bounds(np.array(kids, dtype=float)) + grp.transfer
        cap = self.best[0] if self.best else math.inf
        for kid, lb in zip(kids, lbs, strict=True):
            if not math.isfinite(lb):
                continue
            if lb >= cap:
                self.stats["pruned_bound"] += 1
                continue
            lb = max(lb, key)  # the subtree of kid lies in the parent's: the parent's key bounds it too
            heapq.heappush(heap, (float(lb), next(tie), 0, gi, kid, None))

    def _refine(self, gi: int, n: tuple[int, ...], key: float, heap: list, tie) -> bool:
        """Lazy region key: True when ``n`` went back to the heap with a larger key (or was cut)."""
        region = self.regions[gi]
        if region is None:
            return False
        region.cap = self.best[0] - self.groups[gi].transfer if self.best else math.inf
        rk = region.key(n) + self.groups[gi].transfer
        if rk <= key:
            return False
        if self.best is not None and rk >= self.best[0]:
            self.stats["pruned_region"] += 1
        elif math.isfinite(rk):
            heapq.heappush(heap, (rk, next(tie), 0, gi, n, True))
        else:
            self.stats["pruned_region"] += 1
        return True

    def build_regions(self) -> None:
        """Each group's region keys (when ``region``), checking the limits before each group. The
        least root key over the groups is a global bound (``root_bound``); a group not built yet
        counts with the least ``LB`` of its root's children."""
        if not self.use_region:
            return
        for gi, grp in enumerate(self.groups):
            check_limits(self.stats, self.deadline, self.max_work)
            reg = RegionBound(self.bounder, grp.alloc, grp.g, self.inst.max_epochs, self.cover, self.deadline,
                              self.max_work)
            self.regions[gi] = reg
            self._roots[gi] = reg.root_key + grp.transfer
            self.stats["root_bound"] = max(min(self._roots, default=0.0), 0.0)

    def run(self) -> SolveResult:
        heap: list = []
        tie = itertools.count()
        key = -math.inf
        try:
            self.build_regions()
            for gi, (grp, reg) in enumerate(zip(self.groups, self.regions, strict=True)):
                self._children(gi, (0,) * self.M, heap, tie, reg.root_key + grp.transfer if reg else 0.0)
            while heap:
                if len(heap) > self.max_nodes:
                    return self._stopped(key, f"node limit max_nodes={self.max_nodes} reached", Status.MEMOUT)
                check_limits(self.stats, self.deadline, self.max_work)
                key, _, exact, gi, n, al = heap[0]  # n: counts, or runs when exact
                if self.best is not None and key >= self.best[0]:
                    break
                heapq.heappop(heap)
                grp = self.groups[gi]
                if exact:
                    self.best = (al.cost + grp.transfer, self._plan(grp, n, al))
                    break
                if al is None and self._refine(gi, n, key, heap, tie):
                    continue
                self.stats["count_vectors"] += 1
                self._children(gi, n, heap, tie, key)
                if not self._screen(grp.g, n, gi):
                    continue
                before = self.seqs.unproven_count
                runs = self.seqs.find(grp.g, grp.datasets, n)
                if runs is None:
                    if self.seqs.unproven_count > before:  # maybe feasible: the optimum may be as low as key
                        self.undecided_key = min(self.undecided_key, key)
                    continue
                self.stats["allocations"] += 1
                al = grp.alloc.solve(n)  # exists: the all-fastest allocation fits (finite key)
                self.stats["milp_allocations"] += al.method == "milp"
                cost = al.cost + grp.transfer
                if self.best is not None and cost >= self.best[0]:
                    self.stats["pruned_bound"] += 1
                    continue
                heapq.heappush(heap, (max(cost, key), next(tie), 1, gi, runs, al))
        except (KeyboardInterrupt, SystemError) as exc:  # SIGINT / SIGTERM: the incumbent, its bound and gap
            if not is_interrupt(exc):  # a SystemError that no interrupt caused is a crash
                raise
            return self._stopped(key, "interrupted", Status.INTERRUPTED)
        except WorkLimit:
            return self._stopped(key, f"work limit max_work={self.max_work} reached")
        except Timeout:
            return self._stopped(key, "time limit reached")
        return self._finish()

    def _extra(self) -> dict:
        out = {k: float(v) for k, v in self.stats.items()}
        out["peak_mem_mb"] = _peak_mb()
        out["unproven_rejections"] = float(self.seqs.unproven_count)
        out["work"] = work_units("exact", self.stats)
        return out

    def _finish(self) -> SolveResult:
        cost, plan = self.best if self.best is not None else (None, None)
        return proof_result(plan, cost, self.undecided_key, self._extra(), nodes=int(self.stats["nodes"]))

    def _stopped(self, key: float, why: str, status: Status = Status.TIMEOUT) -> SolveResult:
        bound = max(key, 0.0) if math.isfinite(key) else 0.0
        bound = max(bound, self.stats["root_bound"])  # the least root region key: a global bound
        bound = min(bound, self.undecided_key)  # a sequence rejected on an undecided bracket may be feasible
        if self.best is None:
            return SolveResult(status, bound=bound, message=why, extra=self._extra(),
                               nodes=int(self.stats["nodes"]))
        cost, plan = self.best
        bound = min(bound, cost)
        gap = (cost - bound) / max(abs(cost), 1e-9)
        return SolveResult(status, plan, objective=cost, bound=bound, gap=gap, message=why,
                           extra=self._extra(), nodes=int(self.stats["nodes"]))


@no_full_collections()  # their pauses grow with the search (.pauses)
def solve_exact(instance, *, max_nodes: int = DEFAULT_MAX_NODES, max_work: int = 0, incumbent: bool = True,
                region: bool = True, positions: bool = True, cover: bool = True, time_limit: float = 60.0, seed: int = 0,
                threads: int = 1) -> SolveResult:
    """Certified optimum of the true problem (``seed`` and ``threads`` are unused).

    Parameters
    ----------
    instance : Instance
    max_nodes : int
        Most heap entries kept (memory bound); beyond it the result is ``memout``.
    max_work : int
        Deterministic work limit (search nodes plus count vectors; 0: none): the same
        instance stops at the same point on any machine load; beyond it ``timeout``.
    incumbent : bool
        Start from the ``depl-plus`` plan (certified by the evaluator) as incumbent.
    region : bool
        Key lattice nodes by the region bound of their subtree (``docs/exact-proofs.md``).
    positions : bool
        Position-aware bounds (a common progress shape; ``docs/exact-proofs.md``, Lemmas 8 and 9).
    cover : bool
        Cover conditions per support (``per_run``; ``docs/exact-proofs.md``, Lemma 12).
    time_limit : float
        Seconds (the incumbent heuristic included); on expiry the result is ``timeout``
        with the best certified plan, ``bound`` and ``gap``.

    Returns
    -------
    SolveResult
        ``optimal`` (among plans certified at the evaluator's tolerance), ``infeasible``
        (proven in the same sense), ``timeout``, ``memout`` (node limit) or ``error`` (refused).
    """
    t0 = time.perf_counter()
    try:
        search = _BranchAndBound(instance, t0 + float(time_limit), int(max_nodes), int(max_work), bool(region),
                                 bool(positions), bool(cover))
    except Refused as exc:
        return SolveResult(Status.ERROR, message=f"refused: {exc}")
    try:
        if incumbent:  # INCUMBENT_SHARE of the limit, never more than what remains of it
            budget = min(float(time_limit) * INCUMBENT_SHARE, t0 + float(time_limit) - time.perf_counter())
            if budget > 0.05:
                search._incumbent(budget)
            # then the block scan (one- and two-run sequences), within BLOCK_SCAN_SHARE of it (with a
            # work limit, at most max_work // SCAN_CALL_WORK decisions: deterministic, as the search)
            scan_end = min(time.perf_counter() + float(time_limit) * BLOCK_SCAN_SHARE, t0 + float(time_limit))
            BlockScan(search, scan_end, int(max_work) // SCAN_CALL_WORK).run()
    except (KeyboardInterrupt, SystemError) as exc:  # before the search: the incumbent so far and the root bound
        if not is_interrupt(exc):
            raise
        res = search._stopped(-math.inf, "interrupted", Status.INTERRUPTED)
        return res.replace(build_s=time.perf_counter() - t0, solve_s=0.0)
    build = time.perf_counter() - t0
    res = search.run()
    return res.replace(build_s=build, solve_s=time.perf_counter() - t0 - build)
