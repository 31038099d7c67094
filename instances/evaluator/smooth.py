"""Certified quantile bracket with histogram terms: the fast path for sums of many terms.

The lattice bracket of :mod:`deplbench.instances.evaluator.quantile` pays a slack of about ``h`` per term
(the rounding), so a bracket of width ``W`` over ``n`` terms needs ``h ~ W / (1.1 n)``. Here a term
``T = c Z`` with a bounded unimodal density may instead be replaced by its *histogram*
``A = L - V`` (``L`` the term's lattice variable of :func:`~deplbench.instances.evaluator.lattice.term_pmf`,
``V ~ U(0, h)`` independent): ``F_A`` is the linear interpolation of the lattice CDF, and

    P(T + R <= x) >= P(A + R <= x) - l M(R),
    P(T + R <= x) <= P(A + R <= x + rho) + b + u M(R)

for any independent ``R`` with density at most ``M(R)``, where ``l, u`` bound the L1 distances
of :func:`term_l1` (second order in ``h``: from the density's peak and its values at the mode's
cell), ``rho = |c| d`` is the table shift and ``b`` the tail budget. ``M(R)`` is bounded by
Rogozin's and Ball's inequalities from the terms' density caps (:func:`rest_density`). Terms
whose bound would cost more than the shift ``h`` (unbounded densities) keep the lattice form.
The sum of the ``k`` uniforms is ``h`` times an Irwin-Hall law, whose CDF at the fractions
``i + t / r`` is computed exactly in integers (:func:`irwin_hall`); the CDF of the sum near the
quantile is then a short dot product per point (:func:`crossing`). Proof: docs/evaluator.md.
"""

from __future__ import annotations

import math
import operator
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special
from scipy.fft import next_fast_len

from deplbench.instances.evaluator.lattice import lump_trim
from deplbench.instances.evaluator.lattice_batch import cached_pmf, cached_pmfs, compiled
from deplbench.numeric import irfft, rfft, thin_matmul

EPS = float(np.finfo(float).eps)
FRACTION = 1 / 64  # table step d <= FRACTION h / |c|: shift rho <= h / 64 per term
RES = 8  # the CDF of the sum is read at the fractions t / RES of the lattice step
PDF_REL = 1e-8  # relative error allowed to a computed density value (far above its float error)
MIN_TERMS = 8  # fewer terms: the lattice bracket (its slack is small anyway)
GAIN = 2.0  # the histogram bracket is tried when its step is at least this many times the lattice one
AIM = 0.9  # share of the requested width the step is chosen for (the rest: model error)
LIGHT = 4096  # sums shorter than this keep their tails (trimming them costs more than it saves)
MAX_HIST = 128  # histogram terms at most (the exact Irwin-Hall table costs ~k^3 bit operations)
BUCKET = 1.5  # convolutions batched into one FFT call have output lengths within this ratio


@lru_cache(maxsize=64)
def irwin_hall(k: int, r: int = RES) -> np.ndarray:
    """``K[m - 1, t] = P(S_k >= m - t / r)`` for ``m = 1..k``, ``t = 0..r-1``, ``S_k`` Irwin-Hall.

    ``P(S_k >= m - t/r) = P(S_k <= k - m + t/r)`` (symmetry) ``= N / (k! r^k)`` with the integer
    ``N = sum_{j <= i} (-1)^j C(k, j) (r (i - j) + t)^k``, ``i = k - m``: exact, then rounded once
    (Python's int division is correctly rounded). For each ``t``, ``N`` over ``i`` is a discrete
    convolution of the signed binomials with the powers ``(r m + t)^k``; its sums run through
    ``map`` (about 40 % of the cost of a generator with ``(-1)**j`` in it, the same integers).
    """
    pw = [v ** k for v in range(r * k + 1)]
    den = math.factorial(k) * r ** k
    signed = [math.comb(k, j) if j % 2 == 0 else -math.comb(k, j) for j in range(k + 1)]
    out = np.empty((k, r))
    for t in range(r):
        col = pw[t::r]  # (r m + t)^k for m = 0..k
        for i in range(k):
            out[k - 1 - i, t] = sum(map(operator.mul, signed[:i + 1], col[i::-1])) / den
    out.setflags(write=False)
    return out


