"""Stage 3's compiled knapsack row against the numpy table it replaced, on random items."""

import numpy as np
import pytest

from deplbench.heuristics.knapsack_rows import knapsack_row


def _ref_row(dp, cost, units, time, C):
    """The former numpy step: every (cost, option) candidate at once, the first least option."""
    usable = np.isfinite(cost) & (units <= C)
    idx = np.arange(C + 1)[:, None] - np.where(usable, units, 0)[None, :]
    blocked = (idx < 0) | ~usable[None, :]
    cand = dp[np.maximum(idx, 0)] + np.where(blocked, np.inf, np.broadcast_to(time, idx.shape))
    best = np.argmin(cand, axis=1)
    return cand[np.arange(C + 1), best], best


@pytest.mark.parametrize("seed", range(60))
def test_knapsack_row_is_the_numpy_step(seed):
    rng = np.random.default_rng(seed)
    C, n_opt = int(rng.integers(0, 80)), int(rng.integers(1, 9))
    dp = rng.uniform(0, 50, C + 1)
    dp[rng.random(C + 1) < 0.3] = np.inf
    cost = rng.uniform(0, 30, n_opt)
    cost[rng.random(n_opt) < 0.2] = np.inf
    units = np.floor(np.where(np.isfinite(cost), cost, 0.0)).astype(np.int64)
    time = np.round(rng.uniform(0, 5, n_opt), 1)  # rounded: ties between options occur
    out, arg = np.empty(C + 1), np.empty(C + 1, dtype=np.int16)
    knapsack_row(dp, cost, units, time, out, arg)
    want, want_arg = _ref_row(dp, cost, units, time, C)
    assert np.array_equal(out, want)
    assert np.array_equal(arg, want_arg)
