"""DepL stage 2's compiled loops against plain numpy statements of what they compute, entry by entry.

``tests/heuristics/models/test_graph_dense.py`` checks whole graphs against the textbook recurrence; these check
each kernel on random regions, with the cases graphs meet rarely: infinite entries, negative loss
deltas, columns that saturate at the top bucket, rows that no option reaches and boxes that
are empty.
"""

import numpy as np
import pytest

from deplbench.heuristics.models import kernels

INF = np.float32(np.inf)


def _region(rng, rows: int, cols: int, p_inf: float = 0.3) -> np.ndarray:
    P = rng.uniform(0, 100, (rows, cols)).astype(np.float32)
    P[rng.random((rows, cols)) < p_inf] = INF
    return P


def _ref_apply(P, dts, cs, used, last, span, rows):
    full = np.full((rows, P.shape[1]), INF, dtype=np.float32)
    for o in range(used):
        n = min(span, last - dts[o]) + 1
        off = dts[o] - dts[0]
        full[off:off + n] = np.minimum(full[off:off + n], P[:n] + cs[o])
    return full


def _ref_finish(full, top, n_eta):
    out = np.where(full > top[:, None], INF, full)
    rows = np.flatnonzero((out != INF).any(axis=1))
    colmin = out.min(axis=0)
    emin = out[:max(n_eta, 0)].min(axis=0, initial=INF)
    if not len(rows):
        return out, (-1, -1, -1, -1), colmin, emin
    cols = np.flatnonzero(colmin != INF)
    return out, (rows[0], rows[-1], cols[0], cols[-1]), colmin, emin


def _ref_shift(P, pi0, pj0, S, i0, j0, d, L):
    out = P.copy()
    for r in range(S.shape[0]):
        for c in range(S.shape[1]):
            j = j0 + c + d
            if j >= 0:
                row, col = i0 - pi0 + r, min(j, L) - pj0
                out[row, col] = min(out[row, col], S[r, c])
    return out


@pytest.mark.parametrize("seed", range(40))
def test_apply_options_is_the_least_shifted_sum(seed):
    rng = np.random.default_rng(seed)
    rows_p, cols = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    P = _region(rng, rows_p, cols)
    n_opt = int(rng.integers(1, 8))
    dts = np.sort(rng.choice(np.arange(1, 25), n_opt, replace=False)).astype(np.int64)
    cs = np.sort(rng.uniform(1, 50, n_opt)).astype(np.float32)[::-1].copy()
    last = int(rng.integers(dts[0], dts[0] + rows_p + 25))  # some options end rows early or start none
    used = int(np.searchsorted(dts, last, side="right"))
    span = rows_p - 1
    rows = min(span + dts[min(used, n_opt) - 1], last) - dts[0] + 1
    full = np.empty((rows, cols), dtype=np.float32)
    kernels.apply_options(P, dts, cs, used, last, span, full)
    assert np.array_equal(full, _ref_apply(P, dts, cs, used, last, span, rows))


@pytest.mark.parametrize("seed", range(40))
def test_finish_prunes_and_finds_the_box(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    full = _region(rng, rows, cols, p_inf=float(rng.choice([0.0, 0.5, 0.95, 1.0])))
    top = rng.uniform(20, 120, rows).astype(np.float32)
    top[: int(rng.integers(0, rows + 1))] = INF  # _top is inf up to its first finite entry
    n_eta = int(rng.integers(-2, rows + 3))
    want, box, colmin_ref, emin_ref = _ref_finish(full, top, n_eta)
    colmin, emin = np.empty(cols, dtype=np.float32), np.empty(cols, dtype=np.float32)
    got = kernels.finish(full, top, n_eta, colmin, emin)
    assert got == tuple(int(x) for x in box)
    assert np.array_equal(full, want)
    assert np.array_equal(colmin, colmin_ref)
    assert np.array_equal(emin, emin_ref)


@pytest.mark.parametrize("seed", range(60))
def test_shift_into_moves_and_saturates(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(3, 40))
    j0 = int(rng.integers(0, L + 1))
    j1 = int(rng.integers(j0, L + 1))
    d = int(rng.integers(-j1, L + 3))  # at least the last column stays at or above bucket 0
    rows = int(rng.integers(1, 12))
    S = _region(rng, rows, j1 - j0 + 1)
    lo, hi = max(min(j0 + d, L), 0), min(j1 + d, L)  # the moved box's columns
    pj0 = int(rng.integers(0, lo + 1))
    pi0 = int(rng.integers(0, 5))
    i0 = pi0 + int(rng.integers(0, 5))
    P = _region(rng, i0 - pi0 + rows + int(rng.integers(0, 4)), hi - pj0 + 1 + int(rng.integers(0, 4)))
    first = bool(rng.integers(0, 2))
    if first:
        P[:] = INF
    want = _ref_shift(P, pi0, pj0, S, i0, j0, d, L)
    kernels.shift_into(P, pi0, pj0, S, i0, j0, j1, d, L, first)
    assert np.array_equal(P, want)


def test_the_reference_sees_a_wrong_entry():
    """The comparison above can fail: one option's cost off by one ulp changes the region."""
    P = np.array([[1.0, INF], [2.0, 3.0]], dtype=np.float32)
    dts, cs = np.array([1, 2], dtype=np.int64), np.array([5.0, 1.0], dtype=np.float32)
    full = np.empty((3, 2), dtype=np.float32)
    kernels.apply_options(P, dts, cs, 2, 10, 1, full)
    assert np.array_equal(full, _ref_apply(P, dts, cs, 2, 10, 1, 3))
    assert not np.array_equal(full, _ref_apply(P, dts, np.nextafter(cs, INF), 2, 10, 1, 3))
