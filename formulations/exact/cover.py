"""Cover conditions: linear necessary conditions of one support, certified by exact brackets.

For a support ``U`` (the models a sequence uses, ``2 <= s <= 6``) and a data effect ``g``, every
sequence certified for the target has (docs/exact-proofs.md, Lemma 12)

    sum_{m in U} alpha_m C_m >= R / g,      C_m = sum of a_m(k) over the epochs k that run m,

for weights ``alpha >= 0``, where ``R`` comes from a *cover* of the directions ``v = C / |C|_1``
by cells. On a cell, ``v . X`` is bounded pointwise by a sum of independent *lifted* laws
(``v_c X + e |X - c|``, or ``(v_c + e)(X - c)^+`` for a small coordinate, with ``X`` rounded up
to a grid); a certified bracket of ``l0 - t (lifted sum) + E_1 + ... + E_{s-1}`` above the target
refutes every ``C = t' v`` of the cell with ``t' <= t`` (the loss quantile is non-increasing in
each ``C_m`` since ``X >= 0``). The ``E_j`` lie below the entries every such sequence makes
(:func:`entry_laws`); the other penalties are ``>= 0``. ``R`` aims at ``1 - COVER_MARGIN[s]`` times an
estimate; a cell that fails is split, one that fails at the finest level lowers ``R``.
:class:`SupportCovers` keeps a support's conditions and adds tangents at the directions where the
search needs them (any weights give a valid condition).

The product bound and Cantelli pay for each model's noise separately; a cover uses the exact law
of the sum, so it keeps the diversification of several models (0.90-0.98 of the true scale
where Rule R reaches 0.84-0.93 on the larger tier, docs/exact-proofs.md).
"""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np

from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.knobs import (
    COVER_MARGIN,
    COVER_MAX_CELLS,
    COVER_MAX_LEVEL,
    COVER_START_CELLS,
    COVER_WIDTH_RTOL,
    LIFT_PIVOT,
    MARGIN_RTOL,
    TANGENT_MARGIN,
)
from deplbench.formulations.exact.laws import min_law
from deplbench.formulations.exact.lifted import Rounded, lifted
from deplbench.formulations.exact.search import check_limits
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.laws.distributions import Dist
from deplbench.numeric import dot

Cell = tuple[tuple[int, ...], tuple[int, ...]]  # (levels, indices) of the first s - 1 coordinates


