"""Float32 chunks that DepL stage 2's graphs keep their layers in, handed back when a graph is done.

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

import mmap
import sys
import threading

import numpy as np

CHUNK = 1 << 21  # floats in a graph's first chunk (8 MB: holds the layers of a default ``random`` graph)
HUGE = 1 << 24  # floats: chunks up to this size (64 MB) are numpy's, backed by huge pages (numpy advises it)
CAP = 1 << 26  # floats: chunks double up to this size (256 MB), then take half of what the graph holds
KEEP = 256 << 20  # bytes of free chunks kept at most
_FREE: list[np.ndarray] = []
_LOCK = threading.Lock()  # solves in threads of one process (a Dask worker's) share the pool


def take(n: int) -> np.ndarray:
    """A float32 chunk of at least ``n`` entries: the smallest free one that fits, else a new one."""
    with _LOCK:
        fits = [k for k, c in enumerate(_FREE) if len(c) >= n]
        if fits:
            return _FREE.pop(min(fits, key=lambda k: len(_FREE[k])))
    return _new(max(n, CHUNK))


def _new(n: int) -> np.ndarray:
    """A new chunk of ``n`` floats. numpy asks the kernel to back blocks of 4 MB and more with huge pages
    (fewer faults: 4 MB are filled about 0.7 ms faster); a chunk larger than ``HUGE`` is mapped with
    ordinary pages instead (faulting huge pages in was measured twice as slow at hundreds of MB:
    a graph of 2.4 GB in 5.0-5.3 s against 2.2-2.5 s)."""
    if n <= HUGE:
        return np.empty(n, dtype=np.float32)
    try:
        return np.frombuffer(mmap.mmap(-1, 4 * n), dtype=np.float32)  # writable, freed with the array
    except OSError as exc:  # ENOMEM under an address-space cap: the memout numpy's allocation would give
        raise MemoryError(f"stage 2 could not map {4 * n} bytes: {exc}") from exc


def next_size(held: int, count: int, need: int) -> int:
    """Floats of a graph's next chunk: doubling from ``CHUNK`` up to ``CAP``, then half of the ``held`` floats
    (so a graph of n floats takes O(log n) chunks and leaves at most a third of them unused), at least ``need``."""
    return max(need, min(CHUNK << count, max(CAP, held // 2)))


def take_largest() -> np.ndarray:
    """The largest free chunk (a graph's first: the most likely to hold all its layers), else a new one."""
    with _LOCK:
        if _FREE:
            return _FREE.pop(max(range(len(_FREE)), key=lambda k: len(_FREE[k])))
    return _new(CHUNK)


def give(chunk: np.ndarray) -> bool:
    """Keep ``chunk`` for a later :func:`take` when nothing else refers to it (and the pool has room).

    The caller passes its only reference (``chunks.pop()``); returns whether the chunk was kept.
    """
    # references: this frame's ``chunk`` and getrefcount's own; any other (a view, a name) keeps it out
    if sys.getrefcount(chunk) > 2 or isinstance(chunk.base, np.ndarray):  # (a view is not a chunk)
        return False
    with _LOCK:
        if sum(c.nbytes for c in _FREE) + chunk.nbytes > KEEP:
            return False
        _FREE.append(chunk)
    return True


def clear() -> None:
    """Drop every kept chunk."""
    with _LOCK:
        _FREE.clear()