def density_cap(dist, coef: float) -> float:
    """An upper bound on the density of ``coef * Z`` (``peak / |c|``, padded; inf if unknown)."""
    if dist.peak is None or dist.mode is None or not math.isfinite(dist.peak):
        return math.inf
    return dist.peak / abs(coef) * (1 + PDF_REL)


@lru_cache(maxsize=8192)
def term_l1(dist, coef: float, h: float, rho: float) -> tuple[float, float]:
    """Bounds on ``int (F_A - F)^+`` and ``int (F - F_A(. + rho) - b)^+`` for the histogram of ``coef * Z``.

    ``F`` is the CDF of ``T = coef Z`` with the unimodal density ``f`` (peak ``P``), ``F_A`` the
    linear interpolation of the term's lattice CDF. Per cell the first is at most the integral
    of ``(chord - F)^+``, which is 0 where ``f`` decreases, at most ``osc(f) h^2 / 8`` where it
    increases and ``osc(f) h^2 / 6`` on the cell holding the mode: summed, with ``[a, b]`` the
    mode's cell, ``f(a) h^2 / 8 + (P - min(f(a), f(b))) h^2 / 6``. The second is the same on the
    cells shifted by ``-rho``, ``f`` decreasing instead (docs/evaluator.md). Near a jump of the
    density (an end of the support) both are bounded by ``7/24 P h^2`` (each sum at most ``P``).
    """
    c = abs(coef)
    m = coef * dist.mode  # the mode of T
    peak = dist.peak / c * (1 + PDF_REL)
    ja, jb = math.floor(m / h), math.floor((m + rho) / h)
    x = np.array([ja * h, (ja + 1) * h, jb * h - rho, (jb + 1) * h - rho])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f = np.asarray(dist.pdf(x / coef), dtype=float) / c
    fa, fb, sa, sb = (float(v) for v in f)
    lo = fa * (1 + PDF_REL) * h * h / 8 + (peak - min(fa, fb) * (1 - PDF_REL)) * h * h / 6
    up = sb * (1 + PDF_REL) * h * h / 8 + (peak - min(sa, sb) * (1 - PDF_REL)) * h * h / 6
    # the density may jump only at the support's ends: near one, the values read at the mode's
    # cell may be the wrong one-sided limits; then both sums are at most the peak
    edges = [coef * e for e in (dist.lower, dist.upper) if math.isfinite(e)]
    if any(x.min() - h <= e <= x.max() + h for e in edges) or not (math.isfinite(lo) and math.isfinite(up)):
        lo = up = peak * h * h * 7 / 24
    return lo * (1 + 1e-9), up * (1 + 1e-9)


def rest_density(caps: list[float]) -> list[float]:
    """For each i, a bound on the density of the sum of the terms ``j != i`` with density caps ``caps``.

    Rogozin: the sum's maximal density is at most that of a sum of uniforms of densities
    ``caps``; Ball's cube slicing: that is at most ``sqrt(2) / sqrt(sum caps^-2)``. A sum is
    also no denser than any one of its terms.
    """
    inv = [1 / (m * m) if math.isfinite(m) else 0.0 for m in caps]
    q = sum(inv)
    order = sorted(range(len(caps)), key=lambda j: caps[j])
    out = []
    for i in range(len(caps)):
        rest = q - inv[i]
        ball = math.sqrt(2 / rest) * (1 + 1e-12) if rest > q * 1e-12 else math.inf
        one = caps[order[0]] if order[0] != i else (caps[order[1]] if len(order) > 1 else math.inf)
        out.append(min(ball, one))
    return out


def density_at_quantile(terms, omega: float) -> float:
    """A rough (normal) guess of the loss density at its omega-quantile: only steers the step."""
    sd = math.sqrt(terms.var)
    z = special.ndtri(omega)
    return math.exp(-0.5 * z * z) / (sd * math.sqrt(2 * math.pi))


