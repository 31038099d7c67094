"""Exact submodular minimisation (Fujishige-Wolfe minimum-norm point) and helpers.

No maintained Python library minimises a general submodular set function exactly,
so this is a small one. Sets are frozensets of indices ``0..n-1``; ``f`` is any
callable on frozensets (call it through a cache if it is expensive).

* :func:`minimise` - a minimiser of a submodular ``f`` over all subsets (Wolfe's
  algorithm on the base polytope; the minimiser is read off the best prefix of the
  min-norm point's order, which is exact when ``f`` is submodular).
* :func:`ranked_minimisers` - non-empty sets in increasing ``f`` order (Lawler's
  partitioning with :func:`minimise` as the oracle on the restricted lattices); this
  drives the blacklisting loop of DepL.
* :func:`submodularity_violation` - the largest ``f(S+i+j) + f(S) - f(S+i) - f(S+j)``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator

import numpy as np

SetFn = Callable[[frozenset], float]


def _greedy_vertex(f: SetFn, order: list[int], base: float) -> np.ndarray:
    """Vertex of the base polytope of ``S -> f(S) - base`` for ``order``."""
    q = np.zeros(len(order))
    prev, cur = base, frozenset()
    for i in order:
        cur = cur | {i}
        val = f(cur)
        q[i] = val - prev
        prev = val
    return q


def _affine_minimiser(Q: np.ndarray) -> np.ndarray:
    """Coefficients (summing to 1) of the min-norm point of the affine hull of the rows of ``Q``."""
    k = Q.shape[0]
    A = np.zeros((k + 1, k + 1))
    A[:k, :k] = Q @ Q.T
    A[:k, k] = 1.0
    A[k, :k] = 1.0
    b = np.zeros(k + 1)
    b[k] = 1.0
    sol = np.linalg.lstsq(A, b, rcond=None)[0]
    return sol[:k]


def min_norm_point(f: SetFn, n: int, tol: float = 1e-10, max_iter: int = 10_000) -> np.ndarray:
    """Wolfe's minimum-norm point of the base polytope of ``S -> f(S) - f({})``."""
    base = f(frozenset())
    Q = _greedy_vertex(f, list(range(n)), base)[None, :]
    lam = np.ones(1)
    x = Q[0].copy()
    scale = max(1.0, float(np.abs(Q).max()))
    for _ in range(max_iter):
        q = _greedy_vertex(f, [int(i) for i in np.argsort(x, kind="stable")], base)
        if x @ x - x @ q <= tol * scale * scale:
            break
        if any(np.allclose(q, r) for r in Q):
            break  # no progress possible (round-off)
        Q = np.vstack([Q, q])
        lam = np.append(lam, 0.0)
        while True:  # minor cycles
            alpha = _affine_minimiser(Q)
            if np.all(alpha > 1e-12):
                lam = alpha
                break
            neg = alpha <= 1e-12
            theta = np.min(lam[neg] / (lam[neg] - alpha[neg]))
            lam = theta * alpha + (1 - theta) * lam
            keep = lam > 1e-12
            Q, lam = Q[keep], lam[keep] / lam[keep].sum()
        x = lam @ Q
    return x


def minimise(f: SetFn, n: int) -> tuple[frozenset, float]:
    """A minimiser of ``f`` over all subsets of ``range(n)`` (exact for submodular ``f``)."""
    if n == 0:
        return frozenset(), f(frozenset())
    x = min_norm_point(f, n)
    order = [int(i) for i in np.argsort(x, kind="stable")]
    best, best_val = frozenset(), f(frozenset())
    cur: frozenset = frozenset()
    for i in order:  # the optimum is a prefix of the order of x (Fujishige)
        cur = cur | {i}
        val = f(cur)
        if val < best_val:
            best, best_val = cur, val
    return best, best_val


def _restricted(f: SetFn, n: int, include: frozenset, exclude: frozenset) -> tuple[frozenset, float]:
    """Minimise ``f`` over sets containing ``include`` and disjoint from ``exclude``."""
    free = [i for i in range(n) if i not in include and i not in exclude]
    g = lambda S: f(include | frozenset(free[j] for j in S))  # noqa: E731 - contraction keeps submodularity
    S, val = minimise(g, len(free))
    return include | frozenset(free[j] for j in S), val


def ranked_minimisers(f: SetFn, n: int) -> Iterator[tuple[frozenset, float]]:
    """Non-empty subsets of ``range(n)`` in increasing order of ``f`` (Lawler partitioning).

    Each subproblem fixes some elements in or out; its best set is found by
    :func:`minimise` on the contracted function, so the order is exact when ``f`` is
    submodular (and a heuristic order otherwise). Yields ``(set, value)``.
    """
    heap: list = []
    tie = itertools.count()

    def push(inc: frozenset, exc: frozenset) -> None:
        S, val = _restricted(f, n, inc, exc)
        heapq.heappush(heap, (val, next(tie), S, inc, exc))

    for e in range(n):  # non-empty sets = disjoint union over the smallest element e
        push(frozenset({e}), frozenset(range(e)))
    while heap:
        val, _, S, inc, exc = heapq.heappop(heap)
        yield S, val
        fixed_in, fixed_out = set(inc), set(exc)
        for j in (i for i in range(n) if i not in inc and i not in exc):
            child_in, child_out = set(fixed_in), set(fixed_out)
            (child_out if j in S else child_in).add(j)
            push(frozenset(child_in), frozenset(child_out))
            (fixed_in if j in S else fixed_out).add(j)


def brute_force_minimum(f: SetFn, n: int, nonempty: bool = True) -> tuple[frozenset, float]:
    """Reference minimiser by enumeration (for tests and tiny ground sets)."""
    best, best_val = None, np.inf
    for r in range(1 if nonempty else 0, n + 1):
        for S in itertools.combinations(range(n), r):
            v = f(frozenset(S))
            if v < best_val:
                best, best_val = frozenset(S), v
    return best, best_val


def submodularity_violation(f: SetFn, n: int, nonempty: bool = True) -> float:
    """Largest ``f(S+i+j) + f(S) - f(S+i) - f(S+j)`` over S and i != j outside S (0 if none).

    With ``nonempty`` only non-empty S are checked (the lattice DepL minimises over).
    A positive value means ``f`` is not submodular.
    """
    worst = 0.0
    for r in range(1 if nonempty else 0, n - 1):
        for S in itertools.combinations(range(n), r):
            s = frozenset(S)
            fs = f(s)
            rest = [i for i in range(n) if i not in s]
            for i, j in itertools.combinations(rest, 2):
                worst = max(worst, f(s | {i, j}) + fs - f(s | {i}) - f(s | {j}))
    return worst
