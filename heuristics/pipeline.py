"""The DepL pipeline (``depl``, ``depl-plus``, ``best-exp``): three stages composed by the loop of the paper's Fig. 3.

1. Stage 1 ranks dataset choices by f(D) = K^(D) T^(D) (:mod:`.datasets.selection`).
2. Stage 2 finds cheapest model sequences on the expanded graph for a loss surrogate
   (:mod:`.models.selection`); one DP serves every surrogate target, and the target is
   bisected: the loosest target whose plan the evaluator certifies wins.
3. Stage 3 allocates clusters and levels to the sequence (:mod:`.allocation`).

Loop: if no sequence of a dataset choice gives a certified plan, the choice is
blacklisted and stage 1 proposes the next; if stage 3 cannot meet the time budget
for a sequence, the sequence is blacklisted (treated as failing) and stage 2's
search goes on. Outcome: ``feasible`` (certified), ``infeasible`` only with a proof
(no epoch fits the budget, or g <= 0 for every choice), ``timeout`` when
``time_limit`` ran out (with the incumbent, if any), and otherwise ``unknown`` with the
reason: exhausting the heuristic's options proves nothing.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import InputError
from deplbench.heuristics.allocation import allocate
from deplbench.heuristics.datasets import DATASET_MODES
from deplbench.heuristics.datasets.selection import ranked_datasets
from deplbench.heuristics.models import pool
from deplbench.heuristics.models.perrun import frontier_surrogate
from deplbench.heuristics.models.selection import (
    ExpandedGraph,
    Surrogate,
    cgf_surrogate,
    chernoff_arguments,
    mean_surrogate,
    quantile_surrogate,
)
from deplbench.incumbent import offer
from deplbench.instances.evaluator.evaluate import cantelli_lower, certify, plan_costs
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.plan import Plan
from deplbench.instances.semantics import data_effect, options, within_budget
from deplbench.results import SolveResult, Status

CERTIFY_RTOL = 2e-3  # coarse bracket first; certify() refines it while it straddles the target
MAX_RELAXED = 8  # relaxed-time variants tried at the bisection threshold
MAX_CAP = 4.0  # largest surrogate target tightening tried, as a multiple of the requirement
STAGE_TIMERS = ("stage1", "stage2", "stage3", "certify")  # -> extra t_<name>_s (wall), cpu_<name>_s (CPU)
RELAX_STEPS = (0.25, 0.5, 1.0)  # time allowances past the budget (fractions of the relaxed axis) tried


@dataclass
class _Found:
    plan: Plan
    cost: float
    surrogate: str
    scale: float  # surrogate target used, relative to the surrogate's own requirement


@dataclass
class _Search:
    """State shared by the loop: deadline, memoised certifications, counters."""

    instance: object
    eta: int
    eps: float
    deadline: float
    cert: dict = field(default_factory=dict)
    done: dict = field(default_factory=dict)  # (datasets, sequence) -> _Found or None
    knapsack: dict = field(default_factory=dict)  # stage 3's knapsack rows of item prefixes (this search only)
    stats: dict = field(default_factory=lambda: {"certifications": 0, "cantelli_refuted": 0, "dp_layers": 0,
                                                 "datasets_blacklisted": 0, "sequences_blacklisted": 0,
                                                 "datasets_tried": 0, "loop_iterations": 0, "graphs_built": 0,
                                                 "graph_vertices": 0, "graph_edges": 0, "dp_cells": 0,
                                                 "mckp_states": 0})
    times: dict = field(default_factory=lambda: dict.fromkeys(STAGE_TIMERS, 0.0))
    cpu: dict = field(default_factory=lambda: dict.fromkeys(STAGE_TIMERS, 0.0))  # CPU time of this thread

    @contextmanager
    def timed(self, key: str):
        """Add the wall time of the block to ``times[key]`` and its CPU time to ``cpu[key]``."""
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.times[key] += time.perf_counter() - t0
            self.cpu[key] += time.thread_time() - c0

    def count_graph(self, graph: ExpandedGraph) -> None:
        """Graph size (MODEL.md erratum 3): |M| K (Tb+1)(L+1) vertices, an edge per (state, successor, option)."""
        n = graph.n_layers * (graph.Tb + 1) * (graph.L + 1)
        self.stats["graphs_built"] += 1
        self.stats["dp_layers"] += graph.n_layers
        self.stats["graph_vertices"] += len(graph.edges) * n
        self.stats["dp_cells"] += graph.cells
        self.stats["graph_edges"] += n * sum(len(p) * len(e) for p, e in zip(graph.preds, graph.edges, strict=True))

    @property
    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def certified(self, datasets, models: tuple[str, ...]) -> bool:
        """Whether the certified quantile of the sequence meets the target (memoised)."""
        key = (tuple(datasets), models)
        if key not in self.cert:
            self.times["certify"] -= time.perf_counter()  # timed inline (hot path)
            self.cpu["certify"] -= time.thread_time()
            inst = self.instance
            self.stats["certifications"] += 1
            target = inst.loss.target
            terms = loss_terms(inst, models, data_effect(inst, datasets).g)
            refuted = cantelli_lower(terms.mean, terms.var, inst.loss.quantile, inst.loss.initial) > target
            if refuted and not terms.forbidden_switches:
                self.stats["cantelli_refuted"] += 1  # the very decision certify() would take, without a bracket
                self.cert[key] = False
            else:
                plan = Plan.from_epochs(datasets, [(m, inst.clusters[0].id, inst.clusters[0].levels[-1])
                                                   for m in models])
                self.cert[key] = certify(inst, plan, CERTIFY_RTOL, decide=target, terms=terms).hi <= target
            self.times["certify"] += time.perf_counter()
            self.cpu["certify"] += time.thread_time()
        return self.cert[key]

    def check(self, datasets, graph: ExpandedGraph, j: int, opts, i_max: int | None = None,
              value=None) -> _Found | None:
        """Stage 3 and certification of the cheapest stage-2 path for requirement bucket ``j``."""
        inst = self.instance
        self.stats["loop_iterations"] += 1
        models = tuple(m for m, _ in graph.path(j, i_max, value))
        key = (tuple(datasets), models)
        if key in self.done:
            return self.done[key]
        self.done[key] = None
        if not self.certified(datasets, models):
            return None
        with self.timed("stage3"):
            alloc = allocate(inst, datasets, models, self.eps, opts, self.stats, self.knapsack)
        if alloc is None:  # stage 3 cannot meet the time budget: blacklist the sequence
            self.stats["sequences_blacklisted"] += 1
            return None
        plan = Plan.from_epochs(datasets, [(m, opts.clusters[o], opts.levels[o])
                                           for m, o in zip(models, alloc.choice, strict=True)])
        # the loss of a plan depends on its datasets and models only, so certified() above has decided
        # the quantile; the switches, levels and epoch count come from the graph and the option table,
        # and the time is the one condition left (the registry re-evaluates the returned plan in full)
        compute, transfer, total = plan_costs(inst, plan)
        if within_budget(total, inst.time_budget):
            self.done[key] = _Found(plan, compute + transfer, graph.sur.name, j / graph.eta)
            offer(plan, compute + transfer, source="stage 3")  # certified: an incumbent if stopped now
        return self.done[key]


def _search_surrogate(s: _Search, datasets, sur: Surrogate, opts) -> _Found | None:
    """Bisect the surrogate target of one DP for the loosest target with a certified plan.

    The graphs' memory goes back to the pool when the search is done (:meth:`ExpandedGraph.release`),
    for the next surrogate's graph.
    """
    graphs: list[ExpandedGraph] = []
    try:
        return _search_graphs(s, datasets, sur, opts, graphs)
    finally:
        for graph in graphs:
            graph.release()


def _search_graphs(s: _Search, datasets, sur: Surrogate, opts, graphs: list) -> _Found | None:
    """:func:`_search_surrogate`'s search; every graph it builds is appended to ``graphs``."""
    cap = 1.0 if sur.valid else 1.25
    while True:
        if graphs:  # a larger cap: the graph before is not read again
            graphs[-1].release()
        graph = ExpandedGraph(s.instance, datasets, sur, s.eta, cap, opts)
        graphs.append(graph)
        s.count_graph(graph)
        cands = graph.candidates()
        if not cands:
            return None
        if not sur.valid and sur.name == "mean" and len(graphs) == 1:
            _expectation_plan(s, datasets, graph)
        top = s.check(datasets, graph, cands[-1], opts)
        reaches_cap = math.isfinite(graph.cost(graph.L))
        if top is not None or cap >= MAX_CAP or not reaches_cap or s.out_of_time:
            break
        cap = min(cap * 1.5, MAX_CAP)  # the surrogate was not a bound here: tighten it
    for extra in RELAX_STEPS:  # nothing certified within the conservative time: let stage 3 re-time
        if top is not None or s.out_of_time or graph.i_max >= graph.Tb:
            break
        graph.within(graph.eta + math.ceil(extra * (graph.Tb - graph.eta)))
        cands = graph.candidates()
        top = s.check(datasets, graph, cands[-1], opts) if cands else None
    if top is None:
        return None
    best, lo, hi = top, -1, len(cands) - 1
    while hi - lo > 1 and not s.out_of_time:
        mid = (lo + hi) // 2
        found = s.check(datasets, graph, cands[mid], opts)
        if found is None:
            lo = mid
        else:
            hi = mid
            if found.cost < best.cost:
                best = found
    # relaxed paths at the threshold: rounding every epoch's time up penalises sequences
    # of many short epochs; stage 3 re-times them exactly (and blacklists misfits)
    rc = graph.relaxed_costs(cands[hi])
    levels = sorted({float(v) for v in rc[graph.i_max + 1:] if np.isfinite(v) and v < rc[graph.i_max]},
                    reverse=True)
    n = min(MAX_RELAXED, len(levels))
    picks = [levels[round(i * (len(levels) - 1) / max(n - 1, 1))] for i in range(n)]
    for v in dict.fromkeys(picks):
        if s.out_of_time:
            break
        i_max = int(np.argmax(rc <= v))
        found = s.check(datasets, graph, cands[hi], opts, i_max, rc[i_max])
        if found is not None and found.cost < best.cost:
            best = found
    return best


