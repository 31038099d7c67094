"""DepL stage 2: model selection as a cheapest path on the expanded graph.

Vertices are (model, epoch k, time bucket i of T_max/eta, loss bucket j of R/eta);
an edge from epoch k-1 to k stays on the model or takes an allowed switch, and runs
the epoch on one (cluster, level) option (its cost and time; Pareto options only).
The graph is layered by epoch, so the cheapest paths are one vectorised dynamic
program over numpy arrays ``S_k[m, i, j]`` (least cost), O(|M|^2 K eta^2) in all
(MODEL.md section 7 item 3).

The loss resource must be additive along a path. A :class:`Surrogate` gives, for
each (model, epoch), a *gain* (loss decrease) and, for each switch, a *penalty*,
plus a *requirement*: a path whose gains minus penalties reach it meets the
surrogate target. Surrogates:

* :func:`cgf_surrogate` - the log-Laplace transform (CGF) at a fixed argument t:
  gain = -(1/t) log E exp(-t g a X), penalty = (1/t) log E exp(t P), requirement
  l0 - target + ln(1/(1 - omega))/t. This is the Chernoff bound on the quantile;
  additive, and valid when the epochs' factors are independent (``per_epoch``).
* :func:`quantile_surrogate` - ``per_run`` mode: gain = g a x_m(delta) with the
  delta = (1 - omega)/|M| quantile of each model's factor and the penalty's upper
  bound ``high`` (valid by a union bound over the models).
* :func:`mean_surrogate` - the expected loss (exactly additive; the ``best-exp`` baseline).

Resources are rounded conservatively: times up, gains down, penalties up. One DP
serves every requirement up to ``cap * R`` (bucket j keeps the least cost of paths
whose rounded gain reaches j), which the orchestrator bisects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deplbench.instances.distributions import model_noise, penalty_dist
from deplbench.instances.noise_laws import law, legendre_nodes
from deplbench.instances.semantics import Options, options, progress_matrix

_GL_X, _GL_W = legendre_nodes()


@dataclass(frozen=True)
class Surrogate:
    """An additive loss resource: path gains minus penalties must reach ``requirement``."""

    name: str
    gain: np.ndarray  # (M, max_epochs): loss decrease of model m at epoch k (column k-1)
    penalty: np.ndarray  # (M, M): loss increase of switch a -> b (0 on the diagonal, inf if forbidden)
    requirement: float
    valid: bool  # whether meeting the requirement proves the quantile constraint
    switch_gain: np.ndarray | None = None  # (M, M, max_epochs): extra gain of switch a -> b into epoch k


def noise_log_laplace(noise, s: np.ndarray) -> np.ndarray:
    """log E exp(-s X) for s >= 0, X the improvement factor of a model's ``noise`` (instances.noise_laws)."""
    s = np.asarray(s, dtype=float)
    return law(noise.family, noise.var).log_laplace(s, noise.mean, noise.var or 0.0)


def penalty_log_mgf(penalty, t: float) -> float:
    """log E exp(t P) of a truncated penalty (bounded support, so it exists for every t)."""
    d = penalty_dist(penalty)
    if d.is_constant:
        return t * d.value
    lo, hi = d.lower, d.upper
    x = lo + (hi - lo) * (_GL_X + 1) / 2
    # E e^{t(P - hi)} = e^{-t(hi - lo)} + int_lo^hi t e^{t(x - hi)} P(P > x) dx
    integral = float(np.sum(_GL_W * t * np.exp(t * (x - hi)) * d.sf(x))) * (hi - lo) / 2
    return t * hi + math.log(math.exp(-t * (hi - lo)) + integral)


def _coefficients(instance, g: float) -> np.ndarray:
    """g a_m(k) for every model (rows) and epoch k = 1..max_epochs (columns)."""
    return progress_matrix(instance, g)


def _penalties(instance, value) -> np.ndarray:
    ids = instance.model_ids
    out = np.full((len(ids), len(ids)), np.inf)
    np.fill_diagonal(out, 0.0)
    for sw in instance.switches:
        out[ids.index(sw.from_), ids.index(sw.to)] = value(sw.penalty)
    return out


