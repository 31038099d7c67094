"""Products in a fixed summation order: the same bits on every CPU.

``a @ b`` and ``np.dot`` call OpenBLAS, which picks its kernels at run time from the CPU
(``DYNAMIC_ARCH``), and the kernels sum in different orders. The last bits of a product then
depend on the machine, and a decision taken on them (a bound that just meets a key, a bracket
that just straddles the target) can go the other way: with BLAS products, ``exact`` proves
``random-per_run-m5-c4-l10-d3-e45-p0.5-s17`` with 379,243 work units under OpenBLAS's Haswell
kernels and 359,072 under its SkylakeX kernels (same optimum; with these helpers 378,157 under
both: docs/library.md, "Work and the CPU"). The evaluator, ``exact`` and the allocation bounds use these helpers
instead: elementwise products and numpy's own reductions, whose order is fixed by the code.

May import: numpy only. Imported by: the evaluator, ``formulations`` (allocation, ``exact``, SAA).
"""

from __future__ import annotations

import numpy as np

try:  # numpy >= 2: the transforms its fft functions call, without their argument handling (~2 us)
    from numpy.fft import _pocketfft_umath as _pfu
except ImportError:  # pragma: no cover - numpy 1.x: the public functions
    _pfu = None

#: numba options of the suite's compiled loops (DepL's kernels, ``exact``'s knapsack, the evaluator's
#: term lattices): cached on disk, no bounds checks, numpy's division semantics (``x / 0 = inf``, no
#: exception), no fastmath unless a loop asks for it, so a loop adds in the order it is written
JIT = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}

#: longest factor worth :func:`convolve` (one vector operation per entry); callers use FFT beyond
SHORT = 8


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` of two vectors, summed by numpy's pairwise reduction (no BLAS)."""
    return float(np.add.reduce(np.multiply(a, b, dtype=float)))


def thin_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` for a small inner dimension, as a loop of broadcasts (no BLAS).

    The terms are added in the order of the inner index. Besides fixing the bits, the loop is
    faster than OpenBLAS on a loaded machine: its threads spin (a ``(N, 3) @ (3, B)`` product
    measured 7x slower than this loop on the shared 2-core benchmark host).
    """
    out = np.zeros((a.shape[0], b.shape[0]))
    for m in range(a.shape[1]):
        out += a[:, m, None] * b[None, :, m]
    return out


def matvec(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``a @ x`` by :func:`thin_matmul` (no BLAS), for ``a`` of shape ``(M,)`` or ``(N, M)`` and
    ``x`` of shape ``(M,)`` or ``(M, L)``; the result has numpy's shape."""
    a, x = np.asarray(a, dtype=float), np.asarray(x, dtype=float)
    out = thin_matmul(np.atleast_2d(a), x[None, :] if x.ndim == 1 else x.T)
    if x.ndim == 1:
        out = out[:, 0]
    return out[0] if a.ndim == 1 else out


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full discrete convolution of two vectors (``np.convolve``'s), in a fixed order.

    ``np.convolve`` sums each output with the dtype's ``dot``, which is OpenBLAS's ``ddot``. Here
    the shorter factor is applied as shifted multiples of the longer one, added in the order of
    its index: one vector operation per entry of the shorter factor, so it is meant for factors of
    at most :data:`SHORT` entries (the evaluator convolves longer pairs by FFT).
    """
    long, short = (a, b) if len(a) >= len(b) else (b, a)
    long, short = np.asarray(long, dtype=float), np.asarray(short, dtype=float)
    k, n = len(short), len(long)
    out = np.zeros(n + k - 1)
    for j in range(k):
        out[j: j + n] += short[j] * long
    return out


def rfft(a: np.ndarray, N: int) -> np.ndarray:
    """``numpy.fft.rfft(a, N, axis=-1)``: numpy's own transform called directly, so the same bits.

    ``a`` is real, of length at most ``N`` along its last axis (zero-padded to ``N``), as in
    numpy's ``_raw_fft`` (norm ``backward``: factor 1).
    """
    if _pfu is None:  # pragma: no cover - numpy 1.x
        return np.fft.rfft(a, N, axis=-1)
    transform = _pfu.rfft_n_even if N % 2 == 0 else _pfu.rfft_n_odd
    return transform(a, 1, out=np.empty(a.shape[:-1] + (N // 2 + 1,), dtype=complex))


def irfft(F: np.ndarray, N: int) -> np.ndarray:
    """``numpy.fft.irfft(F, N, axis=-1)``, called as :func:`rfft` (norm ``backward``: factor ``1 / N``)."""
    if _pfu is None:  # pragma: no cover - numpy 1.x
        return np.fft.irfft(F, N, axis=-1)
    return _pfu.irfft(F, np.reciprocal(N, dtype=float), out=np.empty(F.shape[:-1] + (N,)))
