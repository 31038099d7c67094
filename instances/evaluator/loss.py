"""The random loss of a plan as a sum of independent terms (MODEL.md section 4).

    l(K) = offset + sum_i coef_i * Z_i

with Z_i independent: in ``per_epoch`` mode one improvement factor per epoch
(coef = -g a_m(k)); in ``per_run`` mode one per model used (coef = -g sum_k a_m(k)
over its epochs); plus one truncated penalty per switch occurrence (coef = +1).
Constant laws are folded into ``offset``. The certified quantile, the Monte-Carlo
estimate and the expected loss all start from this one decomposition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, mul

import numpy as np

from deplbench.instances.laws.distributions import Dist, penalty_dist
from deplbench.instances.laws.noise import model_noise
from deplbench.instances.semantics import progress
from deplbench.numeric import matvec

_MEAN, _VAR = attrgetter("mean"), attrgetter("var")


@dataclass(frozen=True)
class LossTerms:
    offset: float
    dists: tuple[Dist, ...]
    coefs: tuple[float, ...]
    forbidden_switches: tuple[int, ...] = ()  # epochs (1-based) whose switch is not listed

    def __post_init__(self):
        # ``mean`` and ``var`` zip the two in C, which would silently drop the longer one's tail
        if len(self.dists) != len(self.coefs):
            raise ValueError(f"LossTerms: {len(self.dists)} laws but {len(self.coefs)} coefficients")

    # the same products added in the same order as ``sum(c * d.mean for ...)``, iterated in C
    # (``exact`` asks for them at every search node)
    @property
    def mean(self) -> float:
        return self.offset + sum(map(mul, self.coefs, map(_MEAN, self.dists)))

    @property
    def var(self) -> float:
        return sum(map(mul, map(mul, self.coefs, self.coefs), map(_VAR, self.dists)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` independent draws of the loss."""
        out = np.full(n, self.offset)
        # group identical laws so that each is sampled in one vectorised call
        groups: dict[int, tuple[Dist, list[float]]] = {}
        for d, c in zip(self.dists, self.coefs, strict=True):
            groups.setdefault(id(d), (d, []))[1].append(c)
        for d, cs in groups.values():
            draws = d.sample(rng, (n, len(cs)))
            out += matvec(draws, np.asarray(cs))
        return out


def loss_terms(instance, models: Sequence[str], g: float) -> LossTerms:
    """Decompose the loss after the epoch sequence ``models`` with data effect ``g``."""
    offset = instance.loss.initial
    dists: list[Dist] = []
    coefs: list[float] = []
    per_run: dict[str, float] = {}
    for k, m in enumerate(models, start=1):
        c = g * progress(instance.model_by_id[m], k)
        if instance.noise_mode == "per_run":
            per_run[m] = per_run.get(m, 0.0) + c
        else:
            dists.append(model_noise(instance.model_by_id[m]))
            coefs.append(-c)
    for m, c in per_run.items():
        dists.append(model_noise(instance.model_by_id[m]))
        coefs.append(-c)
    forbidden = []
    for k in range(2, len(models) + 1):
        a, b = models[k - 2], models[k - 1]
        if a == b:
            continue
        sw = instance.switch_by_pair.get((a, b))
        if sw is None:
            forbidden.append(k)
            continue
        dists.append(penalty_dist(sw.penalty))
        coefs.append(1.0)
    keep_d, keep_c = [], []
    for d, c in zip(dists, coefs, strict=True):
        if d.is_constant or c == 0.0:
            offset += c * (d.value if d.is_constant else 0.0)
        else:
            keep_d.append(d)
            keep_c.append(c)
    return LossTerms(offset, tuple(keep_d), tuple(keep_c), tuple(forbidden))
