"""Public names of a package imported on first use (PEP 562), so that importing it stays cheap.

May import: the standard library only. Imported by: the facade ``deplbench`` and ``deplbench.instances``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def exports(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` of ``package``: name -> the module that defines it.

    A name is imported from its module on first access and kept in the package's namespace.
    """

    def __getattr__(name: str):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
