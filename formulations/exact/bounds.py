"""Valid quantile lower bounds for the ``exact`` search (proofs in ``docs/exact-proofs.md``).

The loss of a plan is ``l0 - g sum_k a_{m_k}(k) X_k + sum_switches P`` (MODEL.md section 4).
When every noise law is non-negative (every family but ``normal``), a *relaxed* loss that
is pointwise no larger under a coupling gives a lower bound on the omega-quantile:

* a model's remaining epochs, wherever they are placed after position ``k``, sit at
  positions ``>= k + 1, k + 2, ...`` (after the remaining epochs of the switch components every
  completion passes before its own, :mod:`.walks`); the progress ``a_m`` is non-increasing, so
  giving them exactly those earliest positions can only raise the coefficient of a non-negative factor;
* penalties of switches not yet made are replaced by their lowest value ``min(0, low)``
  (0 on every shipped family), once per remaining epoch.

:class:`Bounder` builds these relaxed losses (for a count vector, or a prefix of a
sequence) and refutes them cheaply: Cantelli's inequality first, then a coarse certified
bracket (``lo > target`` proves every completion infeasible).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.exact.knobs import COARSE_RTOL, ENTRY_COLUMNS, MARGIN_RTOL
from deplbench.formulations.exact.labels import LabelStore
from deplbench.formulations.exact.laws import min_law
from deplbench.formulations.exact.placed import PlacedSums
from deplbench.formulations.exact.prefix import Prefix
from deplbench.formulations.exact.product import ProductBounds
from deplbench.formulations.exact.walks import Blocks
from deplbench.instances.evaluator.evaluate import cantelli_lower
from deplbench.instances.evaluator.loss import LossTerms
from deplbench.instances.evaluator.quantile import quantile_bracket
from deplbench.instances.laws.distributions import Dist, penalty_dist
from deplbench.instances.laws.noise import model_noise

__all__ = ["Bounder"]


class Bounder:
    """Relaxed losses and their refutation for one instance (all dataset selections).

    The product bounds are a part of it, ``product`` (:class:`~.product.ProductBounds`), built
    with the instance data they need and asked by :meth:`refuted` and :meth:`prefix_refuted`.

    Parameters
    ----------
    instance : Instance
    stats : dict
        Counters updated in place (``brackets``, ``cantelli``, ``product``).
    positions : bool
        Allow the position-aware bounds (Lemmas 8 and 9) when the models share a progress shape.
    """

    def __init__(self, instance, stats: dict, positions: bool = True):
        self.inst = instance
        self.stats = stats
        ids = instance.model_ids
        K = instance.max_epochs
        self.M = len(ids)
        self.per_run = instance.noise_mode == "per_run"
        self.target = instance.loss.target
        self.omega = instance.loss.quantile
        self.l0 = instance.loss.initial
        self.margin = MARGIN_RTOL * self.l0
        self.cantelli = math.sqrt((1 - self.omega) / self.omega)
        self.upper = math.sqrt(self.omega / (1 - self.omega))
        # refuted per_run relaxations (coefficients, switch counts, offset): dominance store
        self.store = LabelStore(self.M, len(instance.switches) + 1 + ENTRY_COLUMNS) if self.per_run else None
        self._law_col: dict[int, int] = {}  # entry law (by id) -> its label-store column
        self._qcache: dict[tuple[int, float, bool], float] = {}  # quantile_at's memo
        self.covers: dict[tuple[int, ...], object] = {}  # support -> its exact_cover.SupportCovers (at g = 1)
        self.rounded: dict[int, object] = {}  # model -> its noise law's grid table (exact_lifted.Rounded)
        k = np.arange(1, K + 2, dtype=float)
        # a[m, j] = a_m(j + 1); cum[m, j] = sum of a_m(1..j) (cum[:, 0] = 0)
        self.a = np.array([m.progress.A / (k + m.progress.B) ** m.progress.p for m in instance.models])
        self.cum = np.concatenate([np.zeros((self.M, 1)), np.cumsum(self.a, axis=1)], axis=1)
        self._cum_rows = self.cum.tolist()  # the same values as plain floats: cheaper to index
        self.noise = [model_noise(m) for m in instance.models]
        # rows of the same numpy scalars (faster to index than the 2-d array, at every search node)
        self._arow, self._amin = [list(row) for row in self.a], float(np.abs(self.a).min()) if self.a.size else 0.0
        self._plain = not any(d.is_constant for d in self.noise) and self._amin > 0.0
        self.nmean = np.array([d.mean for d in self.noise])
        self.nvar = np.array([d.var for d in self.noise])
        self.pen = [penalty_dist(s.penalty) for s in instance.switches]
        self.pmean = np.array([d.mean for d in self.pen])
        self.pvar = np.array([d.var for d in self.pen])
        self.low = min([0.0] + [s.penalty.low for s in instance.switches])
        # stochastically smallest penalty (only used when every penalty is >= 0)
        self.pmin = min_law(self.pen) if self.pen and self.low == 0 else None
        # per target model: stochastically smallest penalty of a switch into it (Lemma 10)
        self._into: dict[tuple[int, int], Dist | None] = {}
        self._entry: dict[tuple, object] = {}  # remembered per-instance vectors and levels
        self.sw_index = {(ids.index(s.from_), ids.index(s.to)): i for i, s in enumerate(instance.switches)}
        self.walks = Blocks(self.M, set(self.sw_index))  # Lemma 8b: where a prefix's remaining epochs can go
        # the coupling argument needs X >= 0 almost surely (not the normal law)
        self.valid = all((d.value >= 0) if d.is_constant else d.lower >= 0 for d in self.noise)
        # common progress shape a_m = A_m h (same B, p): A_m, else None (Lemma 8 needs it)
        pr = [m.progress for m in instance.models]
        same = all(q.B == pr[0].B and q.p == pr[0].p and q.A >= 0 for q in pr)
        self.shape = np.array([q.A for q in pr], dtype=float) if same and self.valid and positions else None
        self._placed_sum = PlacedSums(self.shape, self.cum, self.walks) if self.shape is not None else None
        self.product = ProductBounds(noise=self.noise, omega=self.omega, target=self.target, margin=self.margin,
                                     l0=self.l0, low=self.low, valid=self.valid, per_run=self.per_run,
                                     shape=self.shape, placed_sum=self._placed_sum, penalty_laws=self._penalty_laws,
                                     quantile_at=self.quantile_at, stats=stats)

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

    # ---- relaxed losses ----------------------------------------------------------------------
    def root(self, counts) -> Prefix:
        """The empty prefix of the sequences with epoch counts ``counts``."""
        return Prefix(0, -1, tuple(int(c) for c in counts), (0.0,) * self.M, (), ())

    def counts_terms(self, g: float, counts) -> LossTerms:
        """Relaxed loss of every sequence with epoch counts ``counts`` (positions from 1)."""
        return self.prefix_terms(g, self.root(counts))

    def prefix_terms(self, g: float, p: Prefix) -> LossTerms:
        """Relaxed loss of every completion of the prefix ``p`` (exact when ``r`` is all zero)."""
        offset = self.l0 + self.low * sum(p.r)  # future switches: at most one per remaining epoch
        if self.per_run:
            dists, coefs = [], []
            for m, k in enumerate(self._starts(p)):
                c = p.s[m] + self.cum[m, k + p.r[m]] - self.cum[m, k]
                if c > 0:
                    dists.append(self.noise[m])
                    coefs.append(-g * c)
        else:
            dists, coefs = self._epoch_lists(g, p)
        tail = [self.pen[i] for i in p.switches] + self.mandatory_laws(p)
        if not self.per_run and self._plain and abs(g) * self._amin > 1e-300:
            return self._kept(offset, tail, [1.0] * len(tail), dists, coefs)  # no epoch term to fold or drop
        return self._kept(offset, dists + tail, coefs + [1.0] * len(tail), [], [])

    def _epoch_lists(self, g: float, p: Prefix) -> tuple[list, list]:
        """The ``per_epoch`` noise terms of ``p``'s completions: its epochs', then the remaining ones."""
        noise, arow, ng = self.noise, self._arow, -g
        dists = [noise[m] for m in p.epoch_models]
        coefs = [ng * arow[m][j] for j, m in enumerate(p.epoch_models)]
        for m, k in enumerate(self._starts(p)):
            if p.r[m]:
                dists += [noise[m]] * p.r[m]
                coefs += [ng * x for x in arow[m][k: k + p.r[m]]]
        return dists, coefs

    def _starts(self, p: Prefix) -> list[int]:
        """Per model, the position after which its remaining epochs come: ``k`` plus the remaining
        epochs of the switch components every completion passes before its own (Lemma 8b; not for
        the empty prefix, whose count-level screens need bounds monotone in every count)."""
        off = self.walks.offsets(p.r) if p.last >= 0 else None
        return [p.k] * self.M if off is None else [p.k + o for o in off]

    @staticmethod
    def _kept(offset: float, dists: list, coefs: list, keep_d: list, keep_c: list) -> LossTerms:
        """Append ``dists``/``coefs`` to ``keep_*``: constants folded into ``offset`` in order, zeros dropped."""
        for d, c in zip(dists, coefs, strict=True):
            if d.value is not None:  # a constant law
                offset += c * d.value
            elif c != 0.0:
                keep_d.append(d)
                keep_c.append(c)
        return LossTerms(offset, tuple(keep_d), tuple(keep_c))

    def mandatory(self, p: Prefix) -> int:
        """Switches every completion still makes: one into each remaining model but the last."""
        if self.pmin is None:
            return 0
        return sum(1 for m in range(self.M) if p.r[m] > 0 and m != p.last) - (p.last < 0 and any(p.r))

    def mandatory_laws(self, p: Prefix) -> list[Dist]:
        """Laws below the mandatory switches: ``P_min`` each for the empty prefix (the first model
        is unknown), else, for each remaining model ``m`` but the last, the least law of a switch
        into ``m`` from a model the completion can use (the remaining ones and the last)."""
        if self.pmin is None:
            return []
        if p.last < 0:
            return [self.pmin] * self.mandatory(p)
        mask = (1 << p.last) | self.walks.mask(p.r)
        key = ("mandatory", p.last, mask)
        if key not in self._entry:  # a list the callers only read or copy
            self._entry[key] = [self.entry_law(m, mask) for m in range(self.M) if mask >> m & 1 and m != p.last]
        return self._entry[key]

    def entry_law(self, m: int, within: int) -> Dist:
        """The least law (CDF ``max F``) of the switches into ``m`` from the models of ``within``
        (a bitmask); ``P_min`` when there is none (the walk rule then prunes anyway)."""
        key = (m, within)
        law = self._into.get(key, False)
        if law is False:
            laws = [self.pen[i] for (a, b), i in self.sw_index.items() if b == m and a != m and within >> a & 1]
            law = self._into[key] = min_law(laws) if laws else self.pmin
        return law

    def entry_levels(self, within: int, level: float) -> np.ndarray:
        """``y_m`` with ``P(entry into m >= y_m) >= level`` for the models of ``within`` (0 elsewhere)."""
        key = ("level", within, level)
        out = self._entry.get(key)
        if out is None:
            out = self._entry[key] = np.array([self.quantile_at(self.entry_law(m, within), level, False)
                                               if within >> m & 1 else 0.0 for m in range(self.M)])
        return out

    def entry_moments(self, within: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower bounds on the means and upper bounds on the variances of the entry laws."""
        key = ("moments", within)
        out = self._entry.get(key)
        if out is None:
            laws = [self.entry_law(m, within) if within >> m & 1 else None for m in range(self.M)]
            out = self._entry[key] = (np.array([d.mean if d else 0.0 for d in laws]),
                                      np.array([d.var if d else 0.0 for d in laws]))
        return out

    # ---- refutation --------------------------------------------------------------------------
    def prefix_refuted(self, g: float, p: Prefix, bracket: bool = True) -> bool:
        """Refute every completion of ``p``: dominance by a stored refutation (per_run), the placed
        bounds (:meth:`placed_refuted`), else the relaxation's tests (:meth:`refuted`), and for the
        empty prefix (a count vector) the placed product bound (:meth:`.ProductBounds.refutes`)."""
        if self.store is None or self.low < 0:
            # per_epoch (no label store): the placed Cantelli bound first (Lemma 11), which places the
            # remaining epochs by Lemma 8, where the relaxation gives each model the earliest positions
            if self.store is None and self.low >= 0 and self.placed_refuted(g, p):
                return True
            return self.refuted(self.prefix_terms(g, p), bracket)
        rows = self._cum_rows
        c = np.array([g * (p.s[m] + rows[m][k + p.r[m]] - rows[m][k]) for m, k in enumerate(self._starts(p))])
        cnt = np.bincount(np.asarray(p.switches, dtype=np.intp), minlength=self.store.P)  # switches made, per switch
        # then one column for P_min (empty prefix), one per distinct entry law (first come)
        nsw = len(self.inst.switches)
        storable = True
        if self.pmin is not None:
            if p.last < 0:
                cnt[nsw] = self.mandatory(p)
            else:
                for law in self.mandatory_laws(p):
                    col = self._law_col.setdefault(id(law), len(self._law_col))
                    if col >= ENTRY_COLUMNS:
                        storable = False  # out of columns: this label is neither checked nor stored
                        break
                    cnt[nsw + 1 + col] += 1
        if storable and self.store.dominated(c, cnt):
            self.stats["pruned_dominance"] += 1
            return True
        if self.placed_refuted(g, p):
            return True  # not stored: the store's dominance holds for the relaxation only
        if self.refuted(self.prefix_terms(g, p), bracket):
            if storable:
                self.store.add(c, cnt)
            return True
        if p.last < 0:
            return self.product.refutes(g, p)
        return self.product.refutes_below_root(g, p)

    def placed_refuted(self, g: float, p: Prefix) -> bool:
        """The placed cover and Cantelli bounds (docs/exact-proofs.md, Lemmas 11 and 12) prove every
        completion infeasible."""
        if self.shape is None or not any(p.r):
            return False
        if self.per_run and self._placed_cover(g, p):
            self.stats["cover_prefixes"] = self.stats.get("cover_prefixes", 0) + 1
            return True
        if self._placed_cantelli(g, p) > self.target + self.margin:
            self.stats["cantelli"] += 1
            return True
        return False

    def _placed_cover(self, g: float, p: Prefix) -> bool:
        """Some cover condition ``w . C >= R / g`` of the completions' support (Lemma 12) fails for
        every completion: ``w . C`` is at most its value with the remaining epochs placed by Lemma 8."""
        made = self.covers.get(tuple(m for m in range(self.M) if p.s[m] > 0 or p.r[m] > 0))
        if made is None:
            return False
        placed = self._placed_sum
        for key, w, need in made.keyed_needs(g):
            if placed(p, w, True, key) * (1 + 1e-12) < need:
                return True
        return False

    def _penalty_laws(self, p: Prefix) -> list[Dist]:
        """The laws of the switches ``p`` made and of the entries every completion makes."""
        return [self.pen[i] for i in p.switches] + self.mandatory_laws(p)

    def _placed_cantelli(self, g: float, p: Prefix) -> float:
        """Cantelli's ``E l - kappa sd(l)`` with the remaining epochs placed by Lemma 8 (Lemma 11)."""
        pens = self._penalty_laws(p)
        kappa = self.cantelli * (1 + 1e-6)
        pvar = sum(d.var for d in pens) * (1 + 1e-6)
        mean = self.l0 + self.low * sum(p.r) + sum(d.mean for d in pens)
        if self.per_run:  # sd(l) <= g sum_m sd_m C_m + sd(penalties)
            beta = self._entry.get(("beta",))
            if beta is None:  # the noise's sd per model, built once
                sd = np.sqrt(np.maximum(self.nvar, 0.0)) * (1 + 1e-6)
                beta = self._entry[("beta",)] = self.nmean * (1 + 1e-12) + kappa * sd
            return mean - g * self._placed_sum(p, beta) - kappa * math.sqrt(pvar)
        # per_epoch: the placed terms exactly, the remaining ones at their earliest positions
        var = sum(self.nvar[m] * self.a[m, j] ** 2 for j, m in enumerate(p.epoch_models))
        var += sum(self.nvar[m] * float(np.sum(self.a[m, k: k + p.r[m]] ** 2)) for m, k in enumerate(self._starts(p)))
        placed = sum(self.nmean[m] * self.a[m, j] for j, m in enumerate(p.epoch_models))
        rest = self._placed_sum(p, self.nmean * (1 + 1e-12), with_prefix=False)
        return mean - g * (placed * (1 + 1e-12) + rest) - kappa * math.sqrt(g * g * var * (1 + 1e-6) + pvar)

    def refuted(self, terms: LossTerms, bracket: bool = True) -> bool:
        """True when the omega-quantile of ``terms`` is proven above the target.

        Cantelli's inequality always; the coarse certified bracket only with ``bracket``.
        """
        mean, var = terms.mean, terms.var
        sd = math.sqrt(max(var, 0.0)) * (1 + 1e-6)
        self.stats["cantelli"] += 1
        if cantelli_lower(mean, var, self.omega, self.l0) > self.target:
            return True  # Cantelli: P(l <= mean - t) <= var / (var + t^2) < omega
        if not terms.dists:
            return terms.offset > self.target + self.margin
        if self.product.relaxation_bound(terms) > self.target + self.margin:
            self.stats["product"] += 1
            return True
        if not bracket or mean + sd * self.upper < self.target:
            return False  # Cantelli's upper bound: q <= mean + sd sqrt(omega / (1 - omega)) < target
        self.stats["brackets"] += 1
        return quantile_bracket(terms, self.omega, COARSE_RTOL * self.l0).lo > self.target + self.margin
