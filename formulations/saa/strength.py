"""Strengthening of the SAA MILP from a relaxation over epoch-count vectors.

Every plan of a dataset selection has a count vector ``q`` (epochs of each model). For each
count vector and scenario s this module bounds the plan's progress from above and below
(``progress_bounds``), the penalties it can collect, and its compute cost from below (the
allocation's Lagrangian bound). From these, in one pass over the count vectors:

* ``h[s]``: a lower bound on the cost of any plan that satisfies scenario s (a relaxation of
  the single-scenario problem); the **quantile bound** is the ``(allowed+1)``-th largest h
  (Ahmed, Luedtke, Song and Xie 2017);
* ``possible[q]``: q can belong to an SAA-feasible plan (at least ``S - allowed`` scenarios
  satisfiable by q); ``bound_count`` is the least cost bound over those;
* ``bigm_q[s]``: the largest loss minus target any possibly SAA-feasible count vector can
  have in scenario s: a valid big-M for every SAA-feasible plan, at most the quantile big-M of
  Song, Luedtke and Kucukyavuz (2014) computed on the same relaxation;

and :func:`strengthen` attaches them to a :class:`SubsetData` (big-M, fixed scenarios, the
objective cut and the mixing inequalities of Luedtke, Ahmed and Nemhauser 2010). Proofs:
``docs/formulations.md`` ("Quantile big-M, fixing and mixing").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from deplbench.formulations.allocation import Allocator
from deplbench.formulations.saa.blocks import (
    DP_SCENARIOS,
    block_columns,
    block_limit,
    dp_fits,
    start_plan,
)
from deplbench.formulations.saa.dag import dag_start, sequence_columns
from deplbench.formulations.saa.data import ObjRow, PastDeadline, SubsetData
from deplbench.numeric import thin_matmul

#: most count vectors enumerated (beyond it: no strengthening, the worst-case big-M stays)
MAX_COUNT_VECTORS = 400_000
#: count vectors per pass (an (S, CHUNK) array)
CHUNK = 2048
#: a scenario counts as satisfiable when its loss bound is within this of the target (relative
#: to max(1, l0)): larger than any solver tolerance, so every plan a solver accepts is covered
SAT_TOL = 1e-7
#: added to every quantile big-M (relative to max(1, l0)): float noise between bound and row
BIGM_SAFETY = 1e-9
#: the objective cut is lowered by this (relative): the allocation bound is computed in floats
CUT_RTOL = 1e-7
BIGM_CHOICES = ("worst", "quantile")
FIXING_CHOICES = ("on", "off")
CUT_CHOICES = ("none", "quantile", "mixing")


@dataclass
class Bounds:
    """What the count-vector relaxation proves for one selection (see the module docstring)."""

    h: np.ndarray  # (S,) single-scenario cost bounds (inf: no plan satisfies s)
    bigm_q: np.ndarray  # (S,) quantile big-M at margin 0 (-inf: no SAA-feasible count vector)
    bound_quantile: float
    bound_count: float
    n_vectors: int
    seconds: float
    exact: bool = False  # losses of exact sequences (else count-vector progress bounds)
    blocks: int = 0  # cyclic per_run: sequences of at most this many blocks enumerated exactly
    start: tuple | None = None  # (Plan, cost): cheapest plan of the SAA-feasible exact block sequences


def count_vectors(M: int, K: int) -> np.ndarray | None:
    """Every vector of M epoch counts >= 0 with 1 <= sum <= K, or None if too many."""
    if math.comb(K + M, M) > MAX_COUNT_VECTORS:
        return None
    arr = np.zeros((1, 0), dtype=np.int64)
    tot = np.zeros(1, dtype=np.int64)
    for _ in range(M):
        reps = K - tot + 1
        idx = np.repeat(np.arange(len(arr)), reps)
        vals = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        arr = np.column_stack([arr[idx], vals])
        tot = tot[idx] + vals
    return arr[tot >= 1]


def _shared_profile(data: SubsetData) -> np.ndarray | None:
    """phi with gain[m] = gain[m, 0] phi for every m and phi non-increasing, else None."""
    phi = data.gain[0] / data.gain[0, 0] if data.gain[0, 0] > 0 else None
    if phi is None or np.any(np.diff(phi) > 1e-12 * phi[0]):
        return None
    for m in range(1, data.gain.shape[0]):
        if data.gain[m, 0] <= 0 or not np.allclose(data.gain[m] / data.gain[m, 0], phi, rtol=1e-12, atol=0):
            return None
    return phi


class _Progress:
    """Upper and lower bounds on the progress ``sum_k imp[s, m_k, k]`` of a count vector.

    ``per_run`` with one shared, non-increasing profile phi: progress is
    ``sum_k c[s, m_k] phi(k)`` over positions 1..sum(q); by the rearrangement inequality it is
    largest with the models in decreasing ``c[s, m]`` order and least in increasing order.
    Otherwise: the ``q_m`` largest (smallest) ``imp[s, m, k]`` over every k, summed over m.
    """

    def __init__(self, data: SubsetData) -> None:
        self.data = data
        phi = _shared_profile(data) if data.per_run else None
        self.shared = phi is not None
        if self.shared:
            self.Phi = np.concatenate([[0.0], np.cumsum(phi)])
            self.c = data.x_run * data.gain[:, 0][None, :]  # (S, M)
            order = np.argsort(-self.c, axis=1, kind="stable")
            self.desc = self._groups(order)
            self.asc = self._groups(order[:, ::-1])
        else:
            srt = np.sort(data.imp, axis=2)  # ascending over k
            zero = np.zeros(srt.shape[:2] + (1,))
            self.bot = np.concatenate([zero, np.cumsum(srt, axis=2)], axis=2)  # (S, M, K+1)
            self.top = np.concatenate([zero, np.cumsum(srt[:, :, ::-1], axis=2)], axis=2)

    @staticmethod
    def _groups(order: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
        """Scenarios grouped by their model order (a permutation per row of ``order``)."""
        return {tuple(int(m) for m in p): np.flatnonzero((order == p).all(axis=1))
                for p in np.unique(order, axis=0)}

    def _blocks(self, q: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
        """(len(q), M): phi summed over each model's block with the models in ``perm`` order."""
        qp = q[:, list(perm)]
        end = np.cumsum(qp, axis=1)
        d = self.Phi[end] - self.Phi[end - qp]
        out = np.empty_like(d)
        out[:, list(perm)] = d
        return out

    def bounds(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower), each (S, len(q))."""
        S, M = self.data.S, q.shape[1]
        if not self.shared:
            up = sum(self.top[:, m, q[:, m]] for m in range(M))
            lo = sum(self.bot[:, m, q[:, m]] for m in range(M))
            return up, lo
        up = np.empty((S, len(q)))
        lo = np.empty((S, len(q)))
        for groups, out in ((self.desc, up), (self.asc, lo)):
            for perm, rows in groups.items():
                out[rows] = thin_matmul(self.c[rows], self._blocks(q, perm))
        return up, lo


def _penalty_tables(data: SubsetData) -> tuple[np.ndarray, np.ndarray, int]:
    """Cumulative sums of the largest positive and most negative per-epoch penalties, and L.

    ``hi[s, j]``: most that j switches can add in scenario s; ``lo[s, j]``: least (<= 0).
    """
    L = data.max_switches if len(data.switches) and data.K > 1 else 0
    S = data.S
    if L == 0:
        return np.zeros((S, 1)), np.zeros((S, 1)), 0
    pmax = np.maximum(data.pen[:, :, 1:].max(axis=1), 0.0)
    pmin = np.minimum(data.pen[:, :, 1:].min(axis=1), 0.0)
    top = -np.sort(-pmax, axis=1)[:, :L]
    bot = np.sort(pmin, axis=1)[:, :L]
    zero = np.zeros((S, 1))
    return (np.concatenate([zero, np.cumsum(top, axis=1)], axis=1),
            np.concatenate([zero, np.cumsum(bot, axis=1)], axis=1), L)


def _count_columns(data: SubsetData, Q: np.ndarray):
    """Chunks ``(rows of Q, least loss, greatest loss)`` of the count-vector relaxation."""
    prog = _Progress(data)
    phi_hi, phi_lo, L = _penalty_tables(data)
    acyclic = data.max_switches < data.K - 1 or L == 0
    for lo_i in range(0, len(Q), CHUNK):
        idx = np.arange(lo_i, min(lo_i + CHUNK, len(Q)))
        q = Q[idx]
        # switches: exactly (models used - 1) in an acyclic switch graph, else at most K_q - 1
        nsw = (q > 0).sum(axis=1) - 1 if acyclic else q.sum(axis=1) - 1
        nsw = np.minimum(nsw, L)
        up, low = prog.bounds(q)
        yield idx, data.l0 - up + phi_lo[:, nsw], data.l0 - low + phi_hi[:, nsw]


def count_bounds(data: SubsetData, deadline: float = math.inf, blocks: bool = True,
                 cap: float = math.inf) -> Bounds | None:
    """The count-vector relaxation of one selection (None: too many vectors or past ``deadline``).

    Exact sequence losses where the switch graph is acyclic in ``per_run`` mode
    (:mod:`~deplbench.formulations.saa.dag`, which also gives the start plan there); otherwise
    (``blocks``) exact losses of the sequences of at most B blocks and one relaxed column per
    count vector for longer ones (:mod:`~deplbench.formulations.saa.blocks`); else the
    count-vector progress bounds.

    The block sequences are enumerated only for the *live* count vectors (:func:`_screen`):
    those whose progress bounds allow ``S - allowed`` satisfied scenarios and whose cost bound
    is at most ``cap``, the cost of a plan of this selection that meets the sample. The others
    enter ``h`` through their progress bounds (weaker, still valid) and never the big-M
    (proof: ``docs/formulations.md``, "Live count vectors").
    """
    t0 = time.perf_counter()
    S, M, K = data.imp.shape
    Q = count_vectors(M, K)
    if Q is None:
        return None
    alloc = Allocator(data.opts.cost, data.opts.time, data.budget)
    lb = alloc.lower_bounds(Q)
    keep = np.isfinite(lb)
    Q, lb = Q[keep], lb[keep]
    acyclic = not len(data.switches) or data.max_switches < K - 1
    cols = sequence_columns(data, Q) if data.per_run and acyclic else None
    exact = cols is not None
    B = 0
    tol = SAT_TOL * max(1.0, abs(data.l0))
    h = np.full(S, np.inf)
    if cols is None and blocks:
        B, _ = block_limit(M, K, data.switches)
        B = B if B and dp_fits(M, K, min(S, DP_SCENARIOS), B) else 0
        if B:
            screened = _screen(data, Q, lb, cap, tol, deadline)
            if screened is None:
                return None  # cut short: an incomplete screen would drop live vectors
            live, h = screened
            cols = block_columns(data, Q, B, live, deadline)
    if cols is None:
        cols = _count_columns(data, Q)
    folded = _fold(data, cols, lb, h, tol, deadline)
    if folded is None:
        return None
    h, bigm, possible, feasible, decode = folded
    bound_count = _exact_least(alloc, Q[possible], lb[possible], deadline)
    k1 = data.allowed + 1
    bq = float(-np.partition(-h, k1 - 1)[k1 - 1]) if k1 <= S else 0.0
    start = start_plan(data, Q, lb, feasible, deadline) if B else (
        dag_start(data, Q, lb, feasible, decode, deadline) if exact else None)
    return Bounds(h, bigm, bq, bound_count, len(Q), time.perf_counter() - t0, exact, B, start)


def _fold(data: SubsetData, cols, lb: np.ndarray, h: np.ndarray, tol: float, deadline: float):
    """(h, big-M, possible, feasible, decode) over the columns ``cols`` of :func:`count_bounds`
    (None past ``deadline``: a part of the columns bounds nothing)."""
    S = data.S
    bigm = np.full(S, -np.inf)
    possible = np.zeros(len(lb), dtype=bool)
    feasible: dict[int, tuple] = {}  # q index -> one SAA-feasible exact block sequence (DAG: its id)
    decode = None
    try:
        for owner, least, most, *runs in cols:
            if time.perf_counter() > deadline:
                return None
            sat = least <= data.target + tol  # (S, C)
            h = np.minimum(h, np.where(sat, lb[owner][None, :], np.inf).min(axis=1))
            ok = sat.sum(axis=0) >= S - data.allowed
            if not ok.any():
                continue
            possible[owner[ok]] = True
            bigm = np.maximum(bigm, most[:, ok].max(axis=1) - data.target)
            if runs and runs[0] is not None:
                rr = runs[0]  # block runs (a list), or a saa_dag picker (the registry's tolerance)
                js = np.flatnonzero(ok)
                if hasattr(rr, "pick"):
                    decode = rr.decode
                for j, r in (rr.pick(js) if hasattr(rr, "pick") else ((j, rr[j]) for j in js)):
                    feasible.setdefault(int(owner[j]), r)
    except PastDeadline:  # raised inside the long columns (blocks.long_bounds)
        return None
    return h, bigm, possible, feasible, decode


def _screen(data: SubsetData, Q: np.ndarray, lb: np.ndarray, cap: float, tol: float,
            deadline: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(live, h): the count vectors worth enumerating, and ``h`` over the others (None: past ``deadline``).

    A count vector is live when its progress bounds (:func:`_count_columns`, a relaxation of
    every sequence it has) satisfy at least ``S - allowed`` scenarios and its cost bound is at
    most ``cap`` (within float noise). ``h[s]``: least cost bound of a dead vector whose bounds
    satisfy scenario s.
    """
    S = data.S
    live = np.zeros(len(Q), dtype=bool)
    h = np.full(S, np.inf)
    top = cap + CUT_RTOL * max(1.0, abs(cap)) if math.isfinite(cap) else math.inf
    for idx, least, _most in _count_columns(data, Q):
        sat = least <= data.target + tol
        alive = (sat.sum(axis=0) >= S - data.allowed) & (lb[idx] <= top)
        live[idx[alive]] = True
        dead = ~alive
        if dead.any():
            h = np.minimum(h, np.where(sat[:, dead], lb[idx[dead]][None, :], np.inf).min(axis=1))
        if time.perf_counter() > deadline:
            return None
    return live, h


