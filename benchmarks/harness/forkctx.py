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

import ast
import io
import os
import sys
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


def unguarded_call_site() -> str | None:
    """``FILE:LINE`` of the calling script's top-level statement when it is not under an
    ``if __name__ == "__main__":`` guard, else None (a notebook, ``python -m``, a guarded call).

    Dask's local cluster starts its workers with ``spawn``, which re-runs the parent's script
    in each of them (this cannot be turned off as for the harness's own processes): such a call
    must be refused before anything starts.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or getattr(main, "__spec__", None) is not None or not path:
        return None
    frame = sys._getframe(1)
    line = None
    while frame is not None:  # the outermost frame running the script's own top level
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    if line is None:
        return None
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_guard(node.test) and node.lineno <= line <= node.end_lineno:
            return None
    return f"{path}:{line}"


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))
