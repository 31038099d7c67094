"""Enumeration of every model sequence the switch graph allows (used for SAA MIP starts).

The ``exact`` search never materialises sequences (it generates them lazily, see
``formulations/exact/search.py``); this plain enumeration only seeds the SAA MILPs with a
starting plan on instances small enough to enumerate.
"""

from __future__ import annotations

import numpy as np

Runs = tuple[tuple[int, int], ...]  # ((model index, epochs), ...)


def run_models(instance, runs: Runs) -> list[str]:
    """The model id of every epoch of the run-length encoded sequence ``runs``."""
    return [instance.model_ids[m] for m, n in runs for _ in range(n)]


class Refused(Exception):
    """The instance has more sequences than the stated limit."""


def enumerate_sequences(instance, min_time: np.ndarray, limit: float, budget: int) -> dict[tuple, list[Runs]]:
    """Every allowed model sequence with 1 <= K <= max_epochs whose fastest time fits ``limit``.

    Parameters
    ----------
    instance : Instance
    min_time : ndarray, shape (M,)
        Fastest epoch time of each model over all options.
    limit : float
        Time limit (budget with the evaluator's tolerance).
    budget : int
        Most sequences to produce; :class:`Refused` beyond it.

    Returns
    -------
    dict
        Count vector -> list of run-length encoded sequences.
    """
    ids = instance.model_ids
    M = len(ids)
    nxt = [[b for b in range(M) if b != a and instance.allowed(ids[a], ids[b])] for a in range(M)]
    out: dict[tuple, list[Runs]] = {}
    produced = 0
    slack = limit * (1 + 1e-12)
    stack: list[tuple[Runs, tuple[int, ...], float]] = []
    for m in range(M):
        c = [0] * M
        c[m] = 1
        if min_time[m] <= slack:
            stack.append((((m, 1),), tuple(c), float(min_time[m])))
    while stack:
        runs, counts, t = stack.pop()
        produced += 1
        if produced > budget:
            raise Refused(f"more than max_sequences={budget} model sequences to enumerate")
        out.setdefault(counts, []).append(runs)
        if sum(counts) >= instance.max_epochs:
            continue
        last, length = runs[-1]
        for m in [last, *nxt[last]]:
            t2 = t + float(min_time[m])
            if t2 > slack:
                continue
            c = list(counts)
            c[m] += 1
            new = runs[:-1] + ((last, length + 1),) if m == last else runs + ((m, 1),)
            stack.append((new, tuple(c), t2))
    return out


