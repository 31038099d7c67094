"""CPU time (user, system) of a process and its descendants, as the watcher and the run child see it.

Two views, each a lower bound of the true figure, which :mod:`deplbench.watch` combines (the larger):

* :func:`own_and_reaped` is read by the child itself, just before it sends its result:
  ``getrusage`` of the process (all its threads) plus every descendant it has waited for;
* :func:`tree` is polled by the watcher: for the child and each live descendant, its own time
  plus the time of the descendants it has reaped (``/proc/PID/stat`` through psutil). A
  descendant that ended unreaped between two polls (an orphan) is lost, at most a poll's worth.

A process killed by a limit sends nothing: the watcher's last poll, taken just before the kill,
is its figure.
"""

from __future__ import annotations

import contextlib
import resource

#: (user seconds, system seconds)
CpuTimes = tuple[float, float]


def own_and_reaped() -> CpuTimes:
    """User and system seconds of this process and of the children it has reaped."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


def tree(pid: int) -> CpuTimes | None:
    """User and system seconds of ``pid``, its live descendants and the children each has reaped."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    user = system = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            user += t.user + t.children_user
            system += t.system + t.children_system
    return user, system


def larger(a: CpuTimes | None, b: CpuTimes | None) -> CpuTimes | None:
    """The reading with the larger total (both are lower bounds of the same quantity)."""
    if a is None or b is None:
        return a if b is None else b
    return a if sum(a) >= sum(b) else b