def plan_step(terms, omega: float, width: float) -> tuple[float, list[bool]]:
    """The step ``h`` and the terms kept as histograms, chosen for a bracket of about ``width``.

    Width model: ``2 E / f + h (2 / RES + n FRACTION + n_shift)`` with ``E = sum_i g_i h^2``,
    ``g_i = M_i M_{-i} / 8`` (a smooth law's :func:`term_l1`) over the histogram terms (:func:`term_parts`) and ``f`` the normal
    guess of the density. A term is a histogram when its ``2 g_i h^2 / f`` is below the shift
    ``h`` it would pay otherwise.
    """
    f = density_at_quantile(terms, omega)
    caps = [density_cap(d, c) for d, c in zip(terms.dists, terms.coefs, strict=True)]
    g = [m * r / 8 for m, r in zip(caps, rest_density(caps), strict=True)]
    n = len(g)
    h = width / (n + 1)
    for _ in range(4):
        hist = _choose(g, h, f)
        A = 2 * sum(gi for gi, s in zip(g, hist, strict=True) if s) / f
        B = 2 / RES + n * FRACTION + sum(not s for s in hist)
        target = AIM * width
        h = target / B if A == 0 else (-B + math.sqrt(B * B + 4 * A * target)) / (2 * A)
    h = quantised(h)
    return h, _choose(g, h, f)


def _choose(g: list[float], h: float, f: float) -> list[bool]:
    """The histogram terms: ``2 g_i h^2 / f < h``, at most ``MAX_HIST`` of them (the smallest ``g_i``)."""
    hist = [2 * gi * h * h / f < h for gi in g]
    if sum(hist) > MAX_HIST:
        keep = set(sorted((i for i, s in enumerate(hist) if s), key=lambda i: g[i])[:MAX_HIST])
        hist = [i in keep for i in range(len(g))]
    return hist


def quantised(h: float) -> float:
    """``h`` rounded down to a power of ``2^(1/4)``: plans of similar spread share their term lattices."""
    return 2.0 ** (math.floor(4 * math.log2(h)) / 4)


def sum_cdf(cdf: np.ndarray, pmf: np.ndarray, K: np.ndarray, J: np.ndarray) -> np.ndarray:
    """``H[J, t] = P(L - h S_k <= x_J + t h / r)`` for lattice indices ``J`` (relative to the pmf).

    ``= C_J + sum_{m=1..k} p_{J+m} P(S_k >= m - t / r)``, ``C`` the lattice CDF (0 before, its
    total after the pmf).
    """
    k = K.shape[0]
    n = len(pmf)
    pad = np.concatenate((np.zeros(k + 1), pmf, np.zeros(k + 1)))
    C = np.concatenate(([0.0], cdf, [cdf[-1]]))
    Jc = np.clip(J, -1, n)
    base = C[Jc + 1]
    win = sliding_window_view(pad, k)[J + k + 2]  # p_{J+1} .. p_{J+k}
    return base[:, None] + thin_matmul(win, K.T)


def crossing(cdf, pmf, K, level: float) -> tuple[int, int] | None:
    """The first (J, t) in increasing order of ``x_J + t h / r`` with ``H >= level`` (None: never).

    One compiled loop once :mod:`.lattice_jit` is imported (the same sums, so the same answer)."""
    jit = compiled()
    if jit is not None:
        return jit.crossing(cdf, pmf, K, float(level))
    return _crossing(cdf, pmf, K, level)


