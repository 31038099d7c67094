"""The deterministic part of MODEL.md section 4: data effect, epoch time and cost, progress.

Every method computes time, cost and loss coefficients through these functions, so
that there is one definition of the formulas.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")

LEVEL_TOL = 1e-9
TIME_RTOL = 1e-9


@dataclass(frozen=True)
class DataEffect:
    Q: float  # total samples
    Q_eff: float  # quality-weighted samples
    g: float  # 1 + alpha ln(Q_eff / reference), NaN if no data


def data_effect(instance, datasets: Iterable[str]) -> DataEffect:
    """Q, Q_eff and g of a dataset selection (g is NaN for an empty selection)."""
    ds = [instance.dataset_by_id[d] for d in datasets]
    if not ds:
        return DataEffect(0.0, 0.0, math.nan)
    Q = float(sum(d.samples for d in ds))
    Qe = float(sum(d.quality * d.samples for d in ds))
    de = instance.data_effect
    return DataEffect(Q, Qe, 1.0 + de.alpha * math.log(Qe / de.reference_samples))


def match_level(cluster, level: float) -> float | None:
    """The instance's level equal to ``level`` within 1e-9, or None."""
    for lv in cluster.levels:
        if abs(lv - level) <= LEVEL_TOL:
            return lv
    return None


def epoch_time(instance, model: str, cluster: str, level: float, Q: float) -> float:
    """tau = work * Q / (nodes * x) + size / bandwidth, with x = level * capacity."""
    m = instance.model_by_id[model]
    c = instance.cluster_by_id[cluster]
    x = level * c.capacity
    return m.work * Q / (c.nodes * x) + m.size / c.bandwidth


def epoch_cost(instance, cluster: str, level: float) -> float:
    """c = unit_cost * x * nodes, with x = level * capacity."""
    c = instance.cluster_by_id[cluster]
    return c.unit_cost * level * c.capacity * c.nodes


def progress(model, k: int | np.ndarray):
    """a_m(k) = A / (k + B)^p for the global epoch index k (1-based)."""
    pr = model.progress
    return pr.A / np.power(np.asarray(k, dtype=float) + pr.B, pr.p) if isinstance(k, np.ndarray) \
        else pr.A / (k + pr.B) ** pr.p


def progress_matrix(instance, g: float, epochs: int | None = None) -> np.ndarray:
    """g a_m(k) for every model (rows, instance order) and epoch k = 1..epochs (columns; default max_epochs)."""
    k = np.arange(1, (epochs or instance.max_epochs) + 1, dtype=float)
    return np.array([g * progress(m, k) for m in instance.models])


def nonempty_subsets(items: Sequence[T]) -> Iterator[tuple[T, ...]]:
    """Every non-empty subset of ``items`` as a tuple in ``items`` order, smallest first."""
    return itertools.chain.from_iterable(itertools.combinations(items, r) for r in range(1, len(items) + 1))


def transfer_cost(instance, datasets: Iterable[str], clusters: Iterable[str]) -> float:
    """One-time cost of sending every selected dataset to every cluster that trains."""
    ds = list(datasets)
    return float(sum(instance.transfer_cost(d, n) for n in set(clusters) for d in ds))


@dataclass(frozen=True)
class Options:
    """Every (cluster, level) an epoch can run on, with its cost, and each model's time there.

    ``time[m, o]`` is the epoch time of model ``instance.models[m]`` on option ``o``;
    ``cost[o]`` its cost (independent of the model, MODEL.md section 7 item 8).
    """

    clusters: tuple[str, ...]
    levels: tuple[float, ...]
    cluster_index: np.ndarray
    cost: np.ndarray
    time: np.ndarray

    def __len__(self) -> int:
        return len(self.clusters)


def options(instance, datasets: Sequence[str]) -> Options:
    """The table of (cluster, level) options for a dataset selection."""
    Q = data_effect(instance, datasets).Q
    cl, lv, ci = [], [], []
    for j, c in enumerate(instance.clusters):
        for f in c.levels:
            cl.append(c.id)
            lv.append(f)
            ci.append(j)
    cost = np.array([epoch_cost(instance, c, f) for c, f in zip(cl, lv, strict=True)])
    time = np.array([[epoch_time(instance, m.id, c, f, Q) for c, f in zip(cl, lv, strict=True)]
                     for m in instance.models])
    return Options(tuple(cl), tuple(lv), np.array(ci), cost, time)


def within_budget(total_time: float, budget: float) -> bool:
    """The time test of MODEL.md section 4 (relative tolerance 1e-9)."""
    return total_time <= budget * (1 + TIME_RTOL)
