"""The label store of ``exact``: refuted ``per_run`` relaxations and their dominance (Lemma 4).

A relaxation ``l0 - sum_m c_m X_m + sum_p n_p P_p`` (X >= 0, penalties P >= 0) is refuted when
its quantile is proven above the target; one with coefficients ``c' <= c`` and switch counts
``n' >= n`` of a refuted one is pointwise no smaller, hence refuted too. The search asks, at
almost every prefix, whether some stored label has ``c >= c_query`` and ``n <= n_query``: a
dominance (orthant) query. The labels live in two parts:

* the *recent* ones (at most ``LABEL_RECENT``), in blocks of ``LABEL_LEAF`` with each block's bounding box
  (the largest ``c``, the least ``n`` of its entries), scanned newest first;
* the others in a k-d tree over ``c`` (median splits on the coordinate of widest spread,
  leaves of at most ``LABEL_LEAF``), every node with its box. It is rebuilt with the recent labels
  each time they fill up.

A query skips every block and subtree whose box fails the test, so its answer is the plain
scan's over every label kept, at a fraction of the cost. Keeping every label matters: a store
of only the last 4096 forgets refutations the search needs again (seed 6 of the m5e40 tier then
takes two thirds more brackets, 179k against 107k), and a plain scan of them all takes a fifth of
the search's time. At most ``cap`` labels are kept (the oldest dropped at a rebuild), plus the
recent ones.

May import: ``deplbench.numeric`` (numba options), :mod:`.knobs`.
"""

from __future__ import annotations

import numba
import numpy as np

from deplbench.formulations.exact.knobs import LABEL_CAP, LABEL_LEAF, LABEL_RECENT
from deplbench.numeric import JIT

EMPTY_N = np.iinfo(np.int32).max  # the switch counts of an empty slot: dominate nothing


