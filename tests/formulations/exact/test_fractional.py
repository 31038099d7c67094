"""The compiled fractional knapsack of the region keys against the numpy statement it replaced."""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.formulations.exact.fractional import fractional


def _numpy(d: np.ndarray, who: np.ndarray, phi: np.ndarray, rest: float) -> np.ndarray:
    """The numpy code of ``RegionBound._support`` before the compiled loop (772f762)."""
    unit = phi[who]
    if unit.min() > 0:
        ratio = d[:, None] / unit
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(unit > 0, d[:, None] / unit, np.where(d[:, None] > 0, np.inf, 0.0))
    order = np.argsort(-ratio, axis=0, kind="stable")
    cols = np.arange(phi.shape[1])
    ds, us = d[order], unit[order, cols]
    cd, cu = np.cumsum(ds, axis=0), np.cumsum(us, axis=0)
    hit = cd >= rest
    first = np.argmax(hit, axis=0)
    last = np.where(hit[first, cols], first, len(d) - 1)
    before, has = np.maximum(last - 1, 0), last > 0
    prev_d = np.where(has, cd[before, cols], 0.0)
    prev_u = np.where(has, cu[before, cols], 0.0)
    dl = ds[last, cols]
    frac = np.where(dl > 0, np.clip((rest - prev_d) / np.where(dl > 0, dl, 1.0), 0.0, 1.0), 1.0)
    return prev_u + frac * us[last, cols]


def _case(rng: np.random.Generator) -> tuple:
    M, L = int(rng.integers(2, 6)), int(rng.integers(1, 14))
    free = np.sort(rng.choice(M, size=int(rng.integers(2, M + 1)), replace=False))
    lens = rng.integers(1, 30, size=len(free))
    who = np.repeat(free, lens).astype(np.int64)
    d = rng.choice([0.0, 0.25, 0.5, 1.0], size=len(who)) if rng.random() < 0.3 else rng.exponential(1.0, len(who))
    phi = rng.choice([0.0, 1.0, 2.0, -1.0], size=(M, L)) if rng.random() < 0.3 else rng.uniform(0.1, 5.0, (M, L))
    rest = float(rng.uniform(0.0, 1.2) * max(d.sum(), 1e-3))
    if rng.random() < 0.3:  # exactly a partial sum: the increment that reaches it is taken whole
        rest = float(np.cumsum(d)[int(rng.integers(len(d)))]) or 1.0
    return d, who, np.ascontiguousarray(phi), rest


@pytest.mark.parametrize("seed", range(200))
def test_same_bits_as_numpy(seed):
    d, who, phi, rest = _case(np.random.default_rng(seed))
    want, got = _numpy(d, who, phi, rest), fractional(d, who, phi, rest)
    assert got.tobytes() == want.tobytes(), (got, want)


def test_ties_keep_the_first_increment():
    # equal ratios, unequal costs: the stable order takes model 0's increment first
    d = np.array([1.0, 2.0])
    who = np.array([0, 1], dtype=np.int64)
    phi = np.array([[1.0], [2.0]])
    assert fractional(d, who, phi, 0.5)[0] == 0.5  # half of model 0's increment, at cost 1
    assert fractional(d, who, phi, 2.0)[0] == 1.0 + 0.5 * 2.0  # all of it, then half of model 1's
