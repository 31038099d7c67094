"""Block incumbents for ``exact``: the cheapest certified one- and two-block sequences.

``depl-plus`` is a good start on the paper's instances but can be far from the optimum on
larger ones (it fixes the dataset selection early). Before the branch-and-bound, this
module scans, for every (dataset selection, cluster set) group, the sequences made of one
model run (``m x n``) and of two runs (``a x n_a, b x n_b`` with an allowed switch), and keeps
the cheapest one the evaluator certifies. Adding epochs at the end of the last run never
raises the loss when every noise law is non-negative (one more term ``-g a X <= 0``, no new
switch), so the least certified length of a run is found by bisection. It is a heuristic:
only its plans' costs matter, and every plan it returns is certified by the evaluator's own
decision (:func:`~deplbench.instances.evaluator.evaluate.certify`, ``decide=target``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from deplbench.formulations.exact.knobs import SPLIT_STEP
from deplbench.incumbent import offer
from deplbench.instances.evaluator.evaluate import DEFAULT_RTOL, certify
from deplbench.instances.evaluator.loss import loss_terms
from deplbench.instances.plan import Plan


class BlockScan:
    """Scan one- and two-block sequences of a search (``exact._BranchAndBound``) until ``deadline``
    or ``max_calls`` evaluator decisions (0: no cap; a deterministic limit, as ``max_work``).

    Returns nothing; improves ``search.best`` in place.
    """

    def __init__(self, search, deadline: float, max_calls: int = 0):
        self.s = search
        self.inst = search.inst
        self.deadline = deadline
        self.max_calls = max_calls
        self.calls = 0
        self.target = search.inst.loss.target
        self.K = search.inst.max_epochs
        self.cache: dict = {}

    def ok(self, g: float, runs: tuple[tuple[int, int], ...]) -> bool:
        """The evaluator's decision for the sequence ``runs`` with data effect ``g``."""
        key = (g, runs)
        hit = self.cache.get(key)
        if hit is None:
            self.calls += 1
            terms = loss_terms(self.inst, self.s.seqs.models(runs), g)
            br = certify(self.inst, Plan((), ()), DEFAULT_RTOL, decide=self.target, terms=terms)
            hit = self.cache[key] = br.hi <= self.target
        return hit

    def least(self, g: float, head: tuple[tuple[int, int], ...], m: int, room: int) -> int | None:
        """Least ``n <= room`` with ``head + (m, n)`` certified (monotone in ``n``), or None."""
        if room < 1 or not self.ok(g, head + ((m, room),)):
            return None
        lo, hi = 0, room  # ok(hi) holds; ok(lo) does not (lo = 0: no run)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.ok(g, head + ((m, mid),)):
                hi = mid
            else:
                lo = mid
        return hi

    def offer(self, gi: int, runs: tuple[tuple[int, int], ...]) -> None:
        """Allocate ``runs`` in group ``gi`` and keep it when cheaper than the incumbent."""
        s = self.s
        grp = s.groups[gi]
        al = grp.alloc.solve(self.counts(runs))
        if al is None:
            return
        cost = al.cost + grp.transfer
        if s.best is None or cost < s.best[0] - 1e-9 * abs(cost):
            s.best = (cost, s._plan(grp, runs, al))
            s.stats["block_cost"] = cost
            offer(s.best[1], cost, source="block scan")

    def run(self) -> None:
        s = self.s
        if not s.bounder.valid:
            return  # the bisection needs monotone runs (X >= 0)
        order = sorted(range(len(s.groups)), key=lambda i: -s.groups[i].g)
        for gi in order:  # one run
            for m in range(s.M):
                if self.out_of_time():
                    return
                n = self.least(s.groups[gi].g, (), m, self.K)
                if n is not None:
                    self.offer(gi, ((m, n),))
        self.two_runs(order, SPLIT_STEP)

    def two_runs(self, order: list[int], step: int) -> None:
        """Two-run sequences ``a -> b`` of the groups ``order``: ``a`` for every ``step``-th length,
        ``b`` for its least certified one."""
        s = self.s
        for gi in order:
            g = s.groups[gi].g
            for a in range(s.M):
                for b in s.seqs.nxt[a]:
                    if b == a:
                        continue
                    for na in range(step, self.K, step):
                        if self.out_of_time():
                            return
                        if self.dearer(gi, self.counts(((a, na),))):
                            break
                        nb = self.least(g, ((a, na),), b, self.K - na)
                        if nb is not None:
                            self.offer(gi, ((a, na), (b, nb)))

    def counts(self, runs: tuple[tuple[int, int], ...]) -> list[int]:
        """The count vector (epochs per model) of the runs ``(model, epochs)``."""
        counts = [0] * self.s.M
        for m, n in runs:
            counts[m] += n
        return counts

    def out_of_time(self) -> bool:
        """The scan's deadline or its budget of evaluator decisions is spent."""
        return time.perf_counter() > self.deadline or bool(self.max_calls and self.calls >= self.max_calls)

    def dearer(self, gi: int, counts: list[int]) -> bool:
        """Every plan of group ``gi`` with at least ``counts`` epochs costs at least the incumbent
        (its lower bound, Lemma 1)."""
        s = self.s
        if s.best is None:
            return False
        grp = s.groups[gi]
        lb = float(grp.alloc.lower_bounds(np.array([counts], dtype=float))[0]) + grp.transfer
        return not math.isfinite(lb) or lb >= s.best[0]