def _crossing(cdf, pmf, K, level: float) -> tuple[int, int] | None:
    """:func:`crossing` with numpy."""
    k = K.shape[0]
    n = len(pmf)
    J1 = int(np.searchsorted(cdf, level, side="left"))  # H(x_J1) >= cdf[J1] >= level
    if J1 >= n:  # the total mass stays below the level
        return None
    J = np.arange(J1 - k - 1, J1 + 1)
    H = sum_cdf(cdf, pmf, K, J)
    hit = np.flatnonzero((H >= level).ravel())
    if len(hit) == 0:
        return None
    i = int(hit[0])
    return int(J[i // K.shape[1]]), i % K.shape[1]


def term_shift(dist, coef: float, h: float) -> float:
    """The shift ``rho`` of a histogram term: its lattice slack minus ``h`` (``|c| d`` with its safety factor).

    ``P(T <= x_j - rho) <= G(x_j) + b`` at every lattice point (:func:`~.lattice.term_pmf`; a term narrower
    than a step has its own, larger ``rho``).
    """
    return cached_pmf(dist, coef, h, FRACTION)[4] - h


def term_parts(terms, h: float, hist: list[bool]):
    """Per-term lattice pmfs and the budgets: (pmfs, beta, err, shift S, E_lo, E_up, k histogram terms).

    ``E_lo = sum_i l_i M_{-i}`` and ``E_up = sum_i u_i M_{-i}`` over the histogram terms, with
    ``(l_i, u_i)`` the L1 bounds of :func:`term_l1` and ``M_{-i}`` a bound on the density of the
    other terms (:func:`rest_density`; a histogram term counts with the larger of its two caps,
    its histogram's being its largest cell mass over h).
    """
    pmfs, beta, err, shift = [], 0.0, 0.0, 0.0
    l1, both = [], []
    parts = cached_pmfs(list(zip(terms.dists, terms.coefs, strict=True)), h, FRACTION)
    for d, c, s, (j0, pmf, b, e, sl) in zip(terms.dists, terms.coefs, hist, parts, strict=True):
        m = density_cap(d, c)
        s = s and math.isfinite(m)
        beta += b
        err += e
        if s:
            rho = sl - h  # >= |c| d (1 + INDEX_SLACK), or the narrow term's rho
            shift += rho
            l1.append(term_l1(d, c, h, rho))
            both.append(max(m, (float(pmf.max()) + e) / h))
        else:
            shift += sl
            l1.append(None)
            both.append(m)
        pmfs.append((j0, pmf))
    rest = rest_density(both)
    E_lo = sum(v[0] * r for v, r in zip(l1, rest, strict=True) if v is not None) * (1 + 1e-9)
    E_up = sum(v[1] * r for v, r in zip(l1, rest, strict=True) if v is not None) * (1 + 1e-9)
    return pmfs, beta, err, shift, E_lo, E_up, sum(v is not None for v in l1)


def fft_error(N: int) -> float:
    """L1 round-off bound of one FFT convolution of length ``N`` of two vectors of mass <= 1.

    Higham's 2-norm bound with a safety factor 5, then Cauchy-Schwarz to L1 (the lattice
    bracket's :func:`deplbench.instances.evaluator.quantile._convolve` uses it too).
    """
    gamma = 5 * math.ceil(math.log2(max(N, 2))) * EPS
    return math.sqrt(N) * (3 * gamma + EPS) + N * EPS


def _batch(pairs: list[tuple[int, np.ndarray, int, np.ndarray]]) -> list[tuple[int, np.ndarray, float]]:
    """The convolutions of ``pairs`` ``(sa, a, sb, b)`` in one batched real FFT: (start, masses, round-off)."""
    n = max(len(a) + len(b) - 1 for _, a, _, b in pairs)
    N = next_fast_len(n, real=True)
    m = len(pairs)
    AB = np.zeros((2 * m, N))  # both factors of every pair: one forward transform
    for i, (_, a, _, b) in enumerate(pairs):
        AB[i, :len(a)] = a
        AB[m + i, :len(b)] = b
    F = rfft(AB, N)
    C = irfft(F[:m] * F[m:], N)
    np.maximum(C, 0.0, out=C)  # towards the exact (non-negative) values
    e = fft_error(N)
    return [(sa + sb, C[i, :len(a) + len(b) - 1], e) for i, (sa, a, sb, b) in enumerate(pairs)]


def merge_levels(pmfs: list[tuple[int, np.ndarray]], beta: float, err: float) -> tuple[int, np.ndarray, float, float]:
    """Convolve lattice pmfs ``(start, masses)`` level by level: the shortest two together, then the
    next two, ...; the convolutions of a level with similar lengths share one batched FFT call.

    Long results (over ``LIGHT``) are lumped and trimmed (:func:`lump_trim`), their moved mass
    added to ``beta``; every round-off bound is added to ``err``. Returns (start, pmf, beta, err).
    """
    jit = compiled()  # the trim compiled, once imported (lattice_batch)
    trim = lump_trim if jit is None else jit.clip_lump_trim  # (the masses are clipped already)
    items = sorted(pmfs, key=lambda p: len(p[1]))
    while len(items) > 1:
        pairs = [(*items[i], *items[i + 1]) for i in range(0, len(items) - 1, 2)]
        nxt = [items[-1]] if len(items) % 2 else []
        group: list = []
        for p in pairs + [None]:
            if p is not None and (not group or len(p[1]) + len(p[3]) <= BUCKET * (len(group[0][1]) + len(group[0][3]))):
                group.append(p)
                continue
            for start, out, e in _batch(group):
                err += e
                if len(out) > LIGHT:
                    start, out, moved, e2 = trim(start, out)
                    beta += moved
                    err += e2
                nxt.append((start, out))
            group = [p] if p is not None else []
        items = sorted(nxt, key=lambda p: len(p[1]))
    start, pmf = items[0]
    return start, pmf, beta, err