def cgf_surrogate(instance, g: float, t: float) -> Surrogate:
    """Chernoff surrogate at argument ``t`` (valid in ``per_epoch`` mode)."""
    coef = _coefficients(instance, g)
    gain = np.array([-noise_log_laplace(m.noise, t * c) / t for m, c in zip(instance.models, coef, strict=True)])
    pen = _penalties(instance, lambda p: penalty_log_mgf(p, t) / t)
    req = instance.loss.initial - instance.loss.target + math.log(1 / (1 - instance.loss.quantile)) / t
    return Surrogate(f"cgf(t={t:.3g})", gain, pen, req, instance.noise_mode == "per_epoch")


def mean_surrogate(instance, g: float) -> Surrogate:
    """Expected loss: gain g a E[X], penalty E[P], requirement l0 - target."""
    coef = _coefficients(instance, g)
    gain = np.array([c * m.noise.mean for m, c in zip(instance.models, coef, strict=True)])
    pen = _penalties(instance, lambda p: penalty_dist(p).mean)
    return Surrogate("mean", gain, pen, instance.loss.initial - instance.loss.target, False)


def quantile_surrogate(instance, g: float, delta: float | None = None, penalty: str = "high") -> Surrogate:
    """Per-model quantiles: gain g a x_m(delta), penalty ``high`` (or the mean).

    The default ``delta = (1 - omega)/|M|`` with ``high`` is valid in both modes (a
    union bound over the models; penalties are bounded). ``delta = 1 - omega`` is
    exact for a ``per_run`` plan with one model, and a heuristic for mixtures.
    """
    coef = _coefficients(instance, g)
    valid = delta is None and penalty == "high"
    delta = (1 - instance.loss.quantile) / len(instance.models) if delta is None else delta
    xq = [max(float(model_noise(m).ppf(np.array(delta))), 0.0) for m in instance.models]
    gain = coef * np.array(xq)[:, None]
    pen = _penalties(instance, lambda p: penalty_dist(p).upper if penalty == "high" else penalty_dist(p).mean)
    return Surrogate(f"quantile(delta={delta:.3g},{penalty})", gain, pen,
                     instance.loss.initial - instance.loss.target, valid)


def chernoff_arguments(instance, g: float, factors: Sequence[float] = (0.5, 1.0, 2.0)) -> list[float]:
    """Arguments t around the one minimising the Chernoff bound of a reference plan.

    The reference is the model with the largest expected gain alone, for the epochs
    its expected loss needs to reach the target (at most ``max_epochs``).
    """
    coef = _coefficients(instance, g)
    means = np.array([m.noise.mean for m in instance.models])
    r = int(np.argmax(coef[:, 0] * means))
    need = instance.loss.initial - instance.loss.target
    K = min(int(np.searchsorted(np.cumsum(coef[r] * means[r]), need)) + 1, instance.max_epochs)
    sd = math.sqrt(max(float(np.sum(coef[r, :K] ** 2)) * (instance.models[r].noise.var or 0.0), 1e-12))
    log_w = math.log(1 / (1 - instance.loss.quantile))
    ts = np.geomspace(0.02, 50.0, 81) * math.sqrt(2 * log_w) / sd
    noise = instance.models[r].noise
    bounds = [-noise_log_laplace(noise, t * coef[r, :K]).sum() / t - log_w / t for t in ts]
    t_star = float(ts[int(np.argmax(bounds))])  # largest guaranteed gain minus slack
    return [t_star * f for f in factors]


