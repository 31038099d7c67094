"""DepL stage 2's boxed dynamic program equals the textbook dense recurrence, entry for entry.

The graph keeps per (epoch, model) only the bounding box of its finite states, copies the
largest predecessor into a start region instead of taking minima with inf, skips row scans,
and keeps column minima of the rows <= eta (docs/depl.md, "Speed"). The reference here has
none of that: full (time, loss) arrays, one loop per predecessor column and per option, the
same float32 sums and the same pruning against the top bucket. Every stored entry, box,
column minimum and served cost must be equal bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.heuristics.models.perrun import frontier_surrogate
from deplbench.heuristics.models.selection import (
    ExpandedGraph,
    cgf_surrogate,
    chernoff_arguments,
    quantile_surrogate,
)
from deplbench.instances.families.paper import load_paper
from deplbench.instances.semantics import data_effect, options
from deplbench.registry import generate


def dense_layers(graph: ExpandedGraph) -> list[list[np.ndarray]]:
    """Per epoch and model, the (Tb + 1, L + 1) least costs, by the plain recurrence."""
    Tb, L, M = graph.Tb, graph.L, len(graph.instance.models)
    top = np.full(Tb + 1, np.inf, dtype=np.float32)  # least top-bucket cost with time <= i, earlier epochs
    layers, prev = [], None
    for k in range(1, len(graph.layers) + 1):
        cur = []
        for m in range(M):
            P = np.full((Tb + 1, L + 1), np.inf, dtype=np.float32)  # before the epoch's option
            if k == 1:
                d = int(graph.gb[m, 0])
                if d >= 0:
                    P[0, min(d, L)] = 0.0
            else:
                for a in graph.preds[m]:
                    d = graph._delta(a, m, k - 1)
                    for j in range(L + 1):
                        if j + d >= 0:
                            t = min(j + d, L)
                            P[:, t] = np.minimum(P[:, t], prev[a][:, j])
            full = np.full((Tb + 1, L + 1), np.inf, dtype=np.float32)
            for dt, c, _ in graph.edges[m]:
                full[dt:] = np.minimum(full[dt:], P[:Tb + 1 - dt] + c)
            full[full > top[:, None]] = np.inf  # a dearer state than a top one no later in time
            cur.append(full)
        for F in cur:
            top = np.minimum(top, F[:, L])
        top = np.minimum.accumulate(top)
        layers.append(cur)
        prev = cur
    return layers


def cases():
    """(label, instance, surrogate, eta, cap): both noise modes, switch gains, a cap past the requirement."""
    for name in ("paper-alexnet-per_epoch-t9", "paper-mobilenet-per_run-t7"):
        inst = load_paper(name)
        g = data_effect(inst, inst.dataset_ids).g
        yield name + "-cgf", inst, cgf_surrogate(inst, g, chernoff_arguments(inst, g)[1]), 24, 1.0
        yield name + "-frontier", inst, frontier_surrogate(inst, g), 24, 1.25
    for mode in ("per_run", "per_epoch"):
        inst = generate("random", {"noise_mode": mode}, seed=3)
        g = data_effect(inst, inst.dataset_ids).g
        yield f"random-{mode}-quantile", inst, quantile_surrogate(inst, g, 1 - inst.loss.quantile, "mean"), 30, 1.25


@pytest.mark.parametrize("label, inst, sur, eta, cap", list(cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_boxed_dp_equals_dense_recurrence(label, inst, sur, eta, cap):
    graph = ExpandedGraph(inst, inst.dataset_ids, sur, eta, cap, options(inst, inst.dataset_ids))
    dense = dense_layers(graph)
    for k, (lay, ref) in enumerate(zip(graph.layers, dense, strict=True)):
        for m, R in enumerate(ref):
            box, sub = lay.boxes[m], lay.subs[m]
            if box is None:
                assert not np.isfinite(R).any(), (k, m)
                continue
            i0, i1, j0, j1 = box
            assert np.array_equal(sub, R[i0:i1 + 1, j0:j1 + 1]), (k, m)
            inside = np.zeros(R.shape, dtype=bool)
            inside[i0:i1 + 1, j0:j1 + 1] = True
            assert not np.isfinite(R[~inside]).any(), (k, m)  # the box holds every finite state
            fin = np.isfinite(R)
            assert fin[i0].any() and fin[i1].any() and fin[:, j0].any() and fin[:, j1].any(), (k, m)  # and is tight
            assert np.array_equal(lay.colmins[m], R[i0:i1 + 1, j0:j1 + 1].min(axis=0)), (k, m)
            emin = lay.etamins[m]
            if emin is not None:
                assert i0 <= graph.eta < i1
                assert np.array_equal(emin, R[i0:graph.eta + 1, j0:j1 + 1].min(axis=0)), (k, m)
    for i_max in (graph.eta, graph.Tb):  # the costs served: least over epochs, models, time <= i_max, loss >= j
        graph.within(i_max)
        region = np.stack([R[:i_max + 1].min(axis=0) for lay in dense for R in lay])
        want = np.minimum.accumulate(region.min(axis=0)[::-1])[::-1]
        assert np.array_equal(graph.best, want)


def test_reference_sees_a_wrong_entry():
    """The comparison can fail: one stored entry nudged by one ulp is caught."""
    inst = load_paper("paper-alexnet-per_epoch-t9")
    g = data_effect(inst, inst.dataset_ids).g
    sur = cgf_surrogate(inst, g, chernoff_arguments(inst, g)[1])
    graph = ExpandedGraph(inst, inst.dataset_ids, sur, 24, 1.0, options(inst, inst.dataset_ids))
    dense = dense_layers(graph)
    lay = graph.layers[-1]
    m = next(m for m, b in enumerate(lay.boxes) if b is not None)
    sub = lay.subs[m].copy()
    r, c = np.argwhere(np.isfinite(sub))[0]
    sub[r, c] = np.nextafter(sub[r, c], np.float32(np.inf))
    i0, i1, j0, j1 = lay.boxes[m]
    assert not np.array_equal(sub, dense[-1][m][i0:i1 + 1, j0:j1 + 1])
