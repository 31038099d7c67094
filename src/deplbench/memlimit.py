"""The address-space safety net of a watched child, its own peak of resident memory, and the readings of a tree's.

The memory limit of a run is on the resident memory of its process tree, polled by the watcher
(:mod:`deplbench.watch`); this module gives the child only a cap on its address space far above
that limit (a runaway between two polls), and reads the peak the kernel kept for it.

May import: the standard library and psutil.
"""

from __future__ import annotations

import contextlib
import os
import resource

#: the address-space safety net: the child's virtual size now plus this many times the limit, plus
#: :data:`AS_NET_EXTRA_MB` (the limit itself is enforced on resident memory by the watcher)
AS_NET_FACTOR = 4.0
AS_NET_EXTRA_MB = 2048.0
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def address_space_net_mb(limit_mb: float) -> float:
    """Room of virtual memory the child gets above its size at the start, under a limit of ``limit_mb``."""
    return AS_NET_FACTOR * limit_mb + AS_NET_EXTRA_MB


def limit_memory(limit_mb: float) -> None:
    """Cap the address space far above ``limit_mb``: a safety net against a runaway between two polls.

    The limit of ``limit_mb`` is on resident memory and is the watcher's (:func:`deplbench.watch.call`); address
    space a method reserves without touching it counts against this net only.
    """
    import psutil

    mi = psutil.Process().memory_info()
    cap = int(mi.vms + address_space_net_mb(limit_mb) * 2**20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def own_peak_mb() -> float:
    """The largest resident memory of this process, or of one of its waited-for children (``ru_maxrss``)."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024.0


def rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` (one read of /proc)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except (OSError, ValueError, IndexError):
        return None


def tree_rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` and all its descendants."""
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return rss_mb(pid)
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss / 2**20
    return total
