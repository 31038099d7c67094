"""Float32 arenas that DepL stage 2's graphs keep their layers in, handed back when a graph is done.

A graph's layers take a few MB (``per_run`` default ``random``: about 4 MB per graph, three
graphs per solve). Fresh memory costs its page faults on first touch (about 1.5 ms per 4 MB
on the 2-core machine), and glibc returns large freed blocks to the system, so every graph
paid them again. The graphs of one solve run one after the other: a graph that is done gives
its chunks back (:func:`give`) and the next one takes them (:func:`take`), so a solve touches
the memory of its largest graph once. A chunk is taken back only when nothing else refers to
it (no view of it is alive), so no two graphs ever share memory. At most ``KEEP`` bytes are
kept, and the pipeline empties the pool (:func:`clear`) when its run ends, so no memory is held
after a DepL run (``exact``, which starts from one, would carry it through its search).

Imports numpy only.
"""

from __future__ import annotations

import sys

import numpy as np

CHUNK = 1 << 20  # floats per chunk (4 MB: numpy advises the kernel to back it with huge pages)
KEEP = 256 << 20  # bytes of free chunks kept at most
_FREE: list[np.ndarray] = []


def take(n: int) -> np.ndarray:
    """A float32 chunk of at least ``n`` entries: the smallest free one that fits, else a new one."""
    fits = [k for k, c in enumerate(_FREE) if len(c) >= n]
    if fits:
        return _FREE.pop(min(fits, key=lambda k: len(_FREE[k])))
    return np.empty(max(n, CHUNK), dtype=np.float32)


def take_largest() -> np.ndarray:
    """The largest free chunk (a graph's first arena: the most likely to hold all its layers), else a new one."""
    if _FREE:
        return _FREE.pop(max(range(len(_FREE)), key=lambda k: len(_FREE[k])))
    return np.empty(CHUNK, dtype=np.float32)


def give(chunk: np.ndarray) -> bool:
    """Keep ``chunk`` for a later :func:`take` when nothing else refers to it (and the pool has room).

    The caller passes its only reference (``chunks.pop()``); returns whether the chunk was kept.
    """
    # references: this frame's ``chunk`` and getrefcount's own; any other (a view, a name) keeps it out
    if sys.getrefcount(chunk) > 2 or chunk.base is not None:
        return False
    if sum(c.nbytes for c in _FREE) + chunk.nbytes > KEEP:
        return False
    _FREE.append(chunk)
    return True


def clear() -> None:
    """Drop every kept chunk."""
    _FREE.clear()
