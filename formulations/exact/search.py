"""Lazy search of the model sequences of one count vector (the inner search of ``exact``).

Sequences are generated depth first, one epoch at a time, never materialised. A prefix
is cut when the relaxed loss of all its completions (:class:`~.bounds.Bounder`) is
proven above the target, or when a stored refutation dominates it (same prefix, no fewer
remaining epochs of each model, no smaller data effect ``g``). A complete sequence is
decided by the evaluator's own test (:func:`~deplbench.instances.evaluator.evaluate.certify` with
``decide=target``). Proofs: ``docs/exact-proofs.md``.
"""

from __future__ import annotations

import operator
import time

from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.knobs import (
    CLOCK_CHECK_EVERY,
    MAX_MEMO,
    MEMO_PER_KEY,
    WORK_CHECK_EVERY,
)
from deplbench.formulations.exact.prefix import Prefix
from deplbench.formulations.exact.walks import covering_walk
from deplbench.formulations.exact.work import work_units
from deplbench.formulations.sequences import run_models
from deplbench.instances.evaluator.evaluate import DEFAULT_RTOL, certify
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.plan import Plan

Runs = tuple[tuple[int, int], ...]  # ((model index, epochs), ...)


class Timeout(Exception):
    """The deadline passed inside a search."""


class WorkLimit(Timeout):
    """The work limit (``max_work``, the deterministic work of :mod:`.work`) was reached."""


def check_limits(stats: dict, deadline: float | None, max_work: int) -> None:
    """Raise :class:`Timeout` past ``deadline`` (a ``time.perf_counter()`` value; None: none), then
    :class:`WorkLimit` once the work of ``stats`` exceeds ``max_work`` (0: none)."""
    if deadline is not None and time.perf_counter() > deadline:
        raise Timeout
    if max_work and work_units("exact", stats) > max_work:
        raise WorkLimit


def memo_entry(r: tuple[int, ...], g: float) -> tuple:
    """A stored refutation: the remaining counts ``r``, the data effect ``g`` and which models remain."""
    return r, g, tuple(b > 0 for b in r)


def _dominated(entries: list, r: tuple[int, ...], g: float, fixed: tuple[int, ...] = ()) -> bool:
    """A stored refutation (r2, g2) of the same prefix covers (r, g) when g <= g2, r <= r2, the
    same models remain (so the relaxations count the same mandatory switches) and ``r`` equals
    ``r2`` on ``fixed``, the models outside the last switch component (Lemma 8b's offsets).
    (A plain loop: the same answer as ``any`` over a generator, without its frame.)"""
    pos = tuple(b > 0 for b in r)
    ge = operator.ge
    for r2, g2, pos2 in entries:
        if g2 >= g and pos2 == pos and all(map(ge, r2, r)):
            if not fixed or all(r2[m] == r[m] for m in fixed):
                return True
    return False


