"""Region keys for the ``exact`` lattice: a lower bound on the cost of a whole subtree.

The subtree of a count vector ``n`` (``docs/exact.md``, the lattice) is
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
Proofs: ``docs/exact.md``, section "Region keys".
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from deplbench.formulations.exact_bounds import Bounder
from deplbench.instances.loss import LossTerms
from deplbench.instances.quantile import quantile_bracket

MAX_LAMBDAS = 12  # allocation multipliers tried per key (any subset is valid)
ROOT_LAMBDAS = 64  # multipliers of the root key (evenly spaced breakpoints)
SCREEN_LAMBDAS = 8  # multipliers used to rank the conditions at construction
KEEP = 2  # necessary conditions kept per support size and dominant model (any subset is valid)
SKEW = (0.5, 0.85)  # product-bound skews: the dominant model at level p / rho (docs/exact.md)


@dataclass
class Condition:
    """``sum_{m in U} h[m, n'_m] >= need`` for every certified ``n'`` of support size ``s``.

    ``h = g beta_m cum_m(k) + sep[m, k]`` at position offset 0. With a common progress shape
    (``a_m = A_m h``: every model has the same ``B`` and ``p``) the linear part is
    position-aware (docs/exact.md, Lemma 8): a model ranked after others in ``rank`` (by
    ``beta_m A_m``, descending) gets ``beta_m (cum_m(P + k) - cum_m(P))`` with ``P`` the epochs
    the models ranked before it surely run. ``beta`` is None when there is no common shape.
    ``dominant`` is the model whose threshold is skewed low (``-1``: none).
    """

    h: np.ndarray  # (M, K + 1), h[:, 0] = 0
    inc: np.ndarray  # (M, K): increments of the least concave majorant of each row
    need: float
    beta: np.ndarray | None = None  # (M,): coefficient of the linear part, times g
    sep: np.ndarray | None = None  # (M, K + 1): the unshifted part
    sep_inc: np.ndarray | None = None  # (M, K): its concave majorant's increments
    rank: tuple[int, ...] = ()
    dominant: int = -1
    entries: str | None = None  # "level" (product bound) or "cantelli": the support's entries (Lemma 10)
    level: float = 1.0  # with "level": P(entry >= y_m) >= level for each entry
    src: Bounder | None = None  # supplies the entry laws of a support

    def need_for(self, used: np.ndarray) -> float:
        """``need`` on a support: plus the entries into all its models but the first
        (``sum_U y - max_U y``: the first model is unknown, Lemma 10), less, for the joint
        Cantelli condition, ``kappa sqrt(sum_U var)`` (Lemma 11)."""
        if self.entries is None or self.src is None:
            return self.need
        mask = int(sum(1 << int(m) for m in np.flatnonzero(used)))
        if mask & (mask - 1) == 0:
            return self.need  # one model: no entry
        if self.entries == "level":
            ys = self.src.entry_levels(mask, self.level)[used]
            return self.need + float(ys.sum() - ys.max())
        mean, var = self.src.entry_moments(mask)
        ys = mean[used]
        return self.need + float(ys.sum() - ys.max()) - self.src.cantelli * (1 + 1e-6) * math.sqrt(
            float(var[used].sum()) * (1 + 1e-6))


def concave_increments(h: np.ndarray) -> np.ndarray:
    """Increments of a concave majorant: suffix maxima of ``diff(h)`` per row.

    The majorant ``h~`` has ``h~(k) - h~(lo) >= h(k) - h(lo)`` for every ``lo <= k``, so a
    condition met by ``h`` is met by ``h~``, and its increments are non-increasing.
    """
    d = np.diff(h, axis=1)
    return np.maximum.accumulate(d[:, ::-1], axis=1)[:, ::-1]


def penalty_quantile(b: Bounder, s: int, level: float) -> float:
    """A lower bound on the ``level``-quantile of the ``s - 1`` mandatory ``P_min`` (0 if none)."""
    pm = b.pmin
    if pm is None or s < 2 or level <= 0.0:
        return 0.0
    if pm.is_constant:
        return (s - 1) * pm.value
    terms = LossTerms(0.0, (pm,) * (s - 1), (1.0,) * (s - 1))
    return max(0.0, quantile_bracket(terms, level, 1e-4 * abs(b.l0)).lo)


def _quantiles(b: Bounder, levels: np.ndarray) -> np.ndarray:
    """``q_{levels[m]}(X_m)`` scaled up by ``1 + 1e-12`` (only raises ``w*``)."""
    return np.array([d.value if d.is_constant else float(d.ppf(min(lv, 1.0))) * (1 + 1e-12)
                     for d, lv in zip(b.noise, levels, strict=True)])


def _thresholds(b: Bounder, p: float, s: int) -> list[tuple[int, np.ndarray]]:
    """Product-bound thresholds ``x_m`` with ``prod_{m in U} F_m(x_m) >= p`` on every support of size s.

    Equal levels ``p^(1/s)``, and per dominant model ``d`` a skewed profile: ``d`` at level
    ``p / rho``, the others at ``max(rho^(1/(s-1)), p^(1/s))`` (a support with ``d``: product
    ``>= p``; without: ``>= p`` too). Returns ``(d, x)`` pairs (``d = -1``: equal levels).
    """
    out = []
    beta = min(p ** (1.0 / s), 1.0)
    if beta < 1.0:
        out.append((-1, _quantiles(b, np.full(b.M, beta))))
    if s >= 2:
        for rho in SKEW:
            if p / rho >= 1.0:
                continue
            other = max(rho ** (1.0 / (s - 1)), beta)
            for d in range(b.M):
                lv = np.full(b.M, other)
                lv[d] = p / rho
                if other < 1.0:
                    out.append((d, _quantiles(b, lv)))
    return out


def conditions(b: Bounder, g: float, K: int, s: int) -> list[Condition]:
    """Necessary conditions for support size ``s`` and data effect ``g`` (docs/exact.md, rule R).

    The relaxed loss is ``l0 + low sum n' - W + Pi`` with ``W = g sum_m c_m X_m`` (per_run) or
    ``g sum_m sum_i a_m(i) X_mi`` (per_epoch) and ``Pi`` the ``s - 1`` mandatory ``P_min``. For
    ``p p' > 1 - omega``, ``w* >= q_p(W)`` and ``pi* <= q_{1-p'}(Pi)``, the omega-quantile is at
    least ``l0 + low sum n' - w* + pi*``. ``w*`` is separable: per_run, the product bound
    ``sum_m c_m x_m`` (thresholds of :func:`_thresholds`); both modes, Cantelli
    ``E W + sqrt(p/(1-p)) sd(W)`` with the square root bounded by the sum of its parts.
    ``h = g w_m(k) - low k``, ``need = l0 - target + pi* - 1e-6 l0``.
    """
    cum = b.cum[:, : K + 1]
    base = b.l0 - b.target - 1e-6 * abs(b.l0)
    sd = np.sqrt(np.maximum(b.nvar, 0.0)) * (1 + 1e-6)
    shape = b.shape is not None  # a common progress shape (Bounder.shape)
    if not b.per_run:
        spread = np.sqrt(np.concatenate([np.zeros((b.M, 1)), np.cumsum(b.a ** 2, axis=1)], axis=1))[:, : K + 1]
    tail = 1 - b.omega
    splits = [tail * (1 + 1e-9)] if s == 1 or b.pmin is None else \
        [tail * (1 + 1e-9), 0.1, 0.2, 0.35, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98]
    out = []
    for p in splits:
        p2 = min(1.0, tail / p * (1 + 1e-6))  # p * p2 > 1 - omega
        pi = penalty_quantile(b, s, 1 - p2)
        rows = []  # (dominant, beta, unshifted part)
        if b.per_run:
            rows += [(d, x, np.zeros_like(cum)) for d, x in _thresholds(b, p, s)]
        kappa = math.sqrt(p / (1 - p))
        if b.per_run:
            rows.append((-1, b.nmean * (1 + 1e-12) + kappa * sd, np.zeros_like(cum)))
        else:
            rows.append((-1, b.nmean * (1 + 1e-12), kappa * sd[:, None] * spread))
        ys = [(pi, 1.0)]
        if s >= 2 and b.pmin is not None and p2 < 1.0:  # entries into each model, product bound
            ys.append((0.0, p2 ** (1.0 / (s - 1))))
        for d, beta, rest in rows:
            for pen, level in ys:
                out.append(_condition(b, g, K, beta, rest, base + pen, d, level, shape))
    if b.per_run and s >= 2 and b.pmin is not None:
        for d, x, level in _joint(b, s):
            out.append(_condition(b, g, K, x, np.zeros_like(cum), base, d, level, shape))
    out.append(_cantelli(b, g, K, s, base, shape))
    return out


def _cantelli(b: Bounder, g: float, K: int, s: int, base: float, shape: bool) -> Condition:
    """Cantelli on the whole relaxed loss, entries included (Lemma 11).

    ``q_omega(l) >= E l - kappa sd(l)`` with ``kappa = sqrt((1 - omega) / omega)``; ``E l`` has the
    linear progress part and at least ``sum_U e - max_U e`` of entries (``e`` the means of the
    ``P_in``), ``sd(l) <= sd(W) + sqrt(sum_U var P_in)``, ``sd(W) <= g sum_m sd_m C_m`` (per_run) or
    ``g sum_m sd_m sqrt(sum_{earliest} a_m^2)`` (per_epoch).
    """
    kappa = b.cantelli * (1 + 1e-6)
    sd = np.sqrt(np.maximum(b.nvar, 0.0)) * (1 + 1e-6)
    if b.per_run:
        beta, rest = b.nmean * (1 + 1e-12) + kappa * sd, np.zeros((b.M, K + 1))
    else:
        spread = np.sqrt(np.concatenate([np.zeros((b.M, 1)), np.cumsum(b.a ** 2, axis=1)], axis=1))[:, : K + 1]
        beta, rest = b.nmean * (1 + 1e-12), kappa * sd[:, None] * spread
    c = _condition(b, g, K, beta, rest, base, -1, 1.0, shape)
    if s >= 2 and b.pmin is not None:
        c.entries = "cantelli"
    return c


def _condition(b: Bounder, g: float, K: int, beta: np.ndarray, rest: np.ndarray, need: float, d: int,
               level: float, shape: bool) -> Condition:
    """The condition ``sum_m g beta_m cum_m(n'_m) + g rest[m, n'_m] - low n'_m >= need`` (plus the
    entries at ``level`` when ``level < 1``)."""
    ks = np.arange(K + 1)[None, :]
    sep = g * rest - b.low * ks
    h = g * beta[:, None] * b.cum[:, : K + 1] + sep
    h -= h[:, :1]
    sep -= sep[:, :1]
    rank = tuple(int(m) for m in np.argsort(-(beta * b.a[:, 0]), kind="stable"))
    return Condition(h, concave_increments(h), need, g * beta if shape else None, sep, concave_increments(sep),
                     rank, d, "level" if level < 1.0 else None, level, b)


def _joint(b: Bounder, s: int) -> list[tuple[int, np.ndarray, float]]:
    """Joint product-bound thresholds over the ``s`` factors and the ``s - 1`` entries (per_run).

    Dominant ``d`` at level ``(1 - omega) / rho``, the ``2 s - 2`` others at ``rho^(1/(2s-2))``:
    the product of the levels exceeds ``1 - omega`` on every support of size ``s`` (with ``d``:
    equal; without: ``rho^((2s-1)/(2s-2))``, checked). Returns ``(d, x, entry level)``.
    """
    tail = (1 - b.omega) * (1 + 1e-9)
    out = []
    for rho in SKEW:
        lead = tail / rho
        level = rho ** (1.0 / (2 * s - 2))
        if lead >= 1.0 or level >= 1.0 or level ** (2 * s - 1) <= tail:
            continue
        for d in range(b.M):
            lv = np.full(b.M, level)
            lv[d] = lead
            out.append((d, _quantiles(b, lv), level))
    return out


def walkable(M: int, allowed: set[tuple[int, int]]) -> set[int]:
    """Bitmasks of the supports ``U`` whose models one sequence can all use: a walk of allowed
    switches inside ``U`` that visits every model of ``U`` (states: current model, visited set)."""
    out = set()
    for U in range(1, 1 << M):
        members = [m for m in range(M) if U >> m & 1]
        seen = {(m, 1 << m) for m in members}
        todo = list(seen)
        while todo:
            m, vis = todo.pop()
            if vis == U:
                out.add(U)
                break
            for k in members:
                if (m, k) in allowed and (k, vis | 1 << k) not in seen:
                    seen.add((k, vis | 1 << k))
                    todo.append((k, vis | 1 << k))
    return out


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
    """

    def __init__(self, bounder: Bounder, alloc, g: float, K: int):
        self.K = K
        self.M = alloc.n_models
        self.tol = 1e-9 * abs(bounder.l0) + 1e-12
        self.a, self.cum = bounder.a, bounder.cum  # a[m, i] = a_m(i + 1); cum[m, k] = sum a_m(1..k)
        self.weight = bounder.a[:, 0] * bounder.nmean  # ranks the models for the dominant choice
        self.walkable = walkable(self.M, set(bounder.sw_index))  # supports some sequence can use
        alloc.lower_bounds(np.zeros((1, self.M)))  # builds alloc._phi
        self.limit = alloc.limit
        lam, phi = alloc._lambdas, alloc._phi
        few = np.unique(np.linspace(0, len(lam) - 1, min(len(lam), SCREEN_LAMBDAS)).astype(int))
        self.lam, self.phi = lam[few], phi[:, few]  # a few multipliers to rank the conditions
        self.conds = {s: self._strongest(conditions(bounder, g, K, s), s) for s in range(1, self.M + 1)}
        some = np.unique(np.linspace(0, len(lam) - 1, min(len(lam), ROOT_LAMBDAS)).astype(int))
        lam, phi = lam[some], phi[:, some]
        self.lam, self.phi = lam, phi
        vals = self._keys((0,) * self.M)
        order = np.argsort(-vals)
        pick = np.unique(np.concatenate([order[: MAX_LAMBDAS // 2],
                                         np.linspace(0, len(lam) - 1, MAX_LAMBDAS // 2).astype(int)]))
        self.lam, self.phi = lam[pick], phi[:, pick]
        self.root_key = float(vals.max())
        self.lam_all, self.phi_all = alloc._lambdas, alloc._phi
        self.lam_root, self.phi_root = self.lam, self.phi

    def _strongest(self, conds: list[Condition], s: int) -> dict[int, list[Condition]]:
        """Per dominant model (``-1``: none), the ``KEEP`` conditions with the largest score.

        The score of a condition is its least key over the supports of size ``s`` at their
        smallest counts (the dominant model, when there is one, at ``K // 3`` epochs).
        """
        out: dict[int, list[Condition]] = {}
        for d in sorted({c.dominant for c in conds}):
            group = [c for c in conds if c.dominant == d]
            if len(group) <= KEEP:
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
                        worst = min(worst, float(self._support(c, lo, room, list(U)).max()))
                score.append(worst)
            keep = [group[i] for i in np.argsort(score, kind="stable")[::-1][:KEEP]]
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
            i = int(np.argmax(np.asarray(n, dtype=float) @ self.phi_all - self.lam_all * self.limit))
            last = len(self.lam_all) - 1
            idx = np.unique(np.rint(i + (last - i) * np.linspace(0.0, 1.0, MAX_LAMBDAS) ** 2).astype(int))
            self.lam, self.phi = self.lam_all[idx], self.phi_all[:, idx]
        else:
            self.lam, self.phi = self.lam_root, self.phi_root
        return float(self._keys(n).max())

    def _keys(self, n: tuple[int, ...]) -> np.ndarray:
        """The bound for each multiplier of ``self.lam``: the least over the supports."""
        M = self.M
        j = max((i for i in range(M) if n[i] > 0), default=-1)
        forced = tuple(i for i in range(M) if n[i] > 0)
        optional = tuple(range(j + 1, M))
        best = np.full(len(self.lam), math.inf)
        for r in range(len(optional) + 1):
            for extra in itertools.combinations(optional, r):
                U = forced + extra
                if not U or sum(1 << m for m in U) not in self.walkable:
                    continue  # no sequence uses exactly these models
                lo = np.array([n[m] if n[m] > 0 else (1 if m in extra else 0) for m in range(M)])
                room = self.K - int(lo.sum())
                if room < 0:
                    continue
                free = [m for m in U if m >= max(j, 0)]
                conds = self.conds[len(U)]
                lead = max(U, key=lambda m: (lo[m] * self.weight[m], -m))  # the dominant model
                use = conds.get(-1, []) + conds.get(lead, [])
                vals = np.max([self._support(c, lo, room, free) for c in use], axis=0)
                best = np.minimum(best, vals)
        finite = np.isfinite(best)  # conservative against round-off, as LB(n)
        return np.where(finite, best - 1e-9 * np.abs(np.where(finite, best, 0.0)) - 1e-9, best)

    def admits(self, n: tuple[int, ...]) -> bool:
        """False when the count vector ``n`` itself fails a condition of its support (Lemma 8)."""
        U = [m for m in range(self.M) if n[m] > 0]
        if not U:
            return True
        lo = np.asarray(n)
        conds = self.conds[len(U)]
        lead = max(U, key=lambda m: (lo[m] * self.weight[m], -m))
        return self.meets(n, conds.get(-1, []) + conds.get(lead, []))

    def meets(self, n: tuple[int, ...], conds: list[Condition]) -> bool:
        """``n`` meets every condition of ``conds``, its models placed as Lemma 8 allows, and some
        sequence uses exactly its models (a walk of allowed switches)."""
        lo = np.asarray(n)
        if sum(1 << m for m in range(self.M) if n[m] > 0) not in self.walkable:
            return False
        return all(self._rows(c, lo, 0, [])[0] >= c.need_for(lo > 0) for c in conds)

    def _rows(self, c: Condition, lo: np.ndarray, room: int, free: list[int]) -> tuple[float, list[np.ndarray]]:
        """``sum_m h'_m(lo_m)`` and the increments of ``h'_m`` beyond ``lo_m`` for the free models.

        ``h'`` is ``h`` with each model's linear part shifted by the epochs ``P_m`` that the models
        ranked before it surely run (docs/exact.md, Lemma 8); offset 0 without a common shape.
        """
        M = self.M
        if c.beta is None:
            return (float(sum(c.h[m, lo[m]] for m in range(M))),
                    [c.inc[m, lo[m]: lo[m] + room] for m in free])
        a, cum = self.a, self.cum
        off = np.zeros(M, dtype=int)
        run = 0
        for m in c.rank:
            if lo[m] > 0:
                off[m] = run
                run += int(lo[m])
        total = float(sum(c.beta[m] * (cum[m, off[m] + lo[m]] - cum[m, off[m]]) + c.sep[m, lo[m]]
                          for m in range(M) if lo[m] > 0))
        incs = [c.beta[m] * a[m, off[m] + lo[m]: off[m] + lo[m] + room] + c.sep_inc[m, lo[m]: lo[m] + room]
                for m in free]
        return total, incs

    def _support(self, c: Condition, lo: np.ndarray, room: int, free: list[int]) -> np.ndarray:
        """min of the Lagrangian cost over ``n' >= lo`` (``free`` coordinates grow) meeting ``c``."""
        out = lo.astype(float) @ self.phi - self.lam * self.limit
        total, incs = self._rows(c, lo, room, free)
        rest = c.need_for(lo > 0) - total
        if rest <= 0:
            return out
        if room == 0 or not free:
            return np.full(len(self.lam), math.inf)
        d = np.concatenate(incs)  # (E,)
        if d.sum() < rest - self.tol:
            return np.full(len(self.lam), math.inf)  # no n' of this support meets the condition
        if len(free) == 1:  # one model: its increments are already in greedy order
            cd = np.cumsum(d)
            last = min(int(np.searchsorted(cd, rest)), len(d) - 1)
            prev = cd[last - 1] if last else 0.0
            frac = min(max((rest - prev) / d[last], 0.0), 1.0) if d[last] > 0 else 1.0
            return out + self.phi[free[0]] * (last + frac) * (1 - 1e-9) - 1e-9
        who = np.concatenate([np.full(len(x), m) for x, m in zip(incs, free, strict=True)])
        unit = self.phi[who]  # (E, L): cost of one more epoch of that model
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(unit > 0, d[:, None] / unit, np.where(d[:, None] > 0, np.inf, 0.0))
        order = np.argsort(-ratio, axis=0, kind="stable")
        ds = d[order]  # (E, L)
        us = np.take_along_axis(unit, order, axis=0)
        cd = np.cumsum(ds, axis=0)
        cu = np.cumsum(us, axis=0)
        hit = cd >= rest
        last = np.where(hit.any(axis=0), np.argmax(hit, axis=0), len(d) - 1)  # first that reaches R
        cols = np.arange(len(self.lam))
        prev_d = np.where(last > 0, cd[np.maximum(last - 1, 0), cols], 0.0)
        prev_u = np.where(last > 0, cu[np.maximum(last - 1, 0), cols], 0.0)
        dl = ds[last, cols]
        frac = np.where(dl > 0, np.clip((rest - prev_d) / np.where(dl > 0, dl, 1.0), 0.0, 1.0), 1.0)
        extra = prev_u + frac * us[last, cols]
        return out + extra * (1 - 1e-9) - 1e-9  # a conservative margin against round-off, as for LB(n)
