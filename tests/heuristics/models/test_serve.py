"""DepL stage 2's compiled serving and backtracking against the plain Python they replaced, and its memory pool.

``heuristics/models/serve.py`` reads the layers from flat arrays; the references here read the
per-model views (:attr:`ExpandedGraph.layers`) with the loops of the code before it (first state
of least cost in C order, then each step back the first (option, predecessor, column) whose sum
is the state's cost). Paths, relaxed costs and served costs must be equal, and a graph whose
arena had to grow many times must equal one whose arena held every layer from the start.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_graph_dense import cases

from deplbench.heuristics.models import pool
from deplbench.heuristics.models.selection import ExpandedGraph, mean_surrogate, quantile_surrogate
from deplbench.instances.schema import Instance
from deplbench.instances.semantics import data_effect, options
from deplbench.registry import generate

INF = np.float32(np.inf)


def knapsack_cases():
    """Integer costs: many paths of equal cost, so the order of the scans decides which one is returned."""
    for seed in (0, 3):
        inst = generate("knapsack", {"items": 6, "capacity": 30}, seed=seed)
        g = data_effect(inst, inst.dataset_ids).g
        yield f"knapsack-{seed}-mean", inst, mean_surrogate(inst, g), 60, 1.25


def twin_case():
    """Models m0 and m1 identical, every switch allowed at no penalty: a state on m2 comes from either at the
    same cost, so the order in which a step back tries the predecessors decides the path."""
    inst = generate("random", {"models": 3, "density": 1.0}, seed=1)
    d = inst.model_dump(by_alias=True)
    d["models"] = (d["models"][0], dict(d["models"][0], id="m1"), d["models"][2])
    free = {"family": "constant", "value": 0.0, "low": 0.0, "high": 0.0}
    d["switches"] = tuple({"from": a, "to": b, "penalty": free} for a in inst.model_ids for b in inst.model_ids if a != b)
    twin = Instance.model_validate(d)
    yield "twin-models-mean", twin, mean_surrogate(twin, data_effect(twin, twin.dataset_ids).g), 40, 1.25


CASES = list(cases()) + list(knapsack_cases()) + list(twin_case())


def _first(lay, v, i_max, j):
    for m, b in enumerate(lay.boxes):
        if b is None or b[0] > i_max or b[3] < j:
            continue
        c0 = max(j, b[2])
        hits = lay.subs[m][: i_max - b[0] + 1, c0 - b[2]:] == v
        f = int(hits.argmax())
        if hits.flat[f]:
            r, c = divmod(f, hits.shape[1])
            return m, b[0] + r, c0 + c
    raise AssertionError("no state of the least cost")


def _at(lay, m, i, j):
    b = lay.boxes[m]
    if b is None or not (b[0] <= i <= b[1] and b[2] <= j <= b[3]):
        return INF
    return lay.subs[m][i - b[0], j - b[2]]


def _back(graph, layers, kk, m, i, j, v):
    L = graph.L
    if kk == 0:
        d = int(graph.gb[m, 0])
        for dt, c, o in graph.edges[m]:
            if dt == i and min(d, L) == j and c == v:
                return o, m, 0, 0
        raise AssertionError("lost at epoch 1")
    S = layers[kk - 1]
    for dt, c, o in graph.edges[m]:
        if dt > i:
            continue
        ip = i - dt
        for a in graph.preds[m]:
            if S.boxes[a] is None:
                continue
            d = graph._delta(a, m, kk)
            i0, i1, j0, j1 = S.boxes[a]
            if not i0 <= ip <= i1:
                continue
            sub = S.subs[a]
            if j == L and d >= 0:
                for jp in range(max(L - d, 0, j0), min(L, j1) + 1):
                    if sub[ip - i0, jp - j0] + c == v:
                        return o, a, ip, jp
            elif j0 <= j - d <= j1 and sub[ip - i0, j - d - j0] + c == v:
                return o, a, ip, j - d
    raise AssertionError("lost a step back")


def ref_relaxed(graph, j):
    """(layers, Tb + 1): least cost reaching >= j with time <= i, by numpy on the views."""
    per = np.full((graph.n_layers, graph.Tb + 1), INF, dtype=np.float32)
    for k, lay in enumerate(graph.layers):
        for b, sub in zip(lay.boxes, lay.subs, strict=True):
            if b is not None and b[3] >= j:
                rows = sub[:, max(j, b[2]) - b[2]:].min(axis=1)
                per[k, b[0]:b[1] + 1] = np.minimum(per[k, b[0]:b[1] + 1], rows)
    return np.minimum.accumulate(per, axis=1)


def ref_path(graph, j, i_max, region):
    layers = graph.layers
    v = region.min()
    k = int(np.flatnonzero(region == v)[0])
    m, i, jj = _first(layers[k], v, i_max, j)
    seq = []
    for kk in range(k, -1, -1):
        o, a, ip, jp = _back(graph, layers, kk, m, i, jj, _at(layers[kk], m, i, jj))
        seq.append((graph.instance.model_ids[m], o))
        m, i, jj = a, ip, jp
    return seq[::-1]


def _queries(graph):
    """(j, i_max) pairs: every candidate bucket at eta and at Tb, and the relaxed levels of the last."""
    out = []
    for i_max in (graph.eta, graph.Tb):
        graph.within(i_max)
        out += [(j, i_max) for j in graph.candidates()]
    graph.within(graph.eta)
    return out


@pytest.mark.parametrize("label, inst, sur, eta, cap", CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_paths_and_relaxed_costs_equal_the_python_reference(label, inst, sur, eta, cap):
    graph = ExpandedGraph(inst, inst.dataset_ids, sur, eta, cap, options(inst, inst.dataset_ids))
    queries = _queries(graph)
    assert queries
    for j, i_max in queries:
        table = ref_relaxed(graph, j)
        assert np.array_equal(graph._relaxed_table(j), table), (j,)
        assert np.array_equal(graph.relaxed_costs(j), table.min(axis=0)), (j,)
        graph.within(i_max)
        assert graph.path(j) == ref_path(graph, j, i_max, graph._sfx[:, j]), (j, i_max)
        # a relaxed query (the pipeline's re-timing): time limit i and the cost it is served at
        rc = graph.relaxed_costs(j)
        for i in np.flatnonzero(np.isfinite(rc))[::7]:
            graph.within(graph.eta)
            assert graph.path(j, int(i), rc[i]) == ref_path(graph, j, int(i), table[:, i]), (j, i)


def test_the_reference_path_can_differ():
    """The comparison can fail: a path with one option changed is not the graph's."""
    label, inst, sur, eta, cap = CASES[0]
    graph = ExpandedGraph(inst, inst.dataset_ids, sur, eta, cap, options(inst, inst.dataset_ids))
    j = graph.candidates()[-1]
    path = graph.path(j)
    assert path == ref_path(graph, j, graph.eta, graph._sfx[:, j])
    wrong = [(path[0][0], path[0][1] + 1)] + path[1:]
    assert wrong != ref_path(graph, j, graph.eta, graph._sfx[:, j])


