"""Imported by the harness's fork server (a preload): there, it ignores SIGTERM.

A scheduler that stops a job signals every process of it (SLURM's ``scancel`` sends SIGTERM to
the whole job). The fork server must outlive that signal: the run processes it forked die with it
(``PR_SET_PDEATHSIG``), and they need their grace to return their incumbents to the harness. The
server still ends with the harness (it exits when its pipe from the harness closes), and SIGINT
it ignores already (``multiprocessing.forkserver``). A run process resets both signals
(:func:`deplbench.watch._child`). Imported anywhere else, the module does nothing.

Imports nothing of deplbench.
"""

from __future__ import annotations

import signal
import sys


def _in_fork_server() -> bool:
    """Whether this import runs inside ``multiprocessing.forkserver.main`` (its preloading)."""
    server = sys.modules.get("multiprocessing.forkserver")
    if server is None:
        return False
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is server.main.__code__:
            return True
        frame = frame.f_back
    return False


if _in_fork_server():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