def _expectation_plan(s: _Search, datasets, graph: ExpandedGraph) -> None:
    """Whether the plan an expectation planner keeps misses the quantile target (certified), in ``s.stats``.

    That plan is stage 2's cheapest sequence whose expected loss meets the target (bucket ``eta``,
    the requirement unscaled); its quantile depends on the datasets and the models only, so the
    evaluator's certified bracket of the sequence decides it. ``exp_plan_misses`` is 1 when the
    bracket's upper end exceeds the target, 0 when it meets it; the first dataset choice only.
    """
    if "exp_plan_misses" in s.stats:
        return
    j = graph.bucket(1.0)
    if not math.isfinite(graph.cost(j)):
        return
    models = tuple(m for m, _ in graph.path(j))
    s.stats["exp_plan_misses"] = int(not s.certified(datasets, models))
    s.stats["exp_plan_epochs"] = len(models)


def surrogates_for(instance, g: float, method: str) -> list[Surrogate]:
    """The loss surrogates a method tries: CGF at several arguments (+ quantile in per_run), or the mean."""
    if method == "best-exp":
        return [mean_surrogate(instance, g)]
    if method == "depl-plus" and instance.noise_mode == "per_run":  # exact on the two-model frontier
        return [frontier_surrogate(instance, g)]
    ts = chernoff_arguments(instance, g)
    if instance.noise_mode == "per_epoch":
        return [cgf_surrogate(instance, g, t) for t in ts]
    # per_run: the CGF is no bound; one argument (t*: the others never won on the paper instances),
    # the valid union-bound quantile surrogate and the single-model (exact for one model) quantile
    return [cgf_surrogate(instance, g, ts[1]), quantile_surrogate(instance, g),
            quantile_surrogate(instance, g, 1 - instance.loss.quantile, "mean")]


