"""How the registry finds code: entries named ``"module:function"`` and modules by name or file path.

A method or family declared with ``entry=`` lists (``deplbench solvers``) without importing its
implementation; :func:`prepare` imports what a method needs to run, so that
:func:`deplbench.registry.solve` can do it before the method's clock starts.

May import: the standard library only. Imported by: :mod:`deplbench.registry`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


class Entry:
    """A registered function named by ``"module:function"``, imported on its first call.

    A declaration that names its entry this way lists (``deplbench solvers``) without importing
    the implementation and its libraries, as cvxpy's ``import_solver()`` does. Picklable by name.
    """

    def __init__(self, ref: str):
        module, sep, attr = ref.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"an entry is 'module:function', got {ref!r}")
        self.ref = ref

    def resolve(self) -> Callable[..., Any]:
        """The function itself (its module imported)."""
        module, _, attr = self.ref.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Entry({self.ref!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Entry) and other.ref == self.ref

    def __hash__(self) -> int:
        return hash(self.ref)


def function_or_entry(func, entry: str | None):
    """The registered callable: ``func`` (a decorator's) or an :class:`Entry` of ``entry``."""
    if (func is None) == (entry is None):
        raise ValueError("give the function (as a decorator) or entry='module:function', not both")
    return Entry(entry) if entry is not None else func


def prepare(func, modules: Iterable[str]) -> None:
    """Import ``modules`` and, for an :class:`Entry`, its implementation (cheap once done).

    A method's first call in a process would otherwise import them inside its own run: about
    0.1 s for DepL's pipeline and 0.4 s for Pyomo, against DepL's 20-80 ms on a paper instance.
    """
    for module in modules:
        importlib.import_module(module)
    if isinstance(func, Entry):
        func.resolve()


def import_module(module: str):
    """Import a module by dotted name, or from a ``.py`` file path (a user's own solver or family file)."""
    if not module.endswith(".py"):
        return importlib.import_module(module)
    path = Path(module).resolve()
    key = "deplbench_user_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ModuleNotFoundError(f"no module file {module}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def importable(module: str) -> bool:
    """Whether ``module`` (a dotted name or a ``.py`` path) can be imported, without importing it."""
    if module.endswith(".py"):
        return Path(module).is_file()
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