class Cover:
    """The refuted scales of the cells of one support, at data effect 1.

    The relaxed loss depends on ``g`` and ``C`` only through ``g C``, so a condition
    ``alpha . (g C) >= R`` certified here is ``alpha . C >= R / g`` at data effect ``g``.

    Parameters
    ----------
    bounder : Bounder
        Supplies the noise laws, entry laws, target and quantile level (``valid``, ``low >= 0``).
    U : tuple of int
        The support (``2 <= len(U) <= COVER_MAX_SIZE``).
    deadline : float, optional
        ``time.perf_counter()`` value past which :class:`~deplbench.formulations.exact.search.Timeout` is raised.
    max_work : int, optional
        The search's work limit (``exact``'s ``max_work``; 0: none): :class:`~deplbench.formulations.exact.search.WorkLimit` is raised
        before a bracket once the work of ``bounder.stats`` exceeds it, so that building a large
        support's covers (thousands of brackets) does not run far past the limit.
    """

    def __init__(self, bounder: Bounder, U: tuple[int, ...], deadline: float | None = None, max_work: int = 0):
        self.b, self.U, self.s = bounder, tuple(U), len(U)
        self.deadline = deadline
        self.max_work = max_work
        self.entries = entry_laws(bounder, U) if bounder.pmin is not None else []
        self.k0 = COVER_START_CELLS[self.s]
        for m in self.U:  # one table per noise law, kept by the bounder for every cover
            if m not in bounder.rounded:
                bounder.rounded[m] = Rounded(bounder.noise[m])
        self.rounded = bounder.rounded
        # a cell: (levels, index) per coordinate, width 1 / (k0 2^level) from index * width
        self.cells: dict[Cell, float] = {}  # cell -> refuted scale
        self.centres: list[tuple[np.ndarray, float]] | None = None  # starting cells' centres, scales
        self.sd = np.sqrt(np.maximum(bounder.nvar[list(self.U)], 0.0))  # which width to halve first
        self.parent: dict[Cell, Cell] = {}  # cell -> the cell it was split from
        self.held: dict[Cell, float] = {}  # cell -> the largest scale certified
        self.failed: dict[Cell, float] = {}  # cell -> the least scale whose bracket failed

    # ---- one cell ----------------------------------------------------------------------------
    def _lo(self, laws: list[Dist], shift: float, t: float, weights: np.ndarray | None = None) -> float:
        """Lower end of the certified bracket of ``l0 - t (sum_m w_m Y_m + shift) + entries``."""
        b = self.b
        check_limits(b.stats, self.deadline, self.max_work)
        b.stats["cover_brackets"] = b.stats.get("cover_brackets", 0) + 1  # counted as spent: the work sees it
        dists = list(laws)
        coefs = [-t] * len(laws) if weights is None else [-t * float(w) for w in weights]
        dists += self.entries
        coefs += [1.0] * len(self.entries)
        keep = [(d, x) for d, x in zip(dists, coefs, strict=True) if x != 0.0]
        terms = LossTerms(b.l0 - t * shift, tuple(d for d, _ in keep), tuple(x for _, x in keep))
        return quantile_bracket(terms, b.omega, COVER_WIDTH_RTOL * b.l0).lo

    def scale(self, cell, guess: float = 0.0) -> float:
        """The largest checked scale ``t`` such that the relaxed loss at ``C = t v`` is certified
        above the target for every direction ``v`` of the cell (0 if none)."""
        laws, shift, vc = self._laws(cell)
        return self.scale_of(laws, shift, vc, guess)

    def scale_of(self, laws: list[Dist], shift: float, vc: np.ndarray, guess: float = 0.0,
                 weights: np.ndarray | None = None) -> float:
        """The largest checked ``t`` with ``l0 - t (sum Y + shift) + entries`` certified above the
        target: secant steps on the bracket's lower end towards the root, then a scale just below
        it (only scales whose bracket was checked are returned)."""
        b = self.b
        goal = b.target + MARGIN_RTOL * b.l0
        best = 0.0

        def probe(t: float) -> float:
            nonlocal best
            q = self._lo(laws, shift, t, weights)
            if q > goal:
                best = max(best, t)
            return q

        if guess <= 0.0:  # the mean loss reaches the target at this scale
            pen = sum(d.mean for d in self.entries)
            guess = 0.9 * (b.l0 - b.target + pen) / max(dot(b.nmean[list(self.U)], vc), 1e-12)
        t0, q0 = guess, probe(guess)
        t1 = guess * (1.05 if q0 > goal else 0.95)
        q1 = probe(t1)
        for _ in range(6):
            if q1 == q0:
                break
            t2 = min(max(t1 + (goal - q1) * (t1 - t0) / (q1 - q0), 0.5 * t1), 2.0 * t1)
            t0, q0, t1 = t1, q1, t2
            q1 = probe(t1)
            if abs(q1 - goal) < 2 * COVER_WIDTH_RTOL * b.l0:
                break
        t = t1 * (1 - 2e-3)
        for _ in range(4):
            if t <= best or probe(t) > goal:
                break
            t *= 1 - 4e-3
        return best

    # ---- cells -------------------------------------------------------------------------------
    def _box(self, cell) -> tuple[np.ndarray, np.ndarray]:
        """The cell's lower corner and widths in the first ``s - 1`` coordinates."""
        levels, idx = cell
        step = 1.0 / np.array([self.k0 << lv for lv in levels], dtype=float)
        return np.asarray(idx, dtype=float) * step, step

    def _centre(self, cell) -> tuple[np.ndarray, np.ndarray]:
        """Centre ``v_c`` and half-widths ``e`` of the cell's directions, coordinate by coordinate."""
        lo, step = self._box(cell)
        last_hi = 1.0 - float(lo.sum())
        last_lo = max(0.0, last_hi - float(step.sum()))
        return (np.append(lo + step / 2, (last_lo + last_hi) / 2),
                np.append(step / 2, (last_hi - last_lo) / 2))

    def _laws(self, cell) -> tuple[list[Dist], float, np.ndarray]:
        """Laws ``Y_m`` and a constant ``shift`` with ``v . X <= sum_m Y_m + shift`` pointwise for
        every direction ``v`` of the cell (Lemma 12 (c)). With ``B`` the small coordinates
        (``v_cm <= e_m``), ``d = v - v_c`` and ``k = 1 - sum_{m not in B} v_cm``,
        ``v . X = sum_B v_m (X_m - c) + sum_{not B} (v_cm X_m + d_m (X_m - c)) + c k``
        ``<= sum_B (v_cm + e_m) (X_m - c)^+ + sum_{not B} (v_cm X_m + e_m |X_m - c|) + c k``."""
        vc, e = self._centre(cell)
        mu = self.b.nmean[list(self.U)]
        c = LIFT_PIVOT * dot(vc, mu) / max(float(vc.sum()), 1e-12)
        laws = [lifted(self.rounded[m], float(a), float(h), c) for m, a, h in zip(self.U, vc, e, strict=True)]
        small = vc <= e  # bounded by (v_c + e) (X - c)^+, outside the centre's sum
        return laws, c * (1.0 - float(vc[~small].sum())), vc

    def _rho(self, cell, guess: float = 0.0) -> float:
        r = self.cells.get(cell)
        if r is None:
            r = self.cells[cell] = self.scale(cell, guess)
        return r

    def _min_dot(self, cell, alpha: np.ndarray) -> float:
        """``min alpha . v`` over the cell's directions (box of the first ``s - 1`` coordinates,
        ``v_s = 1 - sum``, ``v >= 0``): greedy, most negative reduced weight first."""
        lo, step = self._box(cell)
        room = 1.0 - float(lo.sum())
        v = lo.copy()
        red = alpha[:-1] - alpha[-1]
        for j in np.argsort(red):
            if red[j] >= 0 or room <= 0:
                break
            add = min(float(step[j]), room)
            v[j] += add
            room -= add
        return dot(alpha[:-1], v) + float(alpha[-1]) * max(0.0, 1.0 - float(v.sum()))

    def _children(self, cell):
        """The two halves of the cell along the coordinate whose lifting costs most (the largest
        width times the model's noise deviation, below ``COVER_MAX_LEVEL``), those inside the simplex."""
        levels, idx = cell
        _, step = self._box(cell)
        cost = np.where(np.array(levels) < COVER_MAX_LEVEL, step * self.sd[:-1], -1.0)
        j = int(np.argmax(cost))
        for b in (0, 1):
            kid = (levels[:j] + (levels[j] + 1,) + levels[j + 1:], idx[:j] + (2 * idx[j] + b,) + idx[j + 1:])
            lo, _ = self._box(kid)
            if lo.sum() < 1.0 - 1e-12:
                self.parent[kid] = cell
                yield kid

    def _starts(self) -> list[Cell]:
        """The starting cells: ``k0`` per axis, those inside the simplex."""
        zero = (0,) * (self.s - 1)
        return [(zero, idx) for idx in itertools.product(range(self.k0), repeat=self.s - 1) if sum(idx) < self.k0]

    def _held(self, cell) -> float:
        """The largest scale certified on the cell or a cell containing it (its directions are theirs)."""
        out = self.held.get(cell, 0.0)
        while cell in self.parent:
            cell = self.parent[cell]
            out = max(out, self.held.get(cell, 0.0))
        return out

    def _certified(self, cell, t: float) -> bool:
        """The relaxed loss is certified above the target at scale ``t`` on every direction of the cell.

        Remembered across the tangents of the support: a scale at most one certified before on the
        cell or a cell containing it holds (Lemma 12 (d) refutes every lower scale on all of that
        cell's directions); one at least a failed scale is taken as failed without its bracket (a
        failure only splits the cell or lowers ``R``: never unsound).
        """
        if t <= self._held(cell):
            return True
        if t >= self.failed.get(cell, math.inf):
            return False
        laws, shift, _ = self._laws(cell)
        ok = self._lo(laws, shift, t) > self.b.target + MARGIN_RTOL * self.b.l0
        if ok:
            self.held[cell] = t
        else:
            self.failed[cell] = t
        return ok

    def estimate(self, alpha: np.ndarray) -> float:
        """``min rho(v) alpha . v`` over the centres ``v`` of the starting cells, with the exact
        (unlifted) law of ``v . X``: about the largest ``R`` a cover can certify (not certified)."""
        if self.centres is None:  # the centres' scales do not depend on alpha: once per support
            self.centres = []
            plain = [self.b.noise[m] for m in self.U]
            for cell in self._starts():
                vc, _ = self._centre(cell)
                vc = vc / vc.sum()
                self.centres.append((vc, self.scale_of(plain, 0.0, vc, weights=vc)))
        return min(rho * dot(alpha, vc) for vc, rho in self.centres)

    def bound(self, alpha: np.ndarray, margin: float) -> float:
        """A certified ``R(alpha)`` (``alpha`` on ``U``, non-negative).

        Aim at ``goal = (1 - margin) estimate``: a cell is certified when its lifted loss at scale
        ``goal / min_cell alpha . v`` lies above the target (then every ``C = t v`` of the cell with
        ``alpha . C <= goal`` is refuted), else it is split; a cell that fails at the finest level
        (or past the budget) lowers ``goal`` to its own certified value ``rho min_cell alpha . v``
        (cells certified at a higher goal stay certified). ``R`` is the final goal.
        """
        alpha = np.asarray(alpha, dtype=float)
        goal = (1 - margin) * self.estimate(alpha)
        todo = self._starts()
        budget = COVER_MAX_CELLS[self.s] * 2 ** (self.s - 1)  # binary splits
        while todo:
            cell = todo.pop()
            dot = self._min_dot(cell, alpha)
            if dot <= 0.0:
                return 0.0
            if self._certified(cell, goal / dot):
                continue
            budget -= 1
            if min(cell[0]) < COVER_MAX_LEVEL and budget > 0:
                todo.extend(self._children(cell))
            else:  # the cells certified so far hold for any lower goal
                goal = min(goal, self._rho(cell) * dot)
        return max(goal, 0.0)


