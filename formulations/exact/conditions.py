"""Necessary conditions on count vectors for the ``exact`` region keys (docs/exact-proofs.md).

Rule R (separable in the counts, Lemma 5), placed by Lemma 8 when the models share a progress
shape, with skewed and joint product thresholds, the entries of Lemma 10 and the joint Cantelli
condition of Lemma 11. :mod:`.region` turns them into keys on whole lattice subtrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from deplbench.formulations.exact.bounds import Bounder
from deplbench.formulations.exact.knobs import PRODUCT_SKEW
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.evaluator.quantile import quantile_bracket


@dataclass
class Condition:
    """``sum_{m in U} h[m, n'_m] >= need`` for every certified ``n'`` of support size ``s``.

    ``h = g beta_m cum_m(k) + sep[m, k]`` at position offset 0. With a common progress shape
    (``a_m = A_m h``: every model has the same ``B`` and ``p``) the linear part is
    position-aware (docs/exact-proofs.md, Lemma 8): a model ranked after others in ``rank`` (by
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
    _needs: dict = field(default_factory=dict, repr=False, compare=False)  # support (bytes) -> need

    def need_for(self, used: np.ndarray) -> float:
        """:meth:`need_on` of the support ``used`` (a boolean vector), remembered per support."""
        key = used.tobytes()
        out = self._needs.get(key)
        if out is None:
            out = self._needs[key] = self.need_on(used)
        return out

    def need_on(self, used: np.ndarray) -> float:
        """``need`` on a support: plus the entries into all its models but the first
        (``sum_U y - max_U y`` when the first model is unknown, Lemma 10; ``sum_U y - y_f`` when no
        switch of ``U`` enters ``f``, which must then come first), less, for the joint
        Cantelli condition, ``kappa sqrt(sum_U var)`` (Lemma 11)."""
        if self.entries is None or self.src is None:
            return self.need
        mask = int(sum(1 << int(m) for m in np.flatnonzero(used)))
        if mask & (mask - 1) == 0:
            return self.need  # one model: no entry
        first = self.src.walks.forced_first(mask)  # a model nothing enters comes first: its entry is not made
        if self.entries == "level":
            ys = self.src.entry_levels(mask, self.level)
            return self.need + float(ys[used].sum() - (ys[first] if first >= 0 else ys[used].max()))
        mean, var = self.src.entry_moments(mask)
        drop = mean[first] if first >= 0 else mean[used].max()
        return self.need + float(mean[used].sum() - drop) - self.src.cantelli * (1 + 1e-6) * math.sqrt(
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
    return np.array([b.quantile_at(d, min(float(lv), 1.0), True) for d, lv in zip(b.noise, levels, strict=True)])


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
        for rho in PRODUCT_SKEW:
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
    """Necessary conditions for support size ``s`` and data effect ``g`` (docs/exact-proofs.md, rule R).

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


def linear_condition(b: Bounder, K: int, w: np.ndarray, need: float) -> Condition:
    """The condition ``sum_m w_m C_m >= need`` (placed by Lemma 8 with a common shape): the cover
    conditions of Lemma 12 (their entries are inside ``need``)."""
    return _condition(b, 1.0, K, w, np.zeros((b.M, K + 1)), need, -1, 1.0, b.shape is not None)


def _joint(b: Bounder, s: int) -> list[tuple[int, np.ndarray, float]]:
    """Joint product-bound thresholds over the ``s`` factors and the ``s - 1`` entries (per_run).

    Dominant ``d`` at level ``(1 - omega) / rho``, the ``2 s - 2`` others at ``rho^(1/(2s-2))``:
    the product of the levels exceeds ``1 - omega`` on every support of size ``s`` (with ``d``:
    equal; without: ``rho^((2s-1)/(2s-2))``, checked). Returns ``(d, x, entry level)``.
    """
    tail = (1 - b.omega) * (1 + 1e-9)
    out = []
    for rho in PRODUCT_SKEW:
        lead = tail / rho
        level = rho ** (1.0 / (2 * s - 2))
        if lead >= 1.0 or level >= 1.0 or level ** (2 * s - 1) <= tail:
            continue
        for d in range(b.M):
            lv = np.full(b.M, level)
            lv[d] = lead
            out.append((d, _quantiles(b, lv), level))
    return out
