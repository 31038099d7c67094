"""The product bounds of ``exact`` and when they are asked (proofs in ``docs/exact-proofs.md``).

Independence alone bounds a quantile from below: on the event that every noise factor stays below
a threshold and every penalty above one (probability the product of their levels, above
``1 - omega``), the loss is at least a known value. :class:`ProductBounds` holds the two forms
:class:`~deplbench.formulations.exact.bounds.Bounder` uses: the relaxation's product bound (equal
levels over its terms) and the placed product bound of a sequence prefix (Lemma 9: a dominant
factor, skewed levels, the remaining epochs placed by rearrangement). The placed one is asked for
every count vector, and below the root of a sequence search only while it pays
(``PRODUCT_TRIAL``, ``PRODUCT_RATE``; ``docs/exact.md``, "The placed product bound only while it
pays").

May import: numpy, :mod:`.knobs`, :mod:`.prefix` (:mod:`.placed` for types), :mod:`deplbench.instances`.
Imported by: :mod:`.bounds` (a part of ``Bounder``, built with the instance data it needs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from deplbench.formulations.exact.knobs import PRODUCT_RATE, PRODUCT_SKEW, PRODUCT_TRIAL
from deplbench.formulations.exact.prefix import Prefix
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.laws.distributions import Dist

if TYPE_CHECKING:
    from deplbench.formulations.exact.placed import PlacedSums


class ProductBounds:
    """The product bounds of one :class:`~deplbench.formulations.exact.bounds.Bounder` (built and asked by it).

    Parameters
    ----------
    noise : list of Dist
        The models' noise laws.
    omega : float
        The quantile level (``loss.quantile``).
    target, margin : float
        A bound refutes when it exceeds ``target + margin`` (``margin``: the round-off margin).
    l0, low : float
        ``loss.initial`` and the least penalty ``min(0, low)`` (one per remaining epoch).
    valid : bool
        Every noise law is non-negative (the bounds need ``X >= 0``).
    per_run : bool
        The noise mode is ``per_run`` (the placed bound is for it only).
    shape : ndarray or None
        The common progress shape ``A_m`` (None: none, no placed bound).
    placed_sum : PlacedSums or None
        The placed sums of ``shape`` (:mod:`.placed`).
    penalty_laws : callable
        ``penalty_laws(p)``: the laws of the switches a prefix made and of the entries every
        completion makes.
    quantile_at : callable
        ``quantile_at(d, level, upper)``: a law's quantile rounded outward.
    stats : dict
        Counters updated in place (``product``).
    """

    def __init__(self, *, noise: list[Dist], omega: float, target: float, margin: float, l0: float, low: float,
                 valid: bool, per_run: bool, shape: np.ndarray | None, placed_sum: PlacedSums | None,
                 penalty_laws: Callable[[Prefix], list[Dist]], quantile_at: Callable[[Dist, float, bool], float],
                 stats: dict):
        self.noise, self.M, self.omega = noise, len(noise), omega
        self.target, self.margin, self.l0, self.low = target, margin, l0, low
        self.valid, self.per_run, self.shape = valid, per_run, shape
        self._placed_sum, self._penalty_laws, self.quantile_at = placed_sum, penalty_laws, quantile_at
        self.stats = stats
        self.asks = self.hits = 0  # the placed product bound below the root (:meth:`refutes_below_root`)
        self._points: dict[tuple[tuple[int, ...], int], list[tuple[np.ndarray, float]]] = {}
        self._beta_q: dict[tuple[int, int], float] = {}  # (law id, terms) -> its quantile at beta

    def pays(self) -> bool:
        """Ask the placed product bound below the root while it pays: seed 6 of the m5e40 tier asked it
        59,000 times for 55 refutations (7 % of the search's time; docs/exact.md). Deterministic:
        it depends on the counts only."""
        return self.asks < PRODUCT_TRIAL or self.hits * PRODUCT_RATE >= self.asks

    def refutes_below_root(self, g: float, p: Prefix) -> bool:
        """:meth:`refutes` for a non-empty prefix, asked only while it :meth:`pays` (and counted)."""
        if not self.pays():
            return False
        self.asks += 1
        hit = self.refutes(g, p)
        self.hits += hit
        return hit

    def refutes(self, g: float, p: Prefix) -> bool:
        """Lemma 9's placed product bound (``per_run``) refutes every completion of ``p``."""
        if self.shape is None or not any(p.r) or not self.per_run:
            return False
        if self.placed_bound(g, p) > self.target + self.margin:
            self.stats["product"] += 1
            return True
        return False

    def placed_bound(self, g: float, p: Prefix) -> float:
        """max over dominant models and skews of ``l0 - g sum_m x_m C_m^max + sum_i y_i``.

        Joint product bound over the models' factors and the penalties (made and mandatory):
        ``P(X_m <= x_m for all m, P_i >= y_i for all i) = prod of the levels > 1 - omega``, and
        ``sum_m x_m C_m`` is at most its value with the remaining epochs in the positions
        ``k+1, ...`` sorted by ``x_m A_m`` (rearrangement, a common shape ``a_m = A_m h``).
        """
        pens = self._penalty_laws(p)
        used = tuple(m for m in range(self.M) if p.s[m] > 0 or p.r[m] > 0)
        fixed = self.l0 + self.low * sum(p.r) + sum(d.value for d in pens if d.is_constant)
        rand = [d for d in pens if not d.is_constant]
        best, ys = -math.inf, {}
        for x, lv in self._product_points(used, len(rand)):
            y = ys.get(lv)
            if y is None:  # the same for every dominant model
                y = ys[lv] = sum(self.quantile_at(d, lv, False) for d in rand)
            best = max(best, fixed + y - g * self._placed_sum(p, x))
        return best

    def _product_points(self, used: tuple[int, ...], n_rand: int) -> list[tuple[np.ndarray, float]]:
        """The factors' levels ``x`` of :meth:`placed_bound`, with the penalties' level, per dominant
        model and skew (remembered: they depend on the models used and the number of penalties)."""
        key = (used, n_rand)
        out = self._points.get(key)
        if out is None:
            out = self._points[key] = []
            tail = (1 - self.omega) * (1 + 1e-9)
            for dom in used:
                others = len(used) - 1 + n_rand
                for rho in PRODUCT_SKEW if others else (1.0,):
                    lead = tail / rho
                    if lead >= 1.0:
                        continue
                    lv = rho ** (1.0 / others) if others else 1.0
                    out.append((np.array([self.quantile_at(self.noise[m], lead if m == dom else lv, True)
                                          if m in used else 0.0 for m in range(self.M)]), lv))
        return out

    def relaxation_bound(self, terms: LossTerms) -> float:
        """A lower bound on the omega-quantile from independence alone (needs X >= 0).

        With W = sum |c_i| X_i over the n negative terms and beta^n > 1 - omega,
        P(W <= sum |c_i| q_beta(X_i)) >= prod P(X_i <= q_beta(X_i)) = beta^n > 1 - omega, so
        q_omega(l) >= offset + sum_{c_i > 0} c_i low_i - sum |c_i| q_beta(X_i).
        """
        if not self.valid:
            return -math.inf
        neg = [(d, c) for d, c in zip(terms.dists, terms.coefs, strict=True) if c < 0]
        n = len(neg)
        if n == 0:
            return -math.inf
        beta = min((1 - self.omega) ** (1.0 / n) * (1 + 1e-9), 1.0)
        if beta >= 1.0:
            return -math.inf
        out = terms.offset + sum(c * d.lower for d, c in zip(terms.dists, terms.coefs, strict=True) if c > 0)
        for d, c in neg:
            key = (id(d), n)
            q = self._beta_q.get(key)
            if q is None:
                q = self._beta_q[key] = float(d.ppf(beta)) * (1 + 1e-12)
            out += c * q
        return out
