"""Incumbents as they improve: methods *offer* plans, whoever listens keeps the best.

A method calls :func:`offer` whenever it holds a new best plan (``exact``: the ``depl-plus`` start,
the block scan's and the search's plans; the SAA backends: their start plan before the MILP;
the heuristics: their certified plan). :func:`deplbench.registry.solve` listens to every call it
makes (:func:`listening`), so that a method stopped by a ``KeyboardInterrupt`` or a limit before it
returned anything still yields its best plan (status ``interrupted`` / ``timeout``), and
``deplbench solve`` also listens to write each improvement to a checkpoint file beside its output
(a SIGKILL leaves the best plan on disk). Offering costs nothing when nobody listens.

Core: imports nothing of deplbench (a plan is any object with ``segments``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Offer:
    """One offered incumbent: the plan, its cost (the objective) and a proven bound if known."""

    plan: Any
    objective: float
    bound: float | None = None
    source: str = ""


_LISTENERS: list[Callable[[Offer], None]] = []


def is_interrupt(exc: BaseException) -> bool:
    """``exc`` is a stop by Ctrl-C (or SIGTERM, which the commands turn into one).

    A ``KeyboardInterrupt``, or an error CPython raises in its place: the ``SystemError`` of a
    compiled (numba) call that "returned a result with an exception set" while the interrupt was
    raised as it built its result, or the ``ImportError`` ("initialization failed") of a native
    module whose initialisation the interrupt cut short. The ``KeyboardInterrupt`` is then that
    error's cause (or its context), possibly through further such errors, one per level.
    """
    for _ in range(8):  # a compiled call inside another one chains one SystemError per level
        if isinstance(exc, KeyboardInterrupt):
            return True
        if not isinstance(exc, (SystemError, ImportError)):
            return False
        exc = exc.__cause__ or exc.__context__
    return False


def offer(plan: Any, objective: float, bound: float | None = None, source: str = "") -> None:
    """Tell every listener about a new incumbent ``plan`` of cost ``objective``.

    Parameters
    ----------
    plan : Plan
        A complete plan (certified feasible by the method, or SAA-feasible for an SAA method).
    objective : float
        Its cost (compute plus transfer), the order in which offers are kept.
    bound : float, optional
        A proven lower bound on the optimum, if the method has one at this point.
    source : str
        What found it (shown in messages), e.g. ``"depl-plus start"``.
    """
    if not _LISTENERS or plan is None or not getattr(plan, "segments", None):
        return
    try:
        obj = float(objective)
    except (TypeError, ValueError):
        return
    if not math.isfinite(obj):
        return
    item = Offer(plan, obj, bound, source)
    for fn in list(_LISTENERS):
        fn(item)


class Best:
    """A listener that keeps the cheapest offer (and the largest bound offered)."""

    def __init__(self, on_improve: Callable[[Offer], None] | None = None):
        self.best: Offer | None = None
        self.on_improve = on_improve

    def __call__(self, item: Offer) -> None:
        if self.best is not None and item.objective >= self.best.objective:
            return
        self.best = item
        if self.on_improve is not None:
            self.on_improve(item)


@contextlib.contextmanager
def listening(fn: Callable[[Offer], None]) -> Iterator[Callable[[Offer], None]]:
    """Call ``fn(offer)`` for every :func:`offer` made inside the block (listeners nest)."""
    _LISTENERS.append(fn)
    try:
        yield fn
    finally:
        with contextlib.suppress(ValueError):
            _LISTENERS.remove(fn)


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """No listener outside the block hears the offers made inside it.

    For a helper solve whose plans are not incumbents of the caller's problem (an SAA method's
    DepL start: feasible for the true problem, not always for the sample); the caller offers
    what it has checked itself.
    """
    saved = _LISTENERS[:]
    _LISTENERS.clear()
    try:
        yield
    finally:
        _LISTENERS[:] = saved
