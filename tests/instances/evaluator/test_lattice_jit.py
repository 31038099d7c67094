"""Compiled loops of the lattice bracket against the numpy code they replaced, bit for bit.

Each reference is the code of ``f473b0c`` (before the loops were compiled), kept as the statement of
what the loop must give: the clip and trim of a convolution and the histogram bracket's crossing
(moved from tests/formulations/test_exact_kernels.py; numpy's transforms are tests/src/deplbench/test_numeric.py).
"""

from __future__ import annotations

import importlib

import numpy as np

from deplbench.instances.evaluator import lattice, smooth
from deplbench.instances.evaluator.lattice_batch import JIT_MODULE

# ---- the clip and trim of a convolution, and the crossing -------------------------------------

def test_clip_lump_trim_is_maximum_then_lump_trim():
    """Round-off below 0, tails that are lumped, dropped, longer than the 256-entry prefix, tiny vectors."""
    jit = importlib.import_module(JIT_MODULE)
    rng = np.random.default_rng(4)
    backs = 0
    for t in range(600):
        n = int(rng.choice([1, 2, 5, 40, 300, 2000]))
        x = rng.random(n) * 10.0 ** rng.integers(-20, -1, n)
        if t % 4 == 0:
            x[rng.integers(0, n, max(1, n // 10))] *= -1e-3  # an FFT's negative round-off
        if t % 7 == 0 and n > 300:
            x[:280] = 1e-15  # a lower tail past the prefix
            backs += 1
        ref = x.copy()
        np.maximum(ref, 0.0, out=ref)
        want = lattice.lump_trim(3, ref)
        got = jit.clip_lump_trim(3, x.copy())
        assert got[0] == want[0] and got[2] == want[2] and got[3] == want[3]
        assert np.array_equal(got[1], want[1])
    assert backs


def test_crossing_is_the_numpy_crossing():
    """The histogram bracket's crossing: the same (J, t) or None, levels at and between the sums,
    crossings in the first rows (J below the pmf) and past the total mass."""
    jit = importlib.import_module(JIT_MODULE)
    rng = np.random.default_rng(6)
    seen = {"hit": 0, "none": 0, "edge": 0}
    for _ in range(1500):
        k = int(rng.integers(1, 6))
        K = smooth.irwin_hall(k)
        n = int(rng.integers(1, 40))
        pmf = rng.random(n) * (10.0 ** rng.integers(-6, 0, n))
        pmf /= pmf.sum() * rng.choice([1.0, 1.0 + 1e-9, 1.5])
        cdf = np.cumsum(pmf)
        level = float(rng.choice([rng.uniform(0, 1.01), cdf[int(rng.integers(n))], cdf[0] * 0.5]))
        want = smooth._crossing(cdf, pmf, K, level)
        assert jit.crossing(cdf, pmf, K, level) == want
        seen["none" if want is None else "hit"] += 1
        seen["edge"] += want is not None and want[0] < 0
    assert min(seen.values()) > 0, seen