def _exact_least(alloc: Allocator, Q: np.ndarray, lb: np.ndarray, deadline: float,
                 most: int = 200) -> float:
    """Least exact allocation cost over the count vectors ``Q`` (a lower bound if cut short).

    Vectors are allocated exactly in increasing order of their Lagrangian bound until the best
    exact cost is at most the next bound (then it is the minimum), at most ``most`` of them.
    """
    if not len(Q):
        return math.inf
    order = np.argsort(lb, kind="stable")
    best = math.inf
    for i in order[:most]:
        if lb[i] >= best or time.perf_counter() > deadline:
            return min(best, float(lb[i]))
        a = alloc.solve(Q[i])
        if a is not None:
            best = min(best, a.cost)
    return min(best, float(lb[order[most]])) if len(order) > most else best


def mixing_rows(h: np.ndarray, allowed: int, floor: float) -> tuple[float, list[ObjRow]]:
    """Objective bound and the strengthened mixing rows of ``y >= h_s (1 - v_s)``, ``y >= floor``.

    With ``h'_s = max(h_s, floor)`` sorted decreasingly, ``psi = h'`` at rank ``allowed + 1``:
    ``y >= psi`` and, for each of the ``allowed`` largest with ``h'_s > psi``,
    ``y + (h'_s - psi) v_s >= h'_s`` (Luedtke, Ahmed and Nemhauser 2010).
    """
    hp = np.maximum(np.where(np.isfinite(h), h, np.nan), floor)
    hp = np.nan_to_num(hp, nan=-np.inf)
    order = np.argsort(-hp, kind="stable")
    psi = float(hp[order[allowed]]) if allowed < len(hp) else floor
    psi = max(psi, floor)
    rows = [ObjRow(np.array([s]), np.array([hp[s] - psi]), float(hp[s]) * (1 - CUT_RTOL))
            for s in order[:allowed] if np.isfinite(hp[s]) and hp[s] > psi]
    return psi, rows


