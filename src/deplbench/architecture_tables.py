"""The module tables of ``docs/ARCHITECTURE.md``, generated from each module's docstring summary.

One table per package (its folder, its import name, its own summary), one row per module or
subpackage with the first sentence of its docstring. :mod:`deplbench.architecture` writes them
between :data:`BEGIN` and :data:`END` when it redraws the picture
(``python -m deplbench.architecture docs/ARCHITECTURE.md``); ``tests/src/deplbench/test_architecture.py``
fails when a module is missing or a row is stale.

May import: the standard library only. Imported by: :mod:`deplbench.architecture` and the tests.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

BEGIN, END = "<!-- modules:begin (python -m deplbench.architecture docs/ARCHITECTURE.md) -->", "<!-- modules:end -->"

#: a Sphinx role (``:mod:`~a.b```) in a docstring; the table shows its target as code
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
#: the end of a sentence: a full stop before a capital (``Fig. 3`` and ``e.g. x`` go on)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def folder_of(package: str, top_packages: tuple[str, ...]) -> str:
    """The source folder of ``package``: pyproject maps ``deplbench`` to ``src/deplbench/`` and
    each other top package to its own folder (``deplbench.instances`` to ``instances/``)."""
    top = max((t for t in top_packages if package == t or package.startswith(t + ".")), key=len)
    base = "src/deplbench" if top == "deplbench" else top.removeprefix("deplbench.")
    rest = package.removeprefix(top).lstrip(".").replace(".", "/")
    return f"{base}/{rest}/" if rest else f"{base}/"


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line, as Markdown (``x`` -> `x`)."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    first = " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())
    first = _SENTENCE.split(first, maxsplit=1)[0]
    first = _ROLE.sub(lambda m: f"``{m.group(1)}``", first).replace("``", "`")
    return first.replace("|", "\\|")


def render(found: dict[str, Path], top_packages: tuple[str, ...]) -> str:
    """One table per package of ``found`` (module -> source file): the top folders in the order of
    ``top_packages``, then each folder's subpackages by name."""
    def order(pkg: str) -> tuple[int, str]:
        top = max((t for t in top_packages if pkg == t or pkg.startswith(t + ".")), key=len)
        return top_packages.index(top), folder_of(pkg, top_packages)

    packages = sorted((m for m, p in found.items() if p.name == "__init__.py"), key=order)
    out: list[str] = []
    for pkg in packages:
        rows = []
        for mod in sorted(found):
            parent, _, name = mod.rpartition(".")
            if parent != pkg:
                continue
            is_pkg = found[mod].name == "__init__.py"
            rows.append(f"| `{name}/` | {summary(found[mod])} |" if is_pkg else f"| `{name}.py` | {summary(found[mod])} |")
        out += [f"### `{folder_of(pkg, top_packages)}` (`{pkg}`)", "", summary(found[pkg]), ""]
        if rows:
            out += ["| module | what |", "|---|---|", *rows, ""]
    return "\n".join(out).rstrip()
