"""Dataset choice by the plans it leads to (``depl-plus --set datasets=search``).

Stage 1 of the paper ranks dataset choices by f(D) = K^(D) T^(D), a proxy that ignores
the per-epoch cost, the cheaper pruned models and the transfer costs; with several
datasets it often picks a choice whose best plan is not the cheapest. This search judges
a choice D by the cost of the certified plan that stages 2 and 3 actually find for it
(``inf`` when they find none) and keeps the cheapest plan seen:

* at most ``EXHAUSTIVE_MAX`` datasets: every non-empty subset is evaluated (2^n - 1 sets);
* more: a best-improvement local search started at the choice the paper's loop ends at
  (the first of stage 1's ranking with a certified plan). The
  neighbourhood of D is every set obtained by adding one dataset, dropping one (keeping
  at least one) or swapping one in for one out; the search moves to the cheapest
  neighbour while it is strictly cheaper than D and stops otherwise (a local optimum for
  that neighbourhood). Every set is evaluated at most once.

``sets_evaluated`` (in ``SolveResult.extra``) counts the sets whose stages 2 and 3 ran.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from deplbench.heuristics.datasets.selection import ranked_datasets

EXHAUSTIVE_MAX = 4  # 15 sets; beyond, the local search


def _neighbours(current: frozenset, ids: tuple[str, ...]) -> list[frozenset]:
    out = [current | {d} for d in ids if d not in current]
    if len(current) > 1:
        out += [current - {d} for d in sorted(current)]
    out += [(current - {a}) | {b} for a in sorted(current) for b in ids if b not in current]
    return out


def search_datasets(s, method: str, solve_one: Callable):
    """The cheapest certified plan over dataset choices (see the module docstring), or None.

    ``solve_one(s, datasets, method)`` runs stages 2 and 3 for one choice (a ``_Found`` or None).
    """
    ids = tuple(s.instance.dataset_ids)
    seen: dict[frozenset, object] = {}

    def value(D: frozenset) -> float:
        if D not in seen:
            s.stats["datasets_tried"] += 1
            seen[D] = solve_one(s, tuple(d for d in ids if d in D), method)
        f = seen[D]
        return math.inf if f is None else f.cost

    if len(ids) <= EXHAUSTIVE_MAX:
        for r in range(1, len(ids) + 1):
            for D in itertools.combinations(ids, r):
                if s.out_of_time:
                    break
                value(frozenset(D))
    else:
        ranking = ranked_datasets(s.instance)
        current = None
        while current is None and not s.out_of_time:  # the paper's loop gives the start
            with s.timed("stage1"):
                nxt = next(ranking, None)
            if nxt is None:
                break
            if math.isfinite(value(frozenset(nxt[0]))):
                current = frozenset(nxt[0])
        while current is not None and not s.out_of_time:
            here = value(current)
            nbrs = [(value(D), i, D) for i, D in enumerate(_neighbours(current, ids)) if not s.out_of_time]
            best = min(nbrs, default=(math.inf, 0, current))
            if not best[0] < here:
                break
            current = best[2]
    s.stats["sets_evaluated"] = len(seen)
    s.stats["datasets_blacklisted"] = sum(f is None for f in seen.values())
    found = [f for f in seen.values() if f is not None]
    return min(found, key=lambda f: f.cost, default=None)