def star_cut(h: np.ndarray, psi: float, v: np.ndarray, y: float, tol: float = 1e-6) -> ObjRow | None:
    """Most violated star inequality of the mixing set at ``(y, v)``, or None.

    Candidates are the scenarios with ``h_s > psi`` in decreasing h; the chain takes the first
    and then each one whose ``v`` is below every ``v`` taken before (Luedtke, Ahmed and
    Nemhauser 2010): ``y + sum_i (h_{t_i} - h_{t_{i+1}}) v_{t_i} >= h_{t_1}``, ``h_{t_{l+1}} = psi``.
    """
    cand = np.flatnonzero(np.isfinite(h) & (h > psi))
    if not len(cand):
        return None
    cand = cand[np.argsort(-h[cand], kind="stable")]
    chain = [cand[0]]
    for s in cand[1:]:
        if v[s] < v[chain[-1]] - 1e-12:
            chain.append(s)
    hv = np.append(h[chain], psi)
    coef = hv[:-1] - hv[1:]
    if y + coef @ v[chain] >= hv[0] - tol * max(1.0, abs(hv[0])):
        return None
    return ObjRow(np.array(chain), coef, float(hv[0]))


def strengthen(data: SubsetData, *, bigm: str, fixing: str, cuts: str,
               deadline: float = math.inf, cap: float = math.inf) -> tuple[SubsetData, dict]:
    """``data`` with the chosen strengthening attached, and the figures for ``extra``.

    The quantile bound is computed (and reported) whatever the options; it becomes an
    objective cut with ``bigm=quantile`` or ``cuts=mixing``. Only these strengthened options
    enumerate block sequences (and attach their start plan); the
    plain formulation (``bigm=worst``, ``cuts`` none or quantile) reports the cheaper
    count-vector bounds and keeps its own MIP start. ``cap``: the cost of a
    plan of this selection that meets the sample strictly (:func:`count_bounds`).
    """
    strong = bigm == "quantile" or cuts == "mixing"
    b = count_bounds(data, deadline, blocks=strong, cap=cap)
    if b is None:
        return data, {"bound_quantile": math.nan, "bound_count": math.nan, "n_fixed": 0, "mixing_rows": 0,
                      "strength_s": 0.0}
    ex = {"bound_quantile": b.bound_quantile, "bound_count": b.bound_count, "n_fixed": 0,
          "mixing_rows": 0, "strength_s": b.seconds, "count_vectors": b.n_vectors,
          "bounds_exact": int(b.exact), "blocks": b.blocks}
    if b.start is not None:
        data = replace(data, start=b.start[0])
    if bigm == "quantile":
        safety = BIGM_SAFETY * max(1.0, abs(data.l0))
        bq = b.bigm_q + safety
        hard = (bq <= 0) if fixing == "on" else None
        data = replace(data, bigm_q=bq, hard=hard)
        if hard is not None:
            ex["n_fixed"] = int((hard & (data.big_m(0.0) > 0)).sum())
    floor = max(b.bound_quantile, b.bound_count)
    rows: list[ObjRow] = []
    mixing = None
    if cuts == "mixing":
        psi, rows = mixing_rows(b.h, data.allowed, floor)
        mixing = (np.maximum(b.h, floor), psi)
        floor = max(floor, psi)
    if (bigm == "quantile" or cuts == "mixing") and math.isfinite(floor) and floor > 0:
        rows.insert(0, ObjRow(np.zeros(0, dtype=np.int64), np.zeros(0), floor * (1 - CUT_RTOL)))
    ex["mixing_rows"] = len(rows)
    return replace(data, obj_rows=tuple(rows), mixing=mixing), ex


__all__ = ["BIGM_CHOICES", "CUT_CHOICES", "FIXING_CHOICES", "Bounds", "count_bounds", "count_vectors",
           "mixing_rows", "star_cut", "strengthen"]
