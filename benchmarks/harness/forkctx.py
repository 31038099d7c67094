"""The fork-server context of the harness's run processes, which never re-runs the caller's script.

A process started from the standard ``forkserver`` context is told where the parent's
``__main__`` came from and imports it again (as ``__mp_main__``) before it runs its target: a
plain script that calls :func:`deplbench.run_config` at module level, without an
``if __name__ == "__main__":`` guard, would run its grid again inside every run process. A run's
target is always a function of an importable ``deplbench`` module (picklable by reference), so
its process needs nothing of ``__main__``: this context's processes are launched without it.

May import only the standard library (it is imported by ``deplbench.benchmarks.harness.process``).
"""

from __future__ import annotations

import io
import os
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util

#: the preparation entries that make a child import the parent's ``__main__``
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")


def preparation_data(name: str) -> dict:
    """What a child is told to set up before its target runs, less the parent's ``__main__``."""
    data = spawn.get_preparation_data(name)
    for key in _MAIN_KEYS:
        data.pop(key, None)
    return data


class _Popen(popen_forkserver.Popen):
    """``popen_forkserver.Popen`` whose child is not given the parent's ``__main__``.

    The body is the standard library's ``_launch`` (CPython 3.11-3.13) with the preparation
    data taken from :func:`preparation_data`.
    """

    def _launch(self, process_obj) -> None:
        prep_data = preparation_data(process_obj._name)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # the parent's end of the data pipe, kept as a sentinel (as the stdlib does)
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(context.ForkServerProcess):
    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


class ScriptSafeContext(context.ForkServerContext):
    """The ``forkserver`` context, with processes that do not import the parent's ``__main__``."""

    Process = _Process


#: the one instance (contexts are stateless; the fork server itself is process-wide)
CONTEXT = ScriptSafeContext()
