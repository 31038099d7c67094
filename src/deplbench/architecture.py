"""The layout as data: the parts of deplbench, what each may import, and a check of the code against it.

Every module belongs to one part (the longest prefix in :data:`PARTS`); an import from part A of
a module in part B is allowed when B is A itself or listed in :data:`MAY_IMPORT` for A. Imports
inside functions count (an import cycle hidden in a function is still a cycle); imports under
``if TYPE_CHECKING:`` do not (they never run). ``tests/src/deplbench/test_architecture.py`` enforces the rules
and the absence of import cycles, and that ``docs/ARCHITECTURE.md`` shows the current picture and
module tables (:mod:`deplbench.architecture_tables`): ``python -m deplbench.architecture
docs/ARCHITECTURE.md`` redraws both.

May import: the standard library and :mod:`deplbench.architecture_tables`. Imported by: the tests
and its own ``__main__``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deplbench import architecture_tables

#: part -> one-line role (the order is the picture's, bottom layer first)
PARTS: dict[str, str] = {
    "core": "errors, results (Status, SolveResult), incumbent, params, files, watch, version, numeric, "
            "memlimit, leftovers, jsonvalues",
    "registry": "methods and families by name; the conformance checks",
    "instances.laws": "distributions of the loss terms (penalty and noise laws)",
    "instances": "Instance, Plan, files, semantics, scenario sampling",
    "instances.evaluator": "the judge: cost, time and the certified loss quantile",
    "instances.calibration": "laws fitted to training curves",
    "instances.families": "paper, random, calibrated and study families",
    "formulations": "allocation, sequences, knapsack (shared by exact and SAA)",
    "formulations.exact": "certified branch-and-bound and enumeration",
    "formulations.saa": "the SAA MILP, its strengthening and file translations",
    "formulations.backends": "one module per MIP solver interface",
    "heuristics.datasets": "stage 1: dataset selection",
    "heuristics.models": "stage 2: model selection (eta)",
    "heuristics": "stage 3 (eps), the DepL pipeline, depl, depl-plus, best-exp",
    "benchmarks.harness": "grids, runs, the DuckDB store",
    "benchmarks.site": "offline web pages: layout, sortable tables, interactive charts",
    "benchmarks.report": "report sections, tables, figures, the report site",
    "benchmarks.library": "the graded instance library",
    "benchmarks": "the notebook API (run_config, read_results)",
    "benchmarks.perf": "hand-run performance scripts",
    "cli": "the deplbench command",
    "facade": "import deplbench as db",
}

#: the packages the walk starts from (``deplbench`` and the folders pyproject maps into it)
TOP_PACKAGES = ("deplbench", "deplbench.instances", "deplbench.formulations", "deplbench.heuristics",
                "deplbench.benchmarks")
#: modules of the core (the rest of deplbench.* is found by prefix)
CORE = ("deplbench.errors", "deplbench.results", "deplbench.incumbent", "deplbench.params", "deplbench.files",
        "deplbench.watch", "deplbench.lazy", "deplbench.version", "deplbench.numeric", "deplbench.architecture",
        "deplbench.architecture_tables", "deplbench.memlimit", "deplbench.leftovers", "deplbench.jsonvalues")
_INSTANCES = {"instances", "instances.laws", "instances.evaluator", "instances.calibration", "instances.families"}
_BELOW = {"core", "registry"} | _INSTANCES
#: the problem definition and its judge, what every method builds on
_DEFINITION = {"core", "registry", "instances", "instances.laws", "instances.evaluator"}
#: part -> the other parts it may import
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "registry": {"core", "instances", "instances.laws", "instances.evaluator"},
    "instances.laws": {"core"},
    "instances": {"core", "instances.laws"},
    "instances.evaluator": {"core", "instances", "instances.laws"},
    "instances.calibration": {"core", "instances", "instances.laws"},
    "instances.families": _BELOW - {"instances.families"},
    "formulations": _DEFINITION,
    "formulations.exact": _DEFINITION | {"formulations"},
    "formulations.saa": _DEFINITION | {"formulations"},
    "formulations.backends": _DEFINITION | {"formulations", "formulations.saa"},
    "heuristics.datasets": _DEFINITION - {"registry"},
    "heuristics.models": _DEFINITION - {"registry"},
    "heuristics": _DEFINITION | {"heuristics.datasets", "heuristics.models"},
    "benchmarks.harness": _BELOW,
    "benchmarks.site": {"core"},
    "benchmarks.report": _BELOW | {"benchmarks.harness", "benchmarks.site", "heuristics", "heuristics.datasets",
                                   "heuristics.models", "formulations.saa"},
    "benchmarks.library": _BELOW | {"benchmarks.harness", "benchmarks.report", "benchmarks.site", "formulations",
                                    "formulations.exact", "formulations.saa", "formulations.backends"},
    "benchmarks": _BELOW | {"benchmarks.harness", "benchmarks.report"},
    "benchmarks.perf": set(PARTS) - {"facade", "benchmarks.perf"},
    "cli": set(PARTS) - {"facade", "cli"},
    "facade": set(PARTS) - {"facade"},
}


def part_of(module: str) -> str | None:
    """The part of a ``deplbench`` module (None outside deplbench)."""
    if module == "deplbench":
        return "facade"
    if module in CORE:
        return "core"
    if module in ("deplbench.registry", "deplbench.checks", "deplbench.certify", "deplbench.loading"):
        return "registry"
    best = None
    for part in PARTS:
        prefix = "deplbench." + part
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(part) > len(best)):
            best = part
    return best


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``line`` (``inner``: inside a function)."""

    source: str
    target: str
    line: int
    inner: bool


