"""Region keys for the ``exact`` lattice: a lower bound on the cost of a whole subtree.

The subtree of a count vector ``n`` (``docs/exact-proofs.md``, the lattice) is
``S(n) = {n' : n'_i = n_i for i < j, n'_i >= n_i for i >= j, sum n' <= K}`` with
``j = jmax(n)`` (``j = 0`` at the root). Split it by the support ``U`` (models used) of
``n'``. Every certified sequence with counts ``n'`` of support ``U`` (``s = |U|`` models)
satisfies a *separable necessary condition* ``sum_{m in U} h_m(n'_m) >= R_s`` (a quantile
lower bound of the count-level relaxation must not exceed the target), with ``h_m``
increasing (replaced by its least concave majorant). For every allocation multiplier
``lambda``, ``LB(n') >= sum_m n'_m phi_m(lambda) - lambda T``, so

    min { LB(n') : n' in S(n), certified }
      >= max_lambda  min_U  min { sum_m n'_m phi_m(lambda) : n' in S(n), supp n' = U, condition } - lambda T,

and the inner minimum (a concave knapsack) is bounded below by its continuous relaxation over
the piecewise-linear ``h_m``, solved exactly by the greedy order of the increments'
ratios ``dh / phi`` (a fractional knapsack). An unreachable ``R_s`` empties the support.
Proofs: ``docs/exact-proofs.md``, section "Region keys".
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.conditions import Condition, conditions, linear_condition
from deplbench.formulations.exact.cover import SupportCovers
from deplbench.formulations.exact.fractional import EMPTY, MANY, MET, lagrangian, support_knapsack
from deplbench.formulations.exact.knobs import (
    COVER_AFTER,
    COVER_LATE_SIZE,
    COVER_MAX_SIZE,
    COVER_MIN_SIZE,
    KEEP_CONDITIONS,
    MAX_LAMBDAS,
    MAX_TANGENTS,
    ROOT_LAMBDAS,
    SCREEN_LAMBDAS,
    TANGENT_EVERY,
    TANGENT_GAP,
)
from deplbench.formulations.exact.search import check_limits
from deplbench.formulations.exact.walks import walkable

__all__ = ["RegionBound", "Condition", "conditions", "walkable"]

_NONE = np.zeros(0, dtype=np.int64)  # no free model (and no offsets without a common shape)
_EMPTY = np.zeros((0, 0))  # the arrays a condition's kind does not use
_EMPTY_ROW = np.zeros(0)


class RegionBound:
    """Region keys of one (dataset selection, cluster set) group.

    Parameters
    ----------
    bounder : Bounder
        Supplies the progress coefficients and noise laws (``bounder.valid`` must hold).
    alloc : Allocator
        The group's allocator (its breakpoints and ``phi``).
    g : float
        The group's data effect.
    K : int
        ``max_epochs``.
    cover : bool
        Add the cover conditions of Lemma 12 (certified by exact brackets, per support, computed
        the first time a non-root key needs the support and the other conditions leave it below
        ``cap``).
    deadline : float, optional
        ``time.perf_counter()`` value past which building a cover raises ``Timeout``.
    max_work : int, optional
        The search's work limit, past which building a cover raises ``WorkLimit`` (0: none).
    """

    def __init__(self, bounder: Bounder, alloc, g: float, K: int, cover: bool = False,
                 deadline: float | None = None, max_work: int = 0):
        self.K = K
        self.bounder, self.g = bounder, g
        self.cover = cover and bounder.per_run and bounder.low >= 0 and bounder.pmin is not None
        self.deadline = deadline
        self.max_work = max_work
        self.cap = math.inf  # the incumbent's cost: supports already above it need no cover
        self._cover_conds: dict[tuple[int, ...], list[Condition]] = {}
        self._binding: list = []  # per multiplier of the last key: (support, lo) of the least value
        self.M = alloc.n_models
        self.tol = 1e-9 * abs(bounder.l0) + 1e-12
        self.a, self.cum = bounder.a, bounder.cum  # a[m, i] = a_m(i + 1); cum[m, k] = sum a_m(1..k)
        self.weight = bounder.a[:, 0] * bounder.nmean  # ranks the models for the dominant choice
        self.walkable = walkable(self.M, set(bounder.sw_index))  # supports some sequence can use
        self._orders: dict[tuple[bytes, tuple[int, ...]], tuple[int, ...]] = {}  # Lemma 8b placements
        alloc.lower_bounds(np.zeros((1, self.M)))  # builds alloc._phi
        self.limit = alloc.limit
        lam, phi = alloc._lambdas, alloc._phi
        few = np.unique(np.linspace(0, len(lam) - 1, min(len(lam), SCREEN_LAMBDAS)).astype(int))
        self._use(lam[few], phi[:, few])  # a few multipliers to rank the conditions
        self.conds = {}
        for s in range(1, self.M + 1):  # seconds with many models: the limits are checked per size
            check_limits(bounder.stats, deadline, max_work)
            self.conds[s] = self._strongest(conditions(bounder, g, K, s), s)
        some = np.unique(np.linspace(0, len(lam) - 1, min(len(lam), ROOT_LAMBDAS)).astype(int))
        lam, phi = lam[some], phi[:, some]
        self._use(lam, phi)
        vals = self._keys((0,) * self.M)
        order = np.argsort(-vals)
        pick = np.unique(np.concatenate([order[: MAX_LAMBDAS // 2],
                                         np.linspace(0, len(lam) - 1, MAX_LAMBDAS // 2).astype(int)]))
        self._use(lam[pick], phi[:, pick])
        self.root_key = float(vals.max())
        self.lam_all, self.phi_all = alloc._lambdas, alloc._phi
        self.lam_root, self.phi_root = self.lam, self.phi

    def _use(self, lam: np.ndarray, phi: np.ndarray) -> None:
        """Key with the multipliers ``lam``, whose costs are the columns ``phi`` (kept C-ordered: the
        compiled knapsack reads its rows, and a column selection is not)."""
        self.lam, self.phi = lam, np.ascontiguousarray(phi)

    def _strongest(self, conds: list[Condition], s: int) -> dict[int, list[Condition]]:
        """Per dominant model (``-1``: none), the ``KEEP_CONDITIONS`` conditions with the largest score.

        The score of a condition is its least key over the supports of size ``s`` at their
        smallest counts (the dominant model, when there is one, at ``K // 3`` epochs).
        """
        out: dict[int, list[Condition]] = {}
        for d in sorted({c.dominant for c in conds}):
            group = [c for c in conds if c.dominant == d]
            if len(group) <= KEEP_CONDITIONS:
                out[d] = group
                continue
            score = []
            for c in group:
                worst = math.inf
                for U in itertools.combinations(range(self.M), s):
                    if d >= 0 and d not in U:
                        continue
                    lo = np.array([1 if m in U else 0 for m in range(self.M)])
                    if d >= 0:
                        lo[d] = max(1, self.K // 3)
                    room = self.K - int(lo.sum())
                    if room >= 0:
                        worst = min(worst, float(self._support(c, lo, room, np.array(U, dtype=np.int64)).max()))
                score.append(worst)
            keep = [group[i] for i in np.argsort(score, kind="stable")[::-1][:KEEP_CONDITIONS]]
            # the joint Cantelli condition is strongest where the root score does not look
            out[d] = keep + [c for c in group if c.entries == "cantelli" and all(c is not k for k in keep)]
        return out

    def key(self, n: tuple[int, ...]) -> float:
        """Lower bound on ``LB(n')`` over the certifiable ``n'`` of the subtree of ``n`` (inf: none).

        Multipliers: the best one for ``n`` itself and ``MAX_LAMBDAS - 1`` larger ones, denser
        near it (the subtree's vectors have more epochs, so their best multipliers are larger;
        any set of multipliers gives a valid key).
        """
        if any(n):
            i = int(np.argmax(lagrangian(np.asarray(n, dtype=np.int64), self.phi_all, self.lam_all, self.limit)))
            last = len(self.lam_all) - 1
            idx = np.unique(np.rint(i + (last - i) * np.linspace(0.0, 1.0, MAX_LAMBDAS) ** 2).astype(int))
            self._use(self.lam_all[idx], self.phi_all[:, idx])
        else:
            self.lam, self.phi = self.lam_root, self.phi_root
        vals = self._keys(n)
        if any(n) and self.cover:
            U, lo = self._binding[int(np.argmax(vals))]
            if U is not None and self._grow(U, lo):  # a tangent where this subtree's bound binds
                vals = self._keys(n)
        return float(vals.max())

    def _keys(self, n: tuple[int, ...]) -> np.ndarray:
        """The bound for each multiplier of ``self.lam``: the least over the supports."""
        M = self.M
        j = max((i for i in range(M) if n[i] > 0), default=-1)
        forced = tuple(i for i in range(M) if n[i] > 0)
        optional = tuple(range(j + 1, M))
        best = np.full(len(self.lam), math.inf)
        self._binding = [(None, None)] * len(self.lam)
        for r in range(len(optional) + 1):
            for extra in itertools.combinations(optional, r):
                U = forced + extra
                if not U or sum(1 << m for m in U) not in self.walkable:
                    continue  # no sequence uses exactly these models
                lo = np.array([n[m] if n[m] > 0 else (1 if m in extra else 0) for m in range(M)])
                room = self.K - int(lo.sum())
                if room < 0:
                    continue
                free = np.array([m for m in U if m >= max(j, 0)], dtype=np.int64)
                covers = self._built(U)
                vals = np.full(len(self.lam), -math.inf)
                base = self._base(lo)
                for c in (covers or []) + self._rule(U, lo):  # the covers are usually the strongest
                    vals = np.maximum(vals, self._support(c, lo, room, free, base))
                    if np.all(vals >= best):
                        break  # this support cannot lower the least over the supports
                if covers is None and j >= 0 and np.any(vals < best) and self._wants_cover(U, float(vals.max())):
                    for c in self._covers(U):
                        vals = np.maximum(vals, self._support(c, lo, room, free, base))
                for i in np.nonzero(vals < best)[0]:
                    self._binding[i] = (U, lo)
                best = np.minimum(best, vals)
        finite = np.isfinite(best)  # conservative against round-off, as LB(n)
        return np.where(finite, best - 1e-9 * np.abs(np.where(finite, best, 0.0)) - 1e-9, best)

    def admits(self, n: tuple[int, ...]) -> bool:
        """False when the count vector ``n`` itself fails a condition of its support (Lemma 8)."""
        U = [m for m in range(self.M) if n[m] > 0]
        if not U:
            return True
        if not self.meets(n, self._used(U, np.asarray(n))):
            return False
        if self.cover and self._grow(tuple(U), np.asarray(n)):  # a tangent at this vector's direction
            return self.meets(n, self._used(U, np.asarray(n)))
        return True

    def _used(self, U, lo: np.ndarray) -> list[Condition]:
        """The conditions used on support ``U`` at counts ``lo``: those without a dominant model,
        those whose dominant model is the one with the largest ``lo_m A_m E X_m``, and the support's
        cover conditions once built (any subset is valid)."""
        return self._rule(U, lo) + (self._built(U) or [])

    def _rule(self, U, lo: np.ndarray) -> list[Condition]:
        """Rule R's conditions on ``U``: those without a dominant model and those whose dominant
        model is the one with the largest ``lo_m A_m E X_m``."""
        conds = self.conds[len(U)]
        lead = max(U, key=lambda m: (lo[m] * self.weight[m], -m))
        return conds.get(-1, []) + conds.get(lead, [])

    def _wants_cover(self, U, value: float) -> bool:
        """Build (or use) the cover conditions of ``U``: only when they could lower nothing but the
        key below ``cap`` matters, i.e. the support's value is still below it."""
        if len(U) >= COVER_LATE_SIZE and self.bounder.stats.get("count_vectors", 0) < COVER_AFTER:
            return False  # large supports' covers cost seconds: only for searches that last
        return (self.cover and COVER_MIN_SIZE <= len(U) <= COVER_MAX_SIZE and value < self.cap
                and not any(self.bounder.noise[m].is_constant for m in U))  # constant factors: nothing to diversify

    def _covers(self, U) -> list[Condition]:
        """The cover conditions of support ``U`` at this data effect (Lemma 12). The covers are built
        at data effect 1 and shared by every group (``bounder.covers``): ``alpha . C >= R_1 / g``."""
        U = tuple(U)
        b = self.bounder
        made = b.covers.get(U)
        if made is None:
            made = b.covers[U] = SupportCovers(b, U, self.deadline, self.max_work)
        out = self._cover_conds.setdefault(U, [])
        for w, need in made.needs(self.g, len(out)):  # the tangents added since (by any group)
            out.append(linear_condition(b, self.K, w, need))
        return out

    def _built(self, U) -> list[Condition] | None:
        """The cover conditions of ``U`` when its covers exist (built by any group), else None."""
        return self._covers(U) if self.cover and tuple(U) in self.bounder.covers else None

    def _grow(self, U: tuple[int, ...], counts: np.ndarray) -> bool:
        """Add the tangent at the direction of ``counts`` to the covers of ``U`` (True when added):
        only for a support whose covers exist, at most ``MAX_TANGENTS`` per support, away from its
        other tangents, and one per ``TANGENT_EVERY`` count vectors popped (deterministic)."""
        b = self.bounder
        made = b.covers.get(U)
        if made is None or len(made.made) >= MAX_TANGENTS:
            return False
        if (b.stats.get("cover_tangents", 0) + 1) * TANGENT_EVERY > b.stats.get("count_vectors", 0):
            return False
        v = made.direction(counts)
        if made.near(v, TANGENT_GAP):
            return False
        made.add(v)
        b.stats["cover_tangents"] = b.stats.get("cover_tangents", 0) + 1
        self._covers(U)
        return True

    def meets(self, n: tuple[int, ...], conds: list[Condition]) -> bool:
        """``n`` meets every condition of ``conds``, its models placed as Lemma 8 allows, and some
        sequence uses exactly its models (a walk of allowed switches)."""
        lo = np.asarray(n, dtype=np.int64)
        if self.bounder.walks.mask(n) not in self.walkable:
            return False
        return all(self._knapsack(c, lo, 0, _NONE)[1] >= c.need_for(lo > 0) for c in conds)

    def _knapsack(self, c: Condition, lo: np.ndarray, room: int, free: np.ndarray,
                  base: np.ndarray | None = None) -> tuple[int, float, np.ndarray]:
        """:func:`support_knapsack` of ``c`` at ``lo``: its outcome, ``sum_m h'_m(lo_m)`` and the key.

        ``h'`` is ``h`` with each model's linear part shifted by the epochs ``P_m`` that the models
        ranked before it surely run (docs/exact-proofs.md, Lemma 8); offset 0 without a common shape.
        """
        need = c.need_for(lo > 0)
        b = (self._base(lo) if room else _EMPTY_ROW) if base is None else base  # read only with room
        if c.beta is None:
            return support_knapsack(False, c.h, c.inc, _EMPTY_ROW, _EMPTY, _EMPTY, _EMPTY, _EMPTY, lo, _NONE,
                                    free, room, need, self.tol, self.phi, b)
        return support_knapsack(True, _EMPTY, _EMPTY, c.beta, self.a, self.cum, c.sep, c.sep_inc, lo,
                                self._offsets(c.rank, lo), free, room, need, self.tol, self.phi, b)

    def _offsets(self, rank: tuple[int, ...], lo: np.ndarray) -> np.ndarray:
        """Per model, the epochs of the models placed before it (Lemma 8b's order, :meth:`_order`)."""
        n = lo.tolist()  # plain ints: indexing with them is cheaper than with numpy's
        off = np.zeros(self.M, dtype=np.int64)
        run = 0
        for m in self._order(rank, lo):
            if n[m] > 0:
                off[m] = run
                run += n[m]
        return off

    def _order(self, rank: tuple[int, ...], lo: np.ndarray) -> tuple[int, ...]:
        """The placement order of Lemma 8b on the support of ``lo``: its switch graph's components in
        the order every walk passes them, each in ``rank`` order (``rank`` when no walk covers it)."""
        key = ((lo > 0).tobytes(), rank)
        out = self._orders.get(key)
        if out is None:
            blocks = self.bounder.walks.of(self.bounder.walks.mask(lo))
            out = rank if blocks is None else tuple(m for blk in blocks for m in rank if m in blk)
            self._orders[key] = out
        return out

    def _base(self, lo: np.ndarray) -> np.ndarray:
        """The Lagrangian cost of ``lo`` itself, for each multiplier of ``self.lam``."""
        return lagrangian(np.asarray(lo, dtype=np.int64), self.phi, self.lam, self.limit)

    def _support(self, c: Condition, lo: np.ndarray, room: int, free: np.ndarray,
                 base: np.ndarray | None = None) -> np.ndarray:
        """min of the Lagrangian cost over ``n' >= lo`` (``free`` coordinates grow) meeting ``c``
        (``base``: :meth:`_base` of ``lo``, when the caller has it)."""
        stats = self.bounder.stats  # a deterministic work counter (formulations/exact/work.py)
        stats["supports"] = stats.get("supports", 0) + 1
        out = self._base(lo) if base is None else base
        # the least cost of the increments that reach the condition: a fractional knapsack, with a
        # conservative margin against round-off, as for LB(n)
        kind, _, vals = self._knapsack(c, lo, room, free, out)
        if kind == MET:
            return out
        if kind == EMPTY:
            return np.full(len(self.lam), math.inf)  # no n' of this support meets the condition
        if kind == MANY:  # the work of the (E, L) arrays the knapsack stood for
            stats["support_cells"] = stats.get("support_cells", 0) + len(free) * room * len(self.lam)
        return vals