def infeasibility_proof(instance) -> str | None:
    """A reason no plan exists, when a simple one holds; None otherwise."""
    all_ds = data_effect(instance, instance.dataset_ids)
    if not all_ds.g > 0:
        return f"g <= 0 even with every dataset (g = {all_ds.g:.6g})"
    smallest = min(instance.datasets, key=lambda d: d.samples).id
    fastest = float(options(instance, [smallest]).time.min())
    if fastest > instance.time_budget * (1 + 1e-9):
        return f"the fastest epoch takes {fastest:.6g} > time budget {instance.time_budget:.6g}"
    return None


def solve_datasets(s: _Search, datasets: tuple[str, ...], method: str) -> _Found | None:
    """Stages 2 and 3 (every surrogate of ``method``) for one dataset choice; the cheapest certified plan."""
    t0, c0 = time.perf_counter(), time.thread_time()
    others0 = s.times["stage1"] + s.times["stage3"] + s.times["certify"]
    cpu0 = s.cpu["stage1"] + s.cpu["stage3"] + s.cpu["certify"]
    with s.timed("stage1"):  # the data effect and the option table of the choice
        g = data_effect(s.instance, datasets).g
        opts = options(s.instance, datasets)
    found = None
    for sur in (surrogates_for(s.instance, g, method) if g > 0 else []):
        cand = _search_surrogate(s, datasets, sur, opts)
        if cand is not None and (found is None or cand.cost < found.cost):
            found = cand
    # stage 2 is the rest: surrogates, graphs, paths and the bisection that drives them
    others = s.times["stage1"] + s.times["stage3"] + s.times["certify"] - others0
    s.times["stage2"] += time.perf_counter() - t0 - others
    s.cpu["stage2"] += time.thread_time() - c0 - (s.cpu["stage1"] + s.cpu["stage3"] + s.cpu["certify"] - cpu0)
    return found


