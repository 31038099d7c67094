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

May import: numpy, :mod:`.prefix`, :mod:`deplbench.instances`. Imported by: :mod:`.bounds` (a mixin of ``Bounder``).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.exact.prefix import Prefix
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.laws.distributions import Dist

SKEW = (0.5, 0.85)  # product-bound skews: the dominant factor at level p / rho (docs/exact-proofs.md)
# Lemma 9's placed product bound below the root of a sequence search: asked for the first
# PRODUCT_TRIAL prefixes, then only while it refutes at least one in PRODUCT_RATE of them
PRODUCT_TRIAL, PRODUCT_RATE = 1000, 100


class ProductBounds:
    """The product bounds of a :class:`~deplbench.formulations.exact.bounds.Bounder` (a mixin: it
    reads the bounder's instance data, ``_qcache``, ``_entry``, placed sums and the counts
    ``_product_asks`` and ``_product_hits``, which the bounder starts at 0)."""

    def _product_pays(self) -> bool:
        """Ask the placed product bound below the root while it pays: seed 6 of the m5e40 tier asked it
        59,000 times for 55 refutations (7 % of the search's time; docs/exact.md). Deterministic:
        it depends on the counts only."""
        return self._product_asks < PRODUCT_TRIAL or self._product_hits * PRODUCT_RATE >= self._product_asks

    def _deep_product(self, g: float, p: Prefix) -> bool:
        """:meth:`_placed_product` below the root, counted for :meth:`_product_pays`."""
        self._product_asks += 1
        hit = self._placed_product(g, p)
        self._product_hits += hit
        return hit

    def _placed_product(self, g: float, p: Prefix) -> bool:
        """Lemma 9's placed product bound (``per_run``) refutes every completion of ``p``."""
        if self.shape is None or not any(p.r) or not self.per_run:
            return False
        if self._placed_bound(g, p) > self.target + self.margin:
            self.stats["product"] += 1
            return True
        return False

    def quantile_at(self, d: Dist, level: float, upper: bool) -> float:
        """``q`` with ``P(X <= q) >= level`` (``upper``) or ``P(X >= q) >= level``, rounded outward."""
        if d.is_constant:
            return d.value
        key = (id(d), level, upper)
        q = self._qcache.get(key)
        if q is None:
            q = float(d.ppf(level)) * (1 + 1e-12) if upper else float(d.ppf(1.0 - level)) * (1 - 1e-12)
            self._qcache[key] = q
        return q

    def _placed_bound(self, g: float, p: Prefix) -> float:
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
        """The factors' levels ``x`` of :meth:`_placed_bound`, with the penalties' level, per dominant
        model and skew (remembered: they depend on the models used and the number of penalties)."""
        key = ("points", used, n_rand)
        out = self._entry.get(key)
        if out is None:
            out = self._entry[key] = []
            tail = (1 - self.omega) * (1 + 1e-9)
            for dom in used:
                others = len(used) - 1 + n_rand
                for rho in SKEW if others else (1.0,):
                    lead = tail / rho
                    if lead >= 1.0:
                        continue
                    lv = rho ** (1.0 / others) if others else 1.0
                    out.append((np.array([self.quantile_at(self.noise[m], lead if m == dom else lv, True)
                                          if m in used else 0.0 for m in range(self.M)]), lv))
        return out

    def _product_bound(self, terms: LossTerms) -> float:
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
            q = self._qcache.get(key)
            if q is None:
                q = self._qcache[key] = float(d.ppf(beta)) * (1 + 1e-12)
            out += c * q
        return out