def modules() -> dict[str, Path]:
    """Every module of the installed ``deplbench`` and its source file.

    Packages are imported to read their ``__path__`` (their ``__init__`` modules import nothing
    heavy); plain modules are found without importing them. The top folders are mapped by
    pyproject, so the walk starts from :data:`TOP_PACKAGES`.
    """
    out: dict[str, Path] = {}
    todo = list(TOP_PACKAGES)
    while todo:
        name = todo.pop()
        pkg = importlib.import_module(name)
        out[name] = Path(pkg.__file__)
        for info in pkgutil.iter_modules(pkg.__path__):
            sub = f"{name}.{info.name}"
            if info.ispkg:
                todo.append(sub)
            else:
                out[sub] = Path(importlib.util.find_spec(sub).origin)
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            yield from _imports(ast.Module(body=node.orelse, type_ignores=[]), in_function)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _imports(node, inner)


def edges(found: dict[str, Path] | None = None) -> list[Edge]:
    """Every import of a deplbench module by a deplbench module."""
    found = modules() if found is None else found
    out = []
    for source, path in sorted(found.items()):
        tree = ast.parse(path.read_text(), str(path))
        for node, inner in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in found else node.module
                           for a in node.names]
            else:
                targets = []
            for target in targets:
                if target.startswith("deplbench") and target != source:
                    out.append(Edge(source, target, node.lineno, inner))
    return out


def violations(all_edges: list[Edge]) -> list[str]:
    """Imports the rules forbid, one line each (module:line -> module, parts)."""
    bad = []
    for e in all_edges:
        a, b = part_of(e.source), part_of(e.target)
        if a is None or b is None or a == b or b in MAY_IMPORT[a]:
            continue
        bad.append(f"{e.source}:{e.line} imports {e.target} ({a} may not import {b})")
    return bad


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


BEGIN, END = "<!-- layout:begin (python -m deplbench.architecture docs/ARCHITECTURE.md) -->", "<!-- layout:end -->"


def _reduced() -> dict[str, list[str]]:
    """MAY_IMPORT without the arrows another allowed part already implies (transitive reduction)."""
    def reach(a: str, seen: set[str]) -> set[str]:
        for b in MAY_IMPORT[a]:
            if b not in seen:
                seen.add(b)
                reach(b, seen)
        return seen

    out = {}
    for a in PARTS:
        direct = MAY_IMPORT[a]
        implied = set().union(*(reach(b, set()) for b in direct)) if direct else set()
        out[a] = [b for b in PARTS if b in direct and b not in implied]
    return out


def render() -> str:
    """The picture (Mermaid: an arrow A --> B reads "A may import B") and the table of the rules."""
    groups: dict[str, list[str]] = {}
    for part in PARTS:
        top = part.split(".")[0] if part not in ("core", "registry", "cli", "facade") else "deplbench"
        groups.setdefault(top, []).append(part)
    node = {p: p.replace(".", "_") for p in PARTS}
    lines = ["```mermaid", "flowchart BT"]
    for top, parts in groups.items():
        lines.append(f'  subgraph g_{top}["{top}/"]')
        lines += [f'    {node[p]}["{p}"]' for p in parts]
        lines.append("  end")
    for a, targets in _reduced().items():
        lines += [f"  {node[a]} --> {node[b]}" for b in targets]
    lines += ["```", "", "| part | what | may import (besides itself) |", "|---|---|---|"]
    for part, role in PARTS.items():
        allowed = ", ".join(f"`{b}`" for b in PARTS if b in MAY_IMPORT[part]) or "nothing of deplbench"
        lines.append(f"| `{part}` | {role} | {allowed} |")
    return "\n".join(lines)


#: the command that redraws the generated parts of ``docs/ARCHITECTURE.md``
REDRAW = "python -m deplbench.architecture docs/ARCHITECTURE.md"


def tables() -> str:
    """The module tables (:func:`deplbench.architecture_tables.render` over :func:`modules`)."""
    return architecture_tables.render(modules(), TOP_PACKAGES)


def _put(text: str, begin: str, end: str, body: str) -> str:
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def write(doc: Path) -> bool:
    """Put :func:`render` and :func:`tables` between their markers of ``doc``; True when it changed."""
    text = doc.read_text()
    new = _put(text, BEGIN, END, render())
    new = _put(new, architecture_tables.BEGIN, architecture_tables.END, tables())
    if new != text:
        doc.write_text(new)
    return new != text


if __name__ == "__main__":  # pragma: no cover
    print("updated" if write(Path(sys.argv[1])) else "up to date")