class LabelStore:
    """Refuted labels ``(c, n)`` (``M`` coefficients, ``P`` switch counts) and their dominance query.

    Parameters
    ----------
    M, P : int
        Coefficients and switch-count columns of a label.
    cap : int
        Labels kept in the tree at most (the oldest dropped when it is rebuilt).
    """

    def __init__(self, M: int, P: int, cap: int = LABEL_CAP):
        self.M, self.P, self.cap = M, P, max(cap, 1)
        self.i = 0  # labels added so far
        self._p = max(P, 1)
        self._ok = np.empty(LABEL_LEAF, dtype=np.bool_)  # the scans' scratch: the slots that pass ``c``
        self._stack = np.empty(256, dtype=np.int64)  # the tree walk's stack (depth about 2 log2 N)
        self.rc = np.full((M, LABEL_RECENT), -np.inf)  # recent labels, one row per coordinate
        self.rn = np.full((self._p, LABEL_RECENT), EMPTY_N, dtype=np.int32)
        self.rbc = np.full((LABEL_RECENT // LABEL_LEAF, M), -np.inf)  # their blocks' boxes, one row per block
        self.rbn = np.full((LABEL_RECENT // LABEL_LEAF, self._p), EMPTY_N, dtype=np.int32)
        self.r = 0  # recent labels held
        self.tree = _Tree.build(np.empty((M, 0)), np.empty((self._p, 0), dtype=np.int32), np.empty(0, np.int64))

    def dominated(self, c: np.ndarray, n: np.ndarray) -> bool:
        """Some label kept has every ``c' >= c`` and every ``n' <= n`` (compiled scans)."""
        t = self.tree
        return bool(_query(self.rc, self.rn, self.rbc, self.rbn, self.r, t.c, t.n, t.nodes, t.bc, t.bn,
                           np.asarray(c, dtype=float), np.asarray(n, dtype=np.int64), self.P, self._ok, self._stack))

    def add(self, c: np.ndarray, n: np.ndarray) -> None:
        j, b = self.r, self.r // LABEL_LEAF
        self.rc[:, j] = c
        np.maximum(self.rbc[b], self.rc[:, j], out=self.rbc[b])
        if self.P:
            self.rn[:, j] = n
            np.minimum(self.rbn[b], self.rn[:, j], out=self.rbn[b])
        self.r += 1
        self.i += 1
        if self.r == LABEL_RECENT:
            self._rebuild()

    def _rebuild(self) -> None:
        """The tree of its labels and the recent ones (the newest ``cap``); the recent part emptied."""
        t = self.tree
        c = np.concatenate((t.c, self.rc), axis=1)
        n = np.concatenate((t.n, self.rn), axis=1)
        age = np.concatenate((t.age, np.arange(self.i - self.r, self.i, dtype=np.int64)))
        if len(age) > self.cap:
            keep = np.sort(np.argsort(age, kind="stable")[-self.cap:])
            c, n, age = c[:, keep], n[:, keep], age[keep]
        self.tree = _Tree.build(c, n, age)
        self.rc.fill(-np.inf)
        self.rn.fill(EMPTY_N)
        self.rbc.fill(-np.inf)
        self.rbn.fill(EMPTY_N)
        self.r = 0


class _Tree:
    """A k-d tree over the labels' ``c``: arrays in tree order, and per node ``v`` the row
    ``nodes[v] = (lo, hi, left, right)`` (its slots ``lo:hi``; children -1 at a leaf) and its box."""

    __slots__ = ("c", "n", "age", "nodes", "bc", "bn", "size")

    @classmethod
    def build(cls, c: np.ndarray, n: np.ndarray, age: np.ndarray) -> _Tree:
        order = np.arange(c.shape[1])
        nodes: list[list[int]] = []  # [lo, hi, left child, right child] (-1: a leaf)
        todo = [(0, c.shape[1], -1, 0)] if c.shape[1] else []
        while todo:
            lo, hi, parent, side = todo.pop()
            v = len(nodes)
            nodes.append([lo, hi, -1, -1])
            if parent >= 0:
                nodes[parent][2 + side] = v
            if hi - lo > LABEL_LEAF:
                sub = order[lo:hi]
                vals = c[:, sub]
                d = int(np.argmax(vals.max(axis=1) - vals.min(axis=1)))
                mid = (lo + hi) // 2
                order[lo:hi] = sub[np.argpartition(vals[d], mid - lo, kind="introselect")]
                todo.append((mid, hi, v, 1))
                todo.append((lo, mid, v, 0))
        t = cls()
        t.c, t.n, t.age = np.ascontiguousarray(c[:, order]), np.ascontiguousarray(n[:, order]), age[order]
        t.nodes = np.array(nodes, dtype=np.int64).reshape(-1, 4)
        t.bc, t.bn = _boxes(t.nodes, t.c, t.n)
        t.size = c.shape[1]
        return t


def _boxes(nodes: np.ndarray, c: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every node's box (the largest ``c``, the least ``n`` of its slots): the leaves (which tile the
    slots) by one reduction each way, then each inner node from its two children, children first
    (a child's index is above its parent's). Max and min are exact: the boxes of a slot-by-slot scan."""
    bc = np.empty((len(nodes), c.shape[0]))
    bn = np.empty((len(nodes), n.shape[0]), dtype=np.int32)
    if not len(nodes):
        return bc, bn
    leaves = np.nonzero(nodes[:, 2] < 0)[0]
    leaves = leaves[np.argsort(nodes[leaves, 0], kind="stable")]
    bc[leaves] = np.maximum.reduceat(c, nodes[leaves, 0], axis=1).T
    bn[leaves] = np.minimum.reduceat(n, nodes[leaves, 0], axis=1).T
    inner = np.nonzero(nodes[:, 2] >= 0)[0][::-1]
    for v, left, right in zip(inner.tolist(), nodes[inner, 2].tolist(), nodes[inner, 3].tolist(), strict=True):
        np.maximum(bc[left], bc[right], out=bc[v])
        np.minimum(bn[left], bn[right], out=bn[v])
    return bc, bn


@numba.njit("boolean(float64[:, ::1], int32[:, ::1], int64, int64, float64[::1], int64[::1], int64, boolean[::1])",
            **JIT)
def _slots(cs, ns, lo, hi, c, n, P, ok):  # pragma: no cover - compiled
    """Some slot ``lo <= j < hi`` (at most ``len(ok)``) with ``cs[:, j] >= c`` and ``ns[:P, j] <= n``: the
    ``c`` test coordinate by coordinate over all the slots (no branch: vectorised), then the counts of
    the slots that passed. Plain comparisons (NaN compares false)."""
    w = hi - lo
    c0 = c[0]
    for j in range(w):
        ok[j] = cs[0, lo + j] >= c0
    for m in range(1, len(c)):
        cm = c[m]
        for j in range(w):
            ok[j] &= cs[m, lo + j] >= cm
    for j in range(w):
        if ok[j]:
            hit = True
            for p in range(P):
                if not ns[p, lo + j] <= n[p]:
                    hit = False
                    break
            if hit:
                return True
    return False


@numba.njit("boolean(float64[::1], int32[::1], float64[::1], int64[::1], int64)", **JIT)
def _inside(bc, bn, c, n, P):  # pragma: no cover - compiled
    """The box (largest ``c``, least ``n``) may hold a slot that dominates ``(c, n)``."""
    for m in range(len(c)):
        if not bc[m] >= c[m]:
            return False
    for p in range(P):
        if not bn[p] <= n[p]:
            return False
    return True


@numba.njit("boolean(float64[:, ::1], int32[:, ::1], float64[:, ::1], int32[:, ::1], int64, float64[:, ::1], "
            "int32[:, ::1], int64[:, ::1], float64[:, ::1], int32[:, ::1], float64[::1], int64[::1], int64, "
            "boolean[::1], int64[::1])", **JIT)
def _query(rc, rn, rbc, rbn, r, tc, tn, nodes, tbc, tbn, c, n, P, ok, stack):  # pragma: no cover - compiled
    """A label that dominates ``(c, n)``: among the ``r`` recent ones (blocks of ``len(ok)``, the
    newest first: a search's refutations dominate its next prefixes most often), then in the tree
    (depth first from the root); every block and subtree whose box fails is skipped."""
    B = len(ok)
    for b in range((r + B - 1) // B - 1, -1, -1):
        if _inside(rbc[b], rbn[b], c, n, P) and _slots(rc, rn, b * B, min(r, b * B + B), c, n, P, ok):
            return True
    if len(nodes) == 0:
        return False
    top = 0
    stack[0] = 0
    while top >= 0:
        v = stack[top]
        top -= 1
        if not _inside(tbc[v], tbn[v], c, n, P):
            continue
        if nodes[v, 2] < 0:
            if _slots(tc, tn, nodes[v, 0], nodes[v, 1], c, n, P, ok):
                return True
            continue
        stack[top + 1] = nodes[v, 3]
        stack[top + 2] = nodes[v, 2]
        top += 2
    return False