def entry_laws(b: Bounder, U) -> list[Dist]:
    """``s - 1`` laws, one below each entry of every sequence with support ``U`` (Lemma 12 (a)).

    With ``P_m`` the least law of a switch into ``m`` from ``U`` (Lemma 10): a model no switch of
    ``U`` enters must come first, and the entries are exactly into the others (laws ``P_m``).
    Otherwise, with ``U`` sorted by the mean of ``P_m``, ``L_j = min(P_(j), P_(j+1))`` (Lemma 3):
    whatever model ``(i)`` comes first, the entries into ``(j)``, ``j < i``, are above ``L_j`` and
    those into ``(j)``, ``j > i``, above ``L_(j-1)``.
    """
    mask = sum(1 << m for m in U)
    first = b.walks.forced_first(mask)
    if first >= 0:
        return [b.entry_law(m, mask) for m in U if m != first]
    laws = sorted((b.entry_law(m, mask) for m in U), key=lambda d: d.mean)
    return [min_law([laws[j], laws[j + 1]]) for j in range(len(laws) - 1)]


def tangent(b: Bounder, U: tuple[int, ...], v: np.ndarray) -> np.ndarray:
    """Weights ``alpha`` on ``U``: the normal-approximation tangent of the quantile at the
    direction ``v`` (any weights give a valid condition; the tangent makes it tight near ``v``)."""
    z = NormalDist().inv_cdf(b.omega)
    mu = b.nmean[list(U)]
    var = b.nvar[list(U)]
    sd = math.sqrt(dot(var, v ** 2))
    return np.maximum(mu - z * var * v / max(sd, 1e-12), 1e-3 * mu)


