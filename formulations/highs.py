"""HiGHS solver objects made one way: quiet, with an explicit thread count that the scheduler matches.

HiGHS runs its parallel parts on a scheduler that is set up by the first solve and kept (per
thread since highspy 1.16, process-wide before). A later solve that asks for another thread
count gets, in 1.14 and 1.15, a warning and the old count (a ``threads=1`` method silently ran
on two threads after a default-threaded LP of the same process); in 1.16 it is refused: the
solve returns ``kError`` with the model status ``kNotset``. Every HiGHS object the suite makes
comes from :func:`new_highs` (or goes through :func:`match_scheduler` before it solves), which
resets the calling thread's scheduler whenever the count it was set up with differs.

highspy 1.16 prints a two-line banner ("Running HiGHS ...") on standard output when the first
:class:`highspy.Highs` of a process is made, before any option can be set, so it lands in the middle
of ``deplbench run``'s progress bar once per run. :func:`silence_banner` makes that first object
with the process's standard output pointed at ``/dev/null``; :func:`new_highs` and the backends
that make their own object call it first.

Every MIP solve also gets :func:`workaround_options` (:func:`apply_workarounds`): options that keep
an upstream HiGHS bug of the versions the suite allows off the solve path (see there).

May import only highspy and the standard library (``formulations`` is imported by every solver).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import highspy

_STATE = threading.local()  # .threads: the count this thread's scheduler was last set up for
_FIRST: list = []  # the process's first Highs, kept: destroying one can touch the scheduler


def silence_banner() -> None:
    """Make this process's first :class:`highspy.Highs` with file descriptor 1 on ``/dev/null``.

    HiGHS prints its banner from C++ (``printf``), so redirecting Python's ``sys.stdout`` would not
    catch it; C's buffered output is flushed (``fflush(NULL)``) before the descriptor is restored.
    Idempotent and cheap after the first call.
    """
    if _FIRST:
        return
    import ctypes

    import highspy

    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        _FIRST.append(highspy.Highs())
        libc.fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


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


def highs_version(h: highspy.Highs | None = None) -> tuple[int, int]:
    """(major, minor) of HiGHS: asked of ``h`` (the loaded library), else highspy's installed version.

    No throwaway :class:`highspy.Highs` is made for it (an object destroyed can touch the scheduler):
    without highspy's metadata, the process's first object (:func:`silence_banner`, kept) is asked.
    """
    if h is not None:
        return int(h.versionMajor()), int(h.versionMinor())
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = version("highspy").split(".")[:2]
    except PackageNotFoundError:  # highspy without its metadata (a vendored copy): ask the kept first object
        silence_banner()
        return highs_version(_FIRST[0])
    return int(major), int(minor)


def workaround_options(h: highspy.Highs | None = None) -> dict[str, bool]:
    """HiGHS options that keep a known upstream bug off the solve path, for the loaded version.

    Upstream bug (HiGHS 1.14 and 1.16; docs/history/highspy-1.16.md, reproducer in
    docs/history/highspy-1.16/): the presolve of the RENS sub-MIP at the root leaves its matrix
    inconsistent (an assertion-enabled 1.14 build fails ``get_key(linknode) > get_key(root)`` in
    ``HPresolve::okFromCSC``), so ``prepareProbing`` -> ``setupDomainPropagation`` ->
    ``highsSparseTranspose`` reads and writes out of bounds. highspy 1.16 dies with SIGSEGV in
    ``Highs.run`` on an SAA model of the tests with its MIP start (test_strength.py, ``bigm="worst",
    cuts="mixing"``, per_run acyclic). Turning RENS off (``mip_heuristic_run_rens``) keeps that
    sub-MIP from being made; switching the "Enumeration" presolve rule off only moves the fault to
    ``runProbing``. Applied from 1.15 on only, so that every result under 1.14 stays what it was
    (1.14 reaches the fault on that model only without a start: one SIGSEGV in 51 runs).
    """
    if highs_version(h) >= (1, 15):
        return {"mip_heuristic_run_rens": False}
    return {}


def apply_workarounds(h: highspy.Highs) -> None:
    """Set :func:`workaround_options` on ``h`` (before its ``run``)."""
    for name, value in workaround_options(h).items():
        h.setOptionValue(name, value)


def new_highs(threads: int = 1) -> highspy.Highs:
    """A quiet :class:`highspy.Highs` set to ``threads`` threads, its scheduler matched, the workarounds set."""
    import highspy

    match_scheduler(threads)
    silence_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(threads))
    apply_workarounds(h)
    return h
