"""HiGHS solver objects made one way: quiet, with an explicit thread count that the scheduler matches.

HiGHS runs its parallel parts on a scheduler that is set up by the first solve and kept (per
thread since highspy 1.16, process-wide before). A later solve that asks for another thread
count gets, in 1.14 and 1.15, a warning and the old count (a ``threads=1`` method silently ran
on two threads after a default-threaded LP of the same process); in 1.16 it is refused: the
solve returns ``kError`` with the model status ``kNotset``. Every HiGHS object the suite makes
comes from :func:`new_highs` (or goes through :func:`match_scheduler` before it solves), which
resets the calling thread's scheduler whenever the count it was set up with differs.

May import only highspy and the standard library (``formulations`` is imported by every solver).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import highspy

_STATE = threading.local()  # .threads: the count this thread's scheduler was last set up for


def match_scheduler(threads: int) -> None:
    """Make the calling thread's HiGHS scheduler run ``threads`` threads from its next solve on.

    The scheduler is reset (``Highs.resetGlobalScheduler``, which highspy 1.14-1.16 all have)
    unless this thread's last solve through here asked for the same count: a reset is cheap,
    and a scheduler some other code set up (a count not known here) is reset too.
    """
    import highspy

    threads = int(threads)
    if getattr(_STATE, "threads", None) != threads:
        highspy.Highs.resetGlobalScheduler(True)
        _STATE.threads = threads


def new_highs(threads: int = 1) -> highspy.Highs:
    """A quiet :class:`highspy.Highs` set to ``threads`` threads, its scheduler matched."""
    import highspy

    match_scheduler(threads)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(threads))
    return h