def first_directions(b: Bounder, U: tuple[int, ...]) -> list[np.ndarray]:
    """The directions of a support's first tangents: the centroid and, on two or three models, the
    direction heavy on the model with the most progress per epoch."""
    s = len(U)
    lead = int(np.argmax(b.a[list(U), 0] * b.nmean[list(U)]))  # the most progress per epoch
    dirs = [np.full(s, 1.0 / s)]
    if s <= 3:  # larger supports: the centroid only (a cover costs 10-40 times more there)
        dirs.append(np.where(np.arange(s) == lead, 0.7, 0.3 / (s - 1)))
    return dirs


def tangents(b: Bounder, U: tuple[int, ...]) -> list[np.ndarray]:
    """The weights of a support's first cover conditions (tangents at :func:`first_directions`)."""
    return [tangent(b, U, v) for v in first_directions(b, U)]


class SupportCovers:
    """The cover conditions of one support at data effect 1, grown where the search needs them.

    ``made`` holds ``(w, R)``: ``sum_m w_m C_m >= R / g`` for every sequence with support ``U``
    certified at data effect ``g`` (Lemma 12 (e)); ``w`` is zero off ``U``. It starts with the
    weights of :func:`tangents`; :meth:`add` certifies the tangent at another direction with the
    same :class:`Cover` (its cells' refuted scales are reused).
    """

    def __init__(self, bounder: Bounder, U: tuple[int, ...], deadline: float | None = None, max_work: int = 0):
        self.b, self.U = bounder, tuple(U)
        self.cover = Cover(bounder, U, deadline, max_work)
        self.made: list[tuple[np.ndarray, float]] = []
        self._keyed: dict[tuple[float, int], list[tuple[bytes, np.ndarray, float]]] = {}
        self.dirs: list[np.ndarray] = []
        for v in first_directions(bounder, U):
            self.add(v, COVER_MARGIN[len(U)])
        self.first = len(self.made)  # the first tangents (those added later: stats["cover_tangents"])

    def add(self, v: np.ndarray, margin: float | None = None) -> None:
        """Certify the tangent at direction ``v`` (on ``U``, summing to 1) and keep it, aiming at
        ``1 - margin`` times its estimate (default ``TANGENT_MARGIN[s]``)."""
        alpha = tangent(self.b, self.U, v)
        w = np.zeros(self.b.M)
        w[list(self.U)] = alpha
        self.made.append((w, self.cover.bound(alpha, TANGENT_MARGIN[len(self.U)] if margin is None else margin)))
        self.dirs.append(np.asarray(v, dtype=float))

    def needs(self, g: float, start: int = 0) -> list[tuple[np.ndarray, float]]:
        """``(w, need)`` of the conditions from ``start`` on at data effect ``g``: ``w . C >= need``,
        ``need`` being ``R / g`` lowered by a round-off margin (relative ``1e-9``, as ``LB(n)``)."""
        tol = 1e-9 * abs(self.b.l0) + 1e-12
        return [(w, R1 / g * (1 - 1e-9) - tol) for w, R1 in self.made[start:]]

    def keyed_needs(self, g: float) -> list[tuple[bytes, np.ndarray, float]]:
        """:meth:`needs` of every condition with each weight vector's bytes (the placed sums' key),
        remembered per ``g`` until a tangent is added: the prefix search asks this at every prefix."""
        key = (g, len(self.made))
        out = self._keyed.get(key)
        if out is None:
            out = self._keyed[key] = [(w.tobytes(), w, need) for w, need in self.needs(g)]
        return out

    def near(self, v: np.ndarray, gap: float) -> bool:
        """Some tangent of the support was taken within L1 distance ``gap`` of ``v``."""
        return any(float(np.abs(v - d).sum()) < gap for d in self.dirs)

    def direction(self, counts: np.ndarray) -> np.ndarray:
        """The direction ``C / |C|_1`` of the counts on ``U``, the models placed by decreasing
        progress amplitude (the order that maximises the progress of near-equal weights)."""
        b = self.b
        C = np.zeros(len(self.U))
        pos = 0
        for i in sorted(range(len(self.U)), key=lambda i: -b.a[self.U[i], 0]):
            m = self.U[i]
            k = int(counts[m])
            C[i] = b.cum[m, pos + k] - b.cum[m, pos]
            pos += k
        return C / max(float(C.sum()), 1e-300)