class SequenceSearch:
    """Depth-first search for a certified sequence with given epoch counts.

    Parameters
    ----------
    instance : Instance
    bounder : Bounder
    stats : dict
        Counters updated in place.
    deadline : float
        ``time.perf_counter()`` value after which :class:`Timeout` is raised.
    max_work : int
        Raise :class:`WorkLimit` once the work of ``stats`` exceeds it (0: no limit).
    """

    def __init__(self, instance, bounder: Bounder, stats: dict, deadline: float, max_work: int = 0):
        self.inst = instance
        self.max_work = max_work
        self.b = bounder
        self.stats = stats
        self.deadline = deadline
        M = bounder.M
        ids = instance.model_ids
        self.nxt = [[m for m in range(M) if m == a or instance.allowed(ids[a], ids[m])] for a in range(M)]
        self._walks: dict[tuple[int, int], bool] = {}  # (last model, remaining models' mask) -> a walk exists
        self.memo: dict[Runs, list] = {}  # prefix -> [(remaining counts, g, their models)] proven refuted
        self._a = bounder.a.tolist()  # a[m][k] as plain floats: the prefixes' sums s are the same IEEE sums
        self.memo_size = 0
        self.unproven_count = 0  # sequences rejected only because their finest bracket straddled

    # ---- helpers -----------------------------------------------------------------------------
    def _tick(self) -> None:
        self.stats["nodes"] += 1
        nodes = self.stats["nodes"]
        if self.max_work and nodes % WORK_CHECK_EVERY == 0 and work_units("exact", self.stats) > self.max_work:
            raise WorkLimit
        if nodes % CLOCK_CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise Timeout

    def _walk(self, last: int, need: int) -> bool:
        """:func:`covering_walk` from ``last`` over the remaining models ``need`` (remembered)."""
        out = self._walks.get((last, need))
        if out is None:
            out = self._walks[(last, need)] = covering_walk(self.nxt, last, need)
        return out

    def _remember(self, runs: Runs, r: tuple[int, ...], g: float) -> None:
        if self.memo_size >= MAX_MEMO:
            self.memo.clear()
            self.memo_size = 0
        lst = self.memo.setdefault(runs, [])
        if len(lst) < MEMO_PER_KEY:
            lst.append(memo_entry(r, g))
            self.memo_size += 1

    def models(self, runs: Runs) -> list[str]:
        return run_models(self.inst, runs)

    # ---- search ------------------------------------------------------------------------------
    def find(self, g: float, datasets: tuple[str, ...], counts: tuple[int, ...]) -> Runs | None:
        """A sequence with ``counts`` that the evaluator certifies feasible, or None."""
        zero = (0.0,) * self.b.M
        for m in sorted(range(self.b.M), key=lambda m: -self.b.a[m, 0] * self.b.nmean[m]):
            if counts[m] == 0:
                continue
            r = list(counts)
            r[m] -= 1
            s = list(zero)
            s[m] = self._a[m][0]
            out = self._visit(g, datasets, ((m, 1),), Prefix(1, m, tuple(r), tuple(s), (), (m,)))
            if out is not None:
                return out
        return None

    def _visit(self, g: float, datasets, runs: Runs, p: Prefix) -> Runs | None:
        self._tick()
        if not any(p.r):
            return self._leaf(g, datasets, runs, p)
        if not self._walk(p.last, self.b.walks.mask(p.r)):
            self.stats["pruned_walk"] += 1
            return None
        if self.b.valid and len(runs) > 0:
            entries = self.memo.get(runs)
            if entries and _dominated(entries, p.r, g, self.b.walks.fixed(p.r)):
                self.stats["pruned_dominance"] += 1
                return None
            # brackets only where a run has just started (the relaxation changed most); Cantelli always
            if self.b.prefix_refuted(g, p, bracket=self.b.per_run and runs[-1][1] == 1 and p.k > 1):
                self.stats["pruned_quantile"] += 1
                self._remember(runs, p.r, g)
                return None
        b = self.b
        kids = [m for m in self.nxt[p.last] if p.r[m] > 0]
        kids.sort(key=lambda m: (m != p.last, -b.a[m, p.k] * b.nmean[m]))
        for m in kids:
            r = list(p.r)
            r[m] -= 1
            s = list(p.s)
            s[m] += self._a[m][p.k]
            sw = p.switches if m == p.last else p.switches + (b.sw_index[(p.last, m)],)
            new = runs[:-1] + ((m, runs[-1][1] + 1),) if m == p.last else runs + ((m, 1),)
            out = self._visit(g, datasets, new, Prefix(p.k + 1, m, tuple(r), tuple(s), sw, p.epoch_models + (m,)))
            if out is not None:
                return out
        return None

    def _leaf(self, g: float, datasets, runs: Runs, p: Prefix) -> Runs | None:
        """Decide a complete sequence: stored refutations, screen, then the evaluator's test."""
        self.stats["sequences"] += 1
        b = self.b
        # per_run, X >= 0: a sequence whose last run is longer dominates (monotonicity), so a
        # refutation stored for the prefix ``runs[:-1] + (m, n')`` with n' >= n covers this one
        head, (m, n) = runs[:-1], runs[-1]
        key = head + ((m, 0),)
        if b.valid and b.per_run:
            entries = self.memo.get(key)
            if entries and any(g2 >= g and r2[0] >= n for r2, g2, _ in entries):
                self.stats["pruned_dominance"] += 1
                return None
        terms = loss_terms(self.inst, self.models(runs), g)
        proven = b.valid and b.refuted(terms)
        if not proven:
            self.stats["certified"] += 1
            br = certify(self.inst, Plan(datasets, ()), DEFAULT_RTOL, decide=b.target, terms=terms)
            if br.hi <= b.target:
                return runs
            proven = br.lo > b.target + b.margin
            self.unproven_count += not proven
        else:
            self.stats["pruned_quantile"] += 1
        if proven and b.valid and b.per_run:
            self._remember(key, (self._longest_refuted(g, head, m, n, p.k),), g)
        return None

    def _longest_refuted(self, g: float, head: Runs, m: int, n: int, K: int) -> int:
        """Largest n' >= n with ``head + (m, n')`` proven infeasible (bisection; monotone in n')."""
        lo, hi = n, n + self.inst.max_epochs - K + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.b.refuted(loss_terms(self.inst, self.models(head + ((m, mid),)), g)):
                lo = mid
            else:
                hi = mid
        return lo