class ExpandedGraph:
    """The layered DP of stage 2 for one dataset choice and one surrogate.

    Parameters
    ----------
    instance : Instance
    datasets : sequence of str
    surrogate : Surrogate
    eta : int
        Buckets per resource: time step ``time_budget / eta``, loss step ``requirement / eta``.
    cap : float
        The largest requirement served, as a multiple of ``surrogate.requirement``.
    """

    def __init__(self, instance, datasets: Sequence[str], surrogate: Surrogate, eta: int, cap: float = 1.0,
                 opts: Options | None = None, time_rounding: str = "up"):
        self.instance, self.sur, self.eta = instance, surrogate, int(eta)
        self.opts = opts if opts is not None else options(instance, datasets)
        M = len(instance.models)
        self.step = surrogate.requirement / self.eta
        self.L = int(math.ceil(cap * self.eta))
        # the time axis goes past the budget by the largest rounding excess of a path
        # (< 1 bucket per epoch): bucket <= eta is a conservative (certain) fit, the
        # rest are relaxed candidates whose true time stage 3 decides
        self.Tb = self.eta + min(instance.max_epochs, self.eta)
        dt_unit = instance.time_budget / self.eta
        with np.errstate(divide="ignore", invalid="ignore"):
            # cumulative rounding: a run of model m over epochs a..b gains
            # floor(G_m(b)) - floor(G_m(a-1)) buckets (telescoping), which is exact from
            # epoch 1 and over-states a later run by < 1 bucket: one bucket is added to
            # every switch, so the rounding stays conservative and loses < 1 bucket per run
            F = np.floor(np.cumsum(surrogate.gain, axis=1) / self.step)
            self.gb = np.diff(F, axis=1, prepend=0.0).astype(np.int64)
            pb = np.ceil(surrogate.penalty / self.step) + (1 - np.eye(M))
        self.pb = np.where(np.isfinite(pb), pb, -1).astype(np.int64)
        sg = surrogate.switch_gain
        self.sb = None if sg is None else np.floor(sg / self.step).astype(np.int64)
        self.preds = [[a for a in range(M) if np.isfinite(surrogate.penalty[a, b])] for b in range(M)]
        self.edges = []  # per model: (dt, cost, option index), Pareto in (rounded time, cost)
        for m in range(M):
            rnd = np.ceil(self.opts.time[m] / dt_unit - 1e-12) if time_rounding == "up" \
                else np.rint(self.opts.time[m] / dt_unit)
            dts = rnd.astype(np.int64)
            best: dict[int, tuple[float, int]] = {}
            for o, (dt, c) in enumerate(zip(dts, self.opts.cost, strict=True)):
                if 1 <= dt <= self.Tb and (dt not in best or c < best[dt][0]):
                    best[int(dt)] = (float(c), o)
                elif dt < 1 and self.Tb >= 1 and (1 not in best or c < best[1][0]):
                    best[1] = (float(c), o)
            kept, low = [], np.inf
            for dt in sorted(best):
                c, o = best[dt]
                if c < low:
                    kept.append((dt, np.float32(c), o))
                    low = c
            self.edges.append(kept)
        self.layers: list[np.ndarray] = []
        self._build()

    def _delta(self, a: int, m: int, col: int) -> int:
        """Loss buckets gained by the edge from model ``a`` to epoch ``col + 1`` on model ``m``."""
        if a == m:
            return int(self.gb[m, col])
        extra = 0 if self.sb is None else int(self.sb[a, m, col])
        return int(self.gb[m, col] - self.pb[a, m] + extra)

    def _shift(self, P: np.ndarray, S: np.ndarray, d: int) -> None:
        """P = min(P, S moved up by d loss buckets), saturating at L, dropping below 0."""
        L = self.L
        if d >= 0:
            if d < L:
                np.minimum(P[:, d:L], S[:, : L - d], out=P[:, d:L])
            np.minimum(P[:, L], S[:, max(L - d, 0):].min(axis=1), out=P[:, L])
        elif -d <= L:
            e = -d
            np.minimum(P[:, : L + 1 - e], S[:, e:], out=P[:, : L + 1 - e])

    def _build(self) -> None:
        inst, M, L, Tb = self.instance, len(self.instance.models), self.L, self.Tb
        cmin = min((c for ed in self.edges for _, c, _ in ed), default=np.float32(np.inf))
        best_top = np.inf
        prev = None
        for k in range(1, inst.max_epochs + 1):
            cur = np.full((M, Tb + 1, L + 1), np.inf, dtype=np.float32)
            for m in range(M):
                P = np.full((Tb + 1, L + 1), np.inf, dtype=np.float32)
                if k == 1:
                    d = int(self.gb[m, 0])
                    if d >= 0:
                        P[0, min(d, L)] = 0.0
                else:
                    for a in self.preds[m]:
                        self._shift(P, prev[a], self._delta(a, m, k - 1))
                for dt, c, _ in self.edges[m]:
                    np.minimum(cur[m, dt:], P[: Tb + 1 - dt] + c, out=cur[m, dt:])
            self.layers.append(cur)
            prev = cur
            best_top = min(best_top, float(cur[:, :, L].min()))  # includes relaxed paths: a safe stop
            low = float(cur.min())
            if not np.isfinite(low) or low + cmin >= best_top:
                break  # no continuation can be cheaper for any requirement up to the cap
        self.within(self.eta)

    def within(self, i_max: int) -> None:
        """Serve paths of rounded time <= ``i_max`` (``eta``: conservative; more: relaxed, for stage 3 to re-time).

        Sets ``best[j]``, the least cost of such a path reaching loss bucket >= j.
        """
        self.i_max = min(int(i_max), self.Tb)
        col = np.array([lay[:, : self.i_max + 1].min(axis=(0, 1)) for lay in self.layers])  # (layers, L+1)
        sfx = np.minimum.accumulate(col[:, ::-1], axis=1)[:, ::-1]
        self.best = sfx.min(axis=0)

    def bucket(self, scale: float) -> int:
        """Loss bucket of the requirement ``scale * surrogate.requirement``."""
        return min(max(int(math.ceil(scale * self.eta - 1e-9)), 0), self.L)

    def candidates(self, j_lo: int = 0) -> list[int]:
        """One requirement bucket >= j_lo per distinct cheapest cost (cost increasing): the *highest*
        bucket of each cost plateau.

        ``best`` is non-decreasing in j and can stay flat over many buckets (integer costs, e.g.
        the knapsack reduction). Every bucket of a plateau has the same least cost, but the
        path backtracked at its lowest bucket may reach only that bucket, while the one at its
        highest bucket reaches all of them at no extra cost: it is the candidate that is most
        likely to be certified. (Taking the lowest bucket made a 4-epoch plan that meets the
        requirement invisible behind a 4-epoch path that does not.)
        """
        out = []
        for j in range(j_lo, self.L + 1):
            v = float(self.best[j])
            if np.isfinite(v) and (j == self.L or float(self.best[j + 1]) != v):
                out.append(j)
        return out

    def cost(self, j: int) -> float:
        return float(self.best[j])

    def relaxed_costs(self, j: int) -> np.ndarray:
        """Least cost reaching bucket >= j with rounded time <= i, for every time bucket i."""
        per = np.array([lay[:, :, j:].min(axis=(0, 2)) for lay in self.layers])  # (layers, Tb+1)
        return np.minimum.accumulate(per.min(axis=0))

    def path(self, j: int, i_max: int | None = None, value=None) -> list[tuple[str, int]]:
        """The cheapest path reaching loss bucket ``j`` within rounded time ``i_max`` (default: ``self.i_max``).

        ``value`` is that path's cost when known (``relaxed_costs(j)[i_max]``).
        Returns [(model id, option index)] per epoch.
        """
        i_max = self.i_max if i_max is None else i_max
        v = value if value is not None else (self.best[j] if i_max == self.i_max else self.relaxed_costs(j)[i_max])
        for k, lay in enumerate(self.layers):  # noqa: B007 - k is used after the loop
            hits = np.argwhere(lay[:, : i_max + 1, j:] == v)
            if len(hits):
                break
        hit = hits[0]
        m, i, jj = int(hit[0]), int(hit[1]), int(hit[2]) + j
        out: list[tuple[int, int]] = []
        for kk in range(k, -1, -1):
            v = self.layers[kk][m, i, jj]
            step = self._back(kk, m, i, jj, v)
            out.append((m, step[0]))
            m, i, jj = step[1], step[2], step[3]
        ids = self.instance.model_ids
        return [(ids[a], o) for a, o in reversed(out)]

    def _back(self, kk: int, m: int, i: int, j: int, v) -> tuple[int, int, int, int]:
        """(option, previous model, previous time bucket, previous loss bucket) of a stored state."""
        L = self.L
        for dt, c, o in self.edges[m]:
            if dt > i:
                continue
            ip = i - dt
            if kk == 0:
                d = int(self.gb[m, 0])
                if ip == 0 and min(d, L) == j and c == v:
                    return o, m, 0, 0
                continue
            S = self.layers[kk - 1]
            for a in self.preds[m]:
                d = self._delta(a, m, kk)
                js = range(max(L - d, 0), L + 1) if (j == L and d >= 0) else [j - d]
                for jp in js:
                    if 0 <= jp <= L and S[a, ip, jp] + c == v:
                        return o, a, ip, jp
        raise RuntimeError("stage 2 backtracking lost the path")  # a bug, never an input problem