def _stage1_loop(s: _Search, method: str) -> _Found | None:
    """The paper's loop: stage 1's ranking, the first dataset choice with a certified plan wins."""
    ranking = ranked_datasets(s.instance)
    while not s.out_of_time:
        with s.timed("stage1"):
            nxt = next(ranking, None)
        if nxt is None:
            return None
        s.stats["datasets_tried"] += 1
        found = solve_datasets(s, nxt[0], method)
        if found is not None:
            return found
        s.stats["datasets_blacklisted"] += 1  # stage 2 found no certified path: back to stage 1
    return None


def run_pipeline(instance, *, method: str, eta: int, eps: float, time_limit: float,
                 datasets: str = "stage1") -> SolveResult:
    """The Fig. 3 loop shared by ``depl``, ``depl-plus`` and ``best-exp`` (they differ in the loss surrogate).

    ``datasets``: ``stage1`` (the paper: stage 1's ranking, first certified choice) or
    ``search`` (:mod:`deplbench.heuristics.datasets.search`: choices judged by the cost of the
    plan stages 2 and 3 find for them).
    """
    if eta < 1 or not eps > 0:
        raise ValueError("need eta >= 1 and eps > 0")
    if datasets not in DATASET_MODES:
        raise InputError(f"datasets must be one of {', '.join(DATASET_MODES)}, not {datasets!r}", "--set", "datasets")
    proof = infeasibility_proof(instance)
    if proof is not None:
        return SolveResult(Status.INFEASIBLE, message=proof)
    s = _Search(instance, int(eta), float(eps), time.perf_counter() + time_limit)
    try:
        if datasets == "search":
            from deplbench.heuristics.datasets.search import search_datasets

            found = search_datasets(s, method, solve_datasets)
        else:
            found = _stage1_loop(s, method)
    finally:
        pool.clear()  # the graphs' memory is for the graphs of this run only (not held after it, e.g. by exact)
    extra = dict(s.stats)
    extra.update({f"t_{k}_s": v for k, v in s.times.items()})
    extra.update({f"cpu_{k}_s": v for k, v in s.cpu.items()})
    if found is None:
        if s.out_of_time:
            return SolveResult(Status.TIMEOUT, message=f"time limit {time_limit:g} s reached", extra=extra)
        return SolveResult(Status.UNKNOWN, extra=extra, message=(
            f"no certified-feasible plan found after {s.stats['datasets_tried']} dataset choice(s); "
            "the heuristic's options are exhausted (this is not a proof of infeasibility)"))
    extra.update(surrogate=found.surrogate, target_scale=found.scale)
    status = Status.TIMEOUT if s.out_of_time else Status.FEASIBLE
    return SolveResult(status, plan=found.plan, objective=found.cost, extra=extra,
                       message="time limit reached; plan is the incumbent" if status is Status.TIMEOUT else "")


#: The parameters of DepL's stages (shared by depl, depl-plus and best-exp).
