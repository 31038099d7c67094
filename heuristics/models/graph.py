"""DepL stage 2's expanded graph: the layered dynamic program over (model, time bucket, loss bucket).

Vertices are (model, epoch k, time bucket i of T_max/eta, loss bucket j of R/eta); see
:mod:`deplbench.heuristics.models.selection` for the surrogates that give the loss
resource. The DP keeps ``S_k[m, i, j]``, the least cost of a path of k epochs ending on
model m with rounded time i and rounded gain j (saturating at the top bucket L).

Speed, with the values of the textbook recurrence bit for bit (docs/depl.md, "Speed"):

* every layer is updated only inside the bounding box of its finite entries (a min with
  ``inf`` changes nothing, and the finite entries are computed by the very same float32
  additions and minima); the largest predecessor is copied into a start region (not min-ed
  with ``inf``), and the rows <= eta are reduced apart;
* the per-layer minima that backtracking needs and the column minima of each box (which the
  stop rule and ``within`` read) are kept, so a path is found by one search in one layer
  instead of a scan of every layer;
* a layer is one call of :func:`~deplbench.heuristics.models.step.layer_step`, whose array
  loops (predecessors moved into a start region, options applied, pruning, column minima) are
  compiled loops of :mod:`deplbench.heuristics.models.kernels` doing the same float32
  operations; the layers live in chunks taken from (and given back to)
  :mod:`~deplbench.heuristics.models.pool`, and the served costs and paths are compiled loops
  over them (:mod:`~deplbench.heuristics.models.serve`). Paths are not memoised: a compiled
  step back costs less than a memo's bookkeeping.

``tests/heuristics/models/test_graph_dense.py`` checks every entry against the textbook dense recurrence and
``tests/heuristics/models/test_serve.py`` the served costs and paths against plain Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from deplbench.heuristics.models import pool
from deplbench.heuristics.models.layers import Layer
from deplbench.heuristics.models.serve import SLOTS, backtrack, relaxed_rows, served_columns
from deplbench.heuristics.models.step import layer_step
from deplbench.instances.semantics import Options, options

if TYPE_CHECKING:
    from deplbench.heuristics.models.selection import Surrogate


_EMPTY = np.empty(0, dtype=np.float32)  # the unused slots of the chunk tuple


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
        # _delta(a, m, col) for every edge of the graph, as plain ints (the DP reads it per layer)
        D = self.gb.T[:, None, :] - self.pb[None, :, :]  # [col, a, m], the same int64 sums as _delta
        if self.sb is not None:
            D = D + self.sb.transpose(2, 0, 1)
        D[:, np.arange(M), np.arange(M)] = self.gb.T  # staying on a model: its gain alone
        self._D = np.ascontiguousarray(D, dtype=np.int64)  # [col, a, m]: the loss buckets of each edge
        self._adj = np.ascontiguousarray(np.isfinite(surrogate.penalty))  # [a, m]: a may precede m
        self._gb0 = np.ascontiguousarray(self.gb[:, 0])
        self.edges = [self._pareto_edges(m, dt_unit, time_rounding) for m in range(M)]
        # every model's options (time buckets, costs, option indices), flat, model m's from _eptr[m]
        self._dts = np.array([dt for e in self.edges for dt, _, _ in e], dtype=np.int64)
        self._cs = np.array([c for e in self.edges for _, c, _ in e], dtype=np.float32)
        self._opt = np.array([o for e in self.edges for _, _, o in e], dtype=np.int64)
        self._eptr = np.cumsum([0] + [len(e) for e in self.edges], dtype=np.int64)
        # the layers: least costs in chunks and column minima in an arena, boxes and offsets per (layer, model)
        K = instance.max_epochs
        self._mem = [pool.take_largest()]  # the least costs' chunks, from the pool (given back by release())
        self._cix = np.zeros(K, dtype=np.int64)  # the chunk of each layer
        self._tup = None  # the chunks as the compiled serving reads them (set once built)
        self._carena = np.empty(2 * M * (self.L + 1) * K, dtype=np.float32)  # column minima: at most 2 (L + 1) a box
        self._pos = self._cpos = 0  # where the next layer goes in the last chunk and in the column minima
        self._box = np.full((K, M, 4), -1, dtype=np.int64)
        self._off = np.zeros((K, M), dtype=np.int64)
        self._coff = np.zeros((K, M), dtype=np.int64)
        self.n_layers = 0
        self.cells = 0  # DP states computed (the bounding boxes filled): the work eta drives
        self._relaxed: dict[int, np.ndarray] = {}  # j -> per-layer least cost with time <= i (prefix min)
        self._build()

    def _pareto_edges(self, m: int, dt_unit: float, time_rounding: str) -> list[tuple[int, np.float32, int]]:
        """(dt, cost, option index) of model ``m``, Pareto in (rounded time, cost), time increasing."""
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
        return kept

    def _delta(self, a: int, m: int, col: int) -> int:
        """Loss buckets gained by the edge from model ``a`` to epoch ``col + 1`` on model ``m``."""
        if a == m:
            return int(self.gb[m, col])
        extra = 0 if self.sb is None else int(self.sb[a, m, col])
        return int(self.gb[m, col] - self.pb[a, m] + extra)

    def _layer(self, k: int) -> tuple[int, float, float]:
        """Fill layer k (1-based) from layer k - 1 by one call of the compiled layer step; lowers ``_top``.

        Returns the layer's number of models with a finite state, its least top-bucket cost and its
        least cost (inf when there is none).

        The states above ``_top[i]`` (the least cost of a top-bucket state with time <= i) are
        dropped: every extension of such a state costs >= c (costs are positive), takes time >= i
        and reaches some bucket <= L, while the top state is strictly cheaper, takes no more time
        and reaches every bucket <= L. So for every query (bucket j, time limit) the top state or
        a path no dearer than it qualifies wherever the dropped state's paths do, and the least
        costs, the states that attain them, the per-layer minima that are least and the
        backtracking (which matches costs exactly) are all unchanged. Ties (c == _top[i]) are kept.
        """
        prev = max(k - 2, 0)
        while True:
            cells, cn, done, live, tops, low = layer_step(
                k, self._mem[self._cix[prev]], self._mem[-1], self._pos, self._carena, self._cpos, self._box[prev],
                self._off[prev], self._adj, self._D[k - 1], self._gb0, self._dts, self._cs, self._eptr, self._top,
                self.L, self.Tb, self.eta, self._box[k - 1], self._off[k - 1], self._coff[k - 1])
            if done:
                break
            if self._cpos + cn > len(self._carena):  # sized for L + 1 columns per box: cannot happen
                raise RuntimeError("stage 2's column minima overflow their arena")  # a bug, never an input problem
            if len(self._mem) == SLOTS:  # chunks grow geometrically: thousands of TB before this
                raise MemoryError("stage 2's graph needs more memory chunks than it can address")
            self._mem.append(pool.take(pool.next_size(sum(len(c) for c in self._mem), len(self._mem), cells)))
            self._pos = 0  # the layer does not fit in what is left of the chunk: made in a new one
        self._cix[k - 1] = len(self._mem) - 1
        self._pos += cells
        self._cpos += cn
        self.cells += cells
        self.n_layers = k
        return live, tops, low

    def _build(self) -> None:
        inst = self.instance
        self._top = np.full(self.Tb + 1, np.inf, dtype=np.float32)
        cmin = min((c for ed in self.edges for _, c, _ in ed), default=np.float32(np.inf))
        best_top = np.inf
        for k in range(1, inst.max_epochs + 1):
            live, tops, low = self._layer(k)
            best_top = min(best_top, tops)  # includes relaxed paths: a safe stop
            if not live:
                break
            # no continuation can be cheaper for any requirement up to the cap (never while best_top is inf)
            if best_top != np.inf and low + cmin >= best_top:
                break
        # one chunk (the common case) is passed as is; more as a tuple of SLOTS (the compiled loops have both)
        self._tup = self._mem[0] if len(self._mem) == 1 else tuple(self._mem) + (_EMPTY,) * (SLOTS - len(self._mem))
        self.within(self.eta)

    @property
    def layers(self) -> list[Layer]:
        """The layers as per-model views (for inspection and tests; the graph reads the chunks)."""
        return [Layer.from_flat(self._mem[self._cix[k]], self._carena, self._box[k], self._off[k], self._coff[k],
                                self.eta)
                for k in range(self.n_layers)]

    def release(self) -> None:
        """Give the layers' memory back for the next graph (:mod:`~deplbench.heuristics.models.pool`); the
        graph serves nothing afterwards. A chunk something else still views is not given back."""
        self.n_layers = 0
        self._tup = None
        while self._mem:
            pool.give(self._mem.pop())

    def within(self, i_max: int) -> None:
        """Serve paths of rounded time <= ``i_max`` (``eta``: conservative; more: relaxed, for stage 3 to re-time).

        Sets ``best[j]``, the least cost of such a path reaching loss bucket >= j.
        """
        self.i_max = min(int(i_max), self.Tb)
        col = served_columns(self._tup, self._cix, self._carena, self._box, self._off, self._coff, self.n_layers, self.L,
                             self.i_max, self.eta)  # least cost per (layer, j)
        self._sfx = np.minimum.accumulate(col[:, ::-1], axis=1)[:, ::-1]  # per layer: reaching >= j
        self.best = self._sfx.min(axis=0)

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
        b = self.best[j_lo:]
        last = np.append(b[1:] != b[:-1], True)  # the highest bucket of its plateau (L ends the last one)
        return [j_lo + int(j) for j in np.flatnonzero(last & np.isfinite(b))]

    def cost(self, j: int) -> float:
        return float(self.best[j])

    def _relaxed_table(self, j: int) -> np.ndarray:
        """(layers, Tb+1): per layer, least cost reaching bucket >= j with rounded time <= i."""
        if j not in self._relaxed:
            self._relaxed[j] = relaxed_rows(self._tup, self._cix, self._box, self._off, self.n_layers, j, self.Tb)
        return self._relaxed[j]

    def relaxed_costs(self, j: int) -> np.ndarray:
        """Least cost reaching bucket >= j with rounded time <= i, for every time bucket i."""
        return self._relaxed_table(j).min(axis=0)

    def path(self, j: int, i_max: int | None = None, value=None) -> list[tuple[str, int]]:
        """The cheapest path reaching loss bucket ``j`` within rounded time ``i_max`` (default: ``self.i_max``).

        ``value`` is that path's cost when known (``relaxed_costs(j)[i_max]``).
        Returns [(model id, option index)] per epoch: the first state (in layer, then C order)
        of the least cost, so the path is the same as a scan of every layer would give, and
        each step back the first (option, predecessor, column) whose sum is the state's cost.
        """
        i_max = self.i_max if i_max is None else i_max
        # per-layer least cost over the region; v is the least over all layers, so the first
        # layer holding an entry equal to v is the first whose region minimum equals v
        region = self._sfx[:, j] if i_max == self.i_max else self._relaxed_table(j)[:, i_max]
        v = value if value is not None else region.min()
        k = int(np.flatnonzero(region == v)[0])
        seq = backtrack(self._tup, self._cix, self._box, self._off, k, np.float32(v), i_max, j, self.L, self._gb0, self._D,
                        self._adj, self._dts, self._cs, self._opt, self._eptr)
        if seq[0, 0] < 0:
            raise RuntimeError("stage 2 backtracking lost the path")  # a bug, never an input problem
        ids = self.instance.model_ids
        return [(ids[a], o) for a, o in seq.tolist()]