def _default_graph(seed: int = 0) -> ExpandedGraph:
    inst = generate("random", {}, seed=seed)
    g = data_effect(inst, inst.dataset_ids).g
    return ExpandedGraph(inst, inst.dataset_ids, quantile_surrogate(inst, g), 200)


def test_layers_spread_over_many_chunks_equal_one_chunk(monkeypatch):
    """A layer that does not fit in what is left of a chunk is made again in a new one: the same graph as
    one whose first chunk held every layer."""
    pool.clear()
    big = _default_graph()
    monkeypatch.setattr(pool, "CHUNK", 2000)
    monkeypatch.setattr(pool, "CAP", 20000)
    pool.clear()
    small = _default_graph()
    assert len(big._mem) == 1 and len(small._mem) > 5
    assert len(set(small._cix[:small.n_layers].tolist())) > 5  # the layers really are in different chunks
    assert small.cells == big.cells and small.n_layers == big.n_layers
    for a, b in zip(small.layers, big.layers, strict=True):
        assert a.boxes == b.boxes
        for x, y in zip(a.subs + a.colmins, b.subs + b.colmins, strict=True):
            assert (x is None and y is None) or np.array_equal(x, y)
    assert np.array_equal(small.best, big.best)
    assert all(small.path(j) == big.path(j) for j in big.candidates())
    small.within(small.Tb)
    big.within(big.Tb)
    assert all(np.array_equal(small.relaxed_costs(j), big.relaxed_costs(j)) for j in big.candidates())
    small.release()
    big.release()


def test_chunk_sizes_double_then_follow_the_graph():
    sizes, held = [], pool.CHUNK
    for count in range(1, 20):
        sizes.append(pool.next_size(held, count, 1))
        held += sizes[-1]
    assert sizes[0] == 2 * pool.CHUNK and max(sizes[:6]) <= pool.CAP
    assert all(b >= a for a, b in zip(sizes, sizes[1:], strict=False))  # never smaller
    assert all(s <= max(pool.CAP, h // 2) for s, h in zip(sizes, np.cumsum([pool.CHUNK] + sizes), strict=False))
    assert pool.next_size(10, 1, 5 * pool.CAP) == 5 * pool.CAP  # a layer larger than the rule gets its own


def test_a_released_graph_gives_its_chunks_to_the_next():
    pool.clear()
    first = _default_graph()
    arena = id(first._mem[0])
    first.release()
    assert arena in [id(c) for c in pool._FREE]
    second = _default_graph(1)
    assert id(second._mem[0]) == arena  # the next graph works in the memory the first gave back
    second.release()
    pool.clear()


def test_a_chunk_still_viewed_is_not_taken_back():
    pool.clear()
    graph = _default_graph()
    views = graph.layers  # per-model views of the arena
    graph.release()
    assert not pool._FREE  # kept out: the next graph would overwrite what the views show
    assert views[0].subs  # (the views are still readable)
    chunk = pool.take(10)
    named = pool.give(chunk)  # a name still refers to it
    only = pool.give(pool.take(10))  # the only reference (outside an assert: pytest keeps its operands)
    assert named is False and only is True
    pool.clear()


def test_the_pool_keeps_at_most_its_bound(monkeypatch):
    pool.clear()
    monkeypatch.setattr(pool, "KEEP", 3 * 4 * pool.CHUNK)
    for _ in range(5):
        pool.give(np.empty(pool.CHUNK, dtype=np.float32))
    assert len(pool._FREE) == 3
    pool.clear()
    assert not pool._FREE


def test_a_large_chunk_that_cannot_be_mapped_is_a_memory_error(monkeypatch):
    """Under an address-space cap the mapping fails with ENOMEM: the same MemoryError (a memout) as numpy's."""
    import mmap

    def refuse(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refuse)
    with pytest.raises(MemoryError, match="could not map"):
        pool.take(pool.HUGE + 1)
    assert pool.take(pool.HUGE).dtype == np.float32  # numpy's chunks do not map
