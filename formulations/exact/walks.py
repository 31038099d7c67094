"""The walk structure of the switch graph, for ``exact`` (docs/exact-proofs.md, "Walks", Lemma 8b).

A model sequence is a walk of allowed switches. Which supports a walk can use (:func:`walkable`),
whether a prefix can still be completed (:func:`covering_walk`), and the order in which every walk
passes the strongly connected components of a support (:func:`chain_blocks`), hence the earliest
position each model's remaining epochs can take (:class:`Blocks`). Imports only :mod:`.knobs` of the
package.
"""

from __future__ import annotations

from deplbench.formulations.exact.knobs import MAX_MASKS


def walkable(M: int, allowed: set[tuple[int, int]]) -> set[int]:
    """Bitmasks of the supports ``U`` whose models one sequence can all use: a walk of allowed
    switches inside ``U`` that visits every model of ``U`` (states: current model, visited set)."""
    out = set()
    for U in range(1, 1 << M):
        members = [m for m in range(M) if U >> m & 1]
        seen = {(m, 1 << m) for m in members}
        todo = list(seen)
        while todo:
            m, vis = todo.pop()
            if vis == U:
                out.add(U)
                break
            for k in members:
                if (m, k) in allowed and (k, vis | 1 << k) not in seen:
                    seen.add((k, vis | 1 << k))
                    todo.append((k, vis | 1 << k))
    return out


def chain_blocks(members: tuple[int, ...], allowed: set[tuple[int, int]]) -> tuple[tuple[int, ...], ...] | None:
    """The strongly connected components of the switch graph on ``members``, in the one order a
    walk visiting all of ``members`` passes them (docs/exact-proofs.md, Lemma 8b), else None.

    A walk never returns to a component it left, so it passes every component once, in an order that
    is a Hamiltonian path of the condensation (a DAG): that path is unique when it exists. None when
    no walk visits every member (then any placement is valid, there being no sequence).
    """
    reach = {m: {m} for m in members}  # reach[m]: the members a walk from m can get to
    changed = True
    while changed:
        changed = False
        for m in members:
            more = {k for i in reach[m] for k in members if (i, k) in allowed} - reach[m]
            if more:
                reach[m] |= more
                changed = True
    comps = {frozenset(k for k in reach[m] if m in reach[k]) for m in members}
    # along the path a component reaches all later ones: the reach sizes strictly decrease
    order = sorted(comps, key=lambda c: -len(reach[min(c)]))
    for c, d in zip(order, order[1:], strict=False):
        if not any((i, k) in allowed for i in c for k in d):
            return None
    return tuple(tuple(sorted(c)) for c in order)


def covering_walk(nxt: list[list[int]], last: int, need: int) -> bool:
    """Some walk from ``last`` along ``nxt`` (the allowed next models) visits every model of the
    mask ``need`` and no model outside it: a necessary condition for completing a prefix that ends
    with ``last`` when ``need`` holds the models with remaining epochs (a model without remaining
    epochs cannot run again). States: current model, models visited."""
    start = (last, need & (1 << last))
    seen, todo = {start}, [start]
    while todo:
        m, vis = todo.pop()
        if vis == need:
            return True
        for k in nxt[m]:
            state = (k, vis | 1 << k)
            if need >> k & 1 and state not in seen:
                seen.add(state)
                todo.append(state)
    return False


class Blocks:
    """Lemma 8b for the completions of a prefix: the components of the remaining models' switch
    graph in the order every completion passes them, remembered per set of remaining models.

    Parameters
    ----------
    M : int
        Number of models.
    allowed : set of (int, int)
        The allowed switches ``(from, to)``.
    """

    def __init__(self, M: int, allowed: set[tuple[int, int]]):
        self.M, self.allowed = M, allowed
        self._blocks: dict[int, tuple[tuple[int, ...], ...] | None] = {}
        self._first: dict[int, int] = {}
        self._where: dict[int, dict[int, int] | None] = {}
        self._masks: dict[tuple[int, ...], int] = {}  # remaining counts -> mask (a search asks each many times)

    def of(self, need: int) -> tuple[tuple[int, ...], ...] | None:
        """:func:`chain_blocks` of the models of the mask ``need`` (remembered)."""
        out = self._blocks.get(need, False)
        if out is False:
            out = self._blocks[need] = chain_blocks(tuple(m for m in range(self.M) if need >> m & 1), self.allowed)
        return out

    def forced_first(self, within: int) -> int:
        """The one model of the mask ``within`` that no switch from ``within`` enters (it must come
        first in every sequence using exactly these models), else -1."""
        out = self._first.get(within)
        if out is None:
            ms = [m for m in range(self.M) if within >> m & 1]
            free = [m for m in ms if not any((i, m) in self.allowed for i in ms if i != m)]
            out = self._first[within] = free[0] if len(free) == 1 else -1
        return out

    def mask(self, r) -> int:
        """The mask of the models with a positive count in ``r`` (remaining epochs, or a count vector;
        remembered for tuples)."""
        out = self._masks.get(r) if type(r) is tuple else None
        if out is None:
            out = sum(1 << m for m in range(self.M) if r[m])
            if type(r) is tuple:
                if len(self._masks) >= MAX_MASKS:
                    self._masks.clear()
                self._masks[r] = out
        return out

    def where(self, r: tuple[int, ...]) -> dict[int, int] | None:
        """Per remaining model, the index of its component (remembered); None as :meth:`offsets`."""
        need = self.mask(r)
        out = self._where.get(need, False)
        if out is False:
            blocks = self.of(need)
            out = self._where[need] = None if blocks is None or len(blocks) < 2 else {
                m: j for j, blk in enumerate(blocks) for m in blk}
        return out

    def offsets(self, r: tuple[int, ...]) -> list[int] | None:
        """Per model, the remaining epochs of the components before its own: its ``i``-th remaining
        epoch comes at least that many positions after the ``i``-th position left. None when the
        remaining models form one component (every offset 0) or no walk covers them."""
        blocks = self.of(self.mask(r))
        if blocks is None or len(blocks) < 2:
            return None
        off, run = [0] * self.M, 0
        for blk in blocks:
            for m in blk:
                off[m] = run
            run += sum(r[m] for m in blk)
        return off

    def fixed(self, r: tuple[int, ...]) -> tuple[int, ...]:
        """The models outside the last component: a refutation stored for remaining counts ``r2``
        covers ``r <= r2`` only when these are equal (fewer epochs there move a later component to
        earlier positions, which no bound built on the offsets may assume)."""
        blocks = self.of(self.mask(r))
        if blocks is None or len(blocks) < 2:
            return ()
        return tuple(m for blk in blocks[:-1] for m in blk)
