"""Every reference in the docstrings, in ``docs/*.md`` and in ``README.md`` names something that exists.

In every docstring of deplbench (modules, classes, functions): each Sphinx role (``:mod:``,
``:class:``, ``:func:``, ``:meth:``, ``:data:``, ``:attr:``, ``:exc:``), each double-backticked
``deplbench.x.y`` (or ``formulations.x``, read as ``deplbench.formulations.x``) and each repository
path (``formulations/exact/work.py``, ``docs/exact.md``, ``tests/test_x.py::test_y``). In the pages:
each such dotted name in code (inline or fenced) and each repository path. Names resolve
statically (the source's definitions and imports, nothing imported), except the names a lazy
package (PEP 562) exports, which are imported.

A relative target (``:mod:`.region```) resolves as Sphinx does: in the current module or package, a
parent, or as the suffix of any module. A target outside deplbench (``numpy.ndarray``) is not
checked. Old module paths cited as old (the keys of ``deplbench.benchmarks.harness.config.MOVED``)
count as existing; a dotted name that starts with a module of the layout before issue 26
(``saa_start.encode``, ``exact_bounds.Bounder``) does not. A failure lists each stale reference with its module and line: fix the
reference, not this test.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path

from deplbench import architecture as arch

ROOT = Path(__file__).resolve().parents[2]
FOUND = arch.modules()
#: the folders a repository path starts with
TOP = ("src", "instances", "formulations", "heuristics", "benchmarks", "tests", "docs")
PATH = re.compile(r"(?<![\w/.~-])(?:" + "|".join(TOP) + r")/[\w/.*-]*\w(?:::\w+)?")
ROLE = re.compile(r":(mod|class|func|meth|data|attr|exc):`([^`]+)`")
DOTTED = re.compile(r"(?<![\w.])deplbench(?:\.\w+)+")
CODE = re.compile(r"```.*?```|``.*?``|`[^`\n]+`", re.S)
SHORT = re.compile(r"(?<![\w.])(?:instances|formulations|heuristics|benchmarks)(?:\.[a-z_]\w*)+")
#: placeholders of a name (``python -m deplbench.benchmarks.perf.NAME``, ``published/deplbench-library-VERSION.solu``)
PLACEHOLDERS = {"NAME", "VERSION"}
#: the flat prefixes of the layout before issue 26 (``saa_start`` is now ``formulations/saa/start.py``)
FLAT = {"exact": "deplbench.formulations.exact", "saa": "deplbench.formulations.saa",
        "bench": "deplbench.benchmarks.perf", "library": "deplbench.benchmarks.library",
        "harness": "deplbench.benchmarks.harness"}
#: a dotted name in code whose first part may be a module of the old layout (``saa_start.encode``)
OLD_DOTTED = re.compile(r"(?<![\w.])([a-z]\w*)\.(\w+)")
#: suffixes of file names (``instances.parquet`` is a file, not a module)
FILE_TYPES = {"py", "md", "json", "parquet", "csv", "toml", "duckdb", "solu", "mps", "lp", "html", "txt", "sol"}
#: optional dependencies a docstring may cite although they are not installed here
OPTIONAL = {"torch"}
#: what the recipes of ``docs/extending.md`` create (they do not exist until a reader writes them)
EXAMPLES = {"heuristics/greedy.py", "instances/families/ring.py", "deplbench.heuristics.greedy",
            "deplbench.instances.families.ring", "formulations/backends/milp_mine.py",
            "deplbench.formulations.backends.milp_mine"}
#: stale references in files another part of issue 62 rewrites (fixed there: then remove them here);
#: keyed without line numbers (:func:`_key`), so that a moved line still matches
OWNED_ELSEWHERE: set[str] = set()


def _moved_map() -> dict[str, str]:
    tree = ast.parse(FOUND["deplbench.benchmarks.harness.config"].read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MOVED":
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values, strict=True)}
    raise AssertionError("deplbench.benchmarks.harness.config.MOVED not found")


MOVED = set(_moved_map())


def _names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body binds: definitions, assignments, imports (and in if/try)."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out[(a.asname or a.name).split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try)):
            for part in (node.body, node.orelse, *(h.body for h in getattr(node, "handlers", ())),
                         getattr(node, "finalbody", [])):
                out.update(_names(part))
    return out


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(FOUND[module].read_text(), str(FOUND[module]))


@cache
def _scope(module: str) -> dict[str, ast.AST]:
    return _names(_tree(module).body)


@cache
def _local_imports(module: str) -> dict[str, ast.AST]:
    """Names imported anywhere in the module (inside functions too: a docstring may cite them)."""
    out: dict[str, ast.AST] = {}
    for node in ast.walk(_tree(module)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return out


def _lazy(module: str, rest: list[str]) -> bool:
    """A name a PEP 562 package exports (``__getattr__ = ...``): import it to see."""
    if "__getattr__" not in _scope(module):
        return False
    try:
        obj = importlib.import_module(module)
        for r in rest:
            obj = getattr(obj, r)
    except Exception:  # noqa: BLE001 - any failure means: not there
        return False
    return True


def _imported(node: ast.AST, name: str) -> str | None:
    """The full dotted name that ``name`` stands for in an import statement (None: outside deplbench)."""
    for a in node.names:
        if (a.asname or a.name).split(".")[0] != name:
            continue
        if isinstance(node, ast.Import):
            full = a.name if a.asname else name
        elif node.level:
            return None
        else:
            full = f"{node.module}.{a.name}"
        return full if full.startswith("deplbench") else None
    return None


def _member(module: str, cls: ast.ClassDef, rest: list[str], seen: int = 0) -> bool:
    if not rest:
        return True
    body = _names(cls.body)
    selves = {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name) and n.value.id == "self"}
    if rest[0] in body or rest[0] in selves:
        return True  # a member's own attributes are not checked
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else None
        node = _scope(module).get(name) if name else None
        if isinstance(node, ast.ClassDef) and seen < 10:
            if _member(module, node, rest, seen + 1):
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and _imported(node, name):
            if resolve(f"{_imported(node, name)}.{'.'.join(rest)}"):
                return True
        elif not isinstance(base, ast.Name) or name not in ("object",):
            return True  # an outside base (Enum, BaseModel, NamedTuple...): its members are not checked
    return False


def _in_module(module: str, rest: list[str]) -> bool:
    if not rest:
        return True
    node = _scope(module).get(rest[0])
    if node is None:
        return _lazy(module, rest)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        full = _imported(node, rest[0])
        return True if full is None else resolve(".".join([full, *rest[1:]]))
    if isinstance(node, ast.ClassDef):
        return _member(module, node, rest[1:])
    return len(rest) == 1


@cache
def resolve(target: str) -> bool:
    """Whether the absolute dotted ``target`` (a module, or a name in one) exists in deplbench."""
    if target in MOVED:
        return True
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module in FOUND:
            rest = parts[i:]
            if len(rest) == 1 and rest[0] in PLACEHOLDERS and FOUND[module].name == "__init__.py":
                return True
            return _in_module(module, rest)
    return False


def resolve_in(module: str, target: str, scope: list[str]) -> bool:
    """Whether a role's ``target`` exists, read in ``module`` (and in the classes ``scope``)."""
    target = target.lstrip("~!").removesuffix("()")
    if target.startswith("."):
        name = target.lstrip(".")
        package = module if FOUND[module].name == "__init__.py" else module.rpartition(".")[0]
        bases = [module] + [".".join(package.split(".")[:i]) for i in range(package.count(".") + 1, 0, -1)]
        return any(resolve(f"{b}.{name}") for b in bases) or any(
            m.endswith("." + name.split(".")[0]) and resolve(".".join([m, *name.split(".")[1:]])) for m in FOUND)
    if target.startswith("deplbench.") or target == "deplbench":
        return resolve(target)
    first = target.split(".")[0]
    for i in range(len(scope), 0, -1):  # a name of an enclosing class, as Sphinx reads it
        if resolve(".".join([module, *scope[:i], target])):
            return True
    if first in _scope(module):
        return _in_module(module, target.split("."))
    node = _local_imports(module).get(first)
    if node is not None:
        full = _imported(node, first)
        return True if full is None else resolve(".".join([full, *target.split(".")[1:]]))
    if "." not in target:
        return hasattr(builtins, target) or _lazy(module, [target])
    return first in OPTIONAL or importlib.util.find_spec(first) is not None  # outside deplbench


def _docstrings(tree: ast.Module):
    """(docstring, enclosing class names, line) of the module and of every class and function."""
    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(child, clean=False)
                inner = [*scope, child.name] if isinstance(child, ast.ClassDef) else scope
                if doc:
                    yield doc, inner, child.lineno
                yield from walk(child, inner)

    doc = ast.get_docstring(tree, clean=False)
    if doc:
        yield doc, [], 1
    yield from walk(tree, [])


def path_exists(ref: str) -> bool:
    """A repository path (a glob allowed), ``tests/test_x.py::test_y`` (that test defined there), or
    ``benchmarks/perf/depl_speed.old_tree`` (a name of that module). A path with a placeholder
    (``instances/NAME.json`` of a built library) is not checked."""
    if ref in EXAMPLES or any(p in re.split(r"[/.:-]", ref) for p in PLACEHOLDERS):
        return True
    path, _, test = ref.partition("::")
    hits = list(ROOT.glob(path)) if "*" in path else [ROOT / path] if (ROOT / path).exists() else []
    stem, _, name = path.rpartition(".")
    if not hits and (ROOT / f"{stem}.py").is_file() and "/" not in name:
        hits, test = [ROOT / f"{stem}.py"], name
    if not hits:
        return False
    return not test or any(re.search(rf"^\s*(async )?(def|class) {re.escape(test)}\b", h.read_text(), re.M)
                           for h in hits if h.is_file())


def _dotted(code: str) -> list[str]:
    """The deplbench names in a piece of code: ``deplbench.x.y``, and ``formulations.x`` read as
    ``deplbench.formulations.x``."""
    return [d for d in DOTTED.findall(code) if d not in EXAMPLES] + [
        f"deplbench.{d}" for d in SHORT.findall(code) if d.rpartition(".")[2] not in FILE_TYPES]


@cache
def _old_module(name: str) -> str | None:
    """The module a flat module name of the old layout stands for now (None: not such a name)."""
    if any(m.rpartition(".")[2] == name for m in FOUND):
        return None
    moved = {k.rpartition(".")[2]: v for k, v in _moved_map().items()}
    if name in moved:
        return moved[name]
    prefix, _, rest = name.partition("_")
    return f"{FLAT[prefix]}.{rest}" if prefix in FLAT and f"{FLAT[prefix]}.{rest}" in FOUND else None


def _old(code: str) -> list[str]:
    """The dotted names in a piece of code that start with a module of the old layout."""
    out = []
    for first, _ in OLD_DOTTED.findall(code):
        new = _old_module(first)
        if new and first not in FILE_TYPES:
            out.append(f"{first} (old layout: now {new})")
    return out


def stale_in_docstrings() -> list[str]:
    bad = []
    for module in sorted(FOUND):
        for doc, scope, line in _docstrings(_tree(module)):
            where = f"{module} (line {line})"
            for role, target in ROLE.findall(doc):
                if not resolve_in(module, target, scope):
                    bad.append(f"{where}: :{role}:`{target}`")
            for span in re.findall(r"``(.*?)``", doc, re.S):
                bad += [f"{where}: ``{d}``" for d in _dotted(span) if not resolve(d)]
                bad += [f"{where}: {d}" for d in _old(span)]
            bad += [f"{where}: {p}" for p in PATH.findall(doc) if not path_exists(p)]
    return bad


def stale_in_docs() -> list[str]:
    bad = []
    for doc in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        text, rel = doc.read_text(), doc.relative_to(ROOT)
        for n, line in enumerate(text.splitlines(), 1):
            bad += [f"{rel}:{n}: {p}" for p in PATH.findall(line) if not path_exists(p)]
        for span in CODE.finditer(text):
            n = text.count("\n", 0, span.start()) + 1
            bad += [f"{rel}:{n}: {d}" for d in _dotted(span.group()) if not resolve(d)]
            bad += [f"{rel}:{n}: {d}" for d in _old(span.group())]
    return bad


def test_the_resolver_finds_what_exists_and_refuses_what_does_not():
    assert resolve("deplbench.formulations.exact.region")
    assert resolve("deplbench.registry.register_solver")
    assert resolve("deplbench.registry.Entry")  # imported into registry
    assert resolve("deplbench.results.Status.optimal")
    assert resolve("deplbench.evaluate")  # the facade's lazy name
    assert resolve("deplbench.benchmarks.harness_testing")  # an old path, kept in MOVED
    assert not resolve("deplbench.formulations.exact.exact_region")
    assert not resolve("deplbench.registry.no_such_function")
    assert resolve("deplbench.results.SolveResult.plan")
    assert not resolve("deplbench.results.SolveResult.no_such_member")
    exact = "deplbench.formulations.exact.exact"
    assert resolve_in(exact, ".region", []) and resolve_in(exact, "~.work", [])
    assert not resolve_in(exact, ".exact_region", []) and not resolve_in(exact, "~.exact_bounds.Bounder", [])
    assert resolve_in(exact, "numpy.ndarray", [])
    assert path_exists("formulations/exact/methods.py") and path_exists("benchmarks/library/published/*.solu")
    assert path_exists("tests/docs/test_references.py::test_the_resolver_finds_what_exists_and_refuses_what_does_not")
    assert not path_exists("tests/docs/test_references.py::test_nothing") and not path_exists("docs/nothing.md")
    assert _old_module("saa_start") == "deplbench.formulations.saa.start"
    assert _old_module("random_family") == "deplbench.instances.families.random"  # from MOVED
    assert _old_module("saa_bounds") is None and _old_module("exact") is None  # current module names
    assert _old("`saa_start.encode` and `start.encode`") == ["saa_start (old layout: now deplbench.formulations.saa.start)"]
    assert _key("m (line 9): :mod:`x`") == "m: :mod:`x`" and _key("docs/a.md:12: x") == "docs/a.md: x"
    assert PATH.findall("see `formulations/exact/work.py`, docs/exact.md.") == ["formulations/exact/work.py",
                                                                              "docs/exact.md"]


def _key(stale: str) -> str:
    """A stale reference without its line: ``module (line 9): ref`` -> ``module: ref``."""
    return re.sub(r" \(line \d+\):|(?<=\.md):\d+:", ":", stale, count=1)


def test_every_docstring_and_docs_reference_exists():
    stale = stale_in_docstrings() + stale_in_docs()
    found = [_key(b) for b in stale]
    bad = [b for b in stale if _key(b) not in OWNED_ELSEWHERE]
    assert bad == [], "stale references (fix the reference, not the test):\n" + "\n".join(bad)
    fixed = sorted(OWNED_ELSEWHERE - set(found))
    assert fixed == [], "fixed (or moved) since: remove them from OWNED_ELSEWHERE:\n" + "\n".join(fixed)


def test_the_readme_lists_every_perf_script():
    """The Development paragraph of README.md names every script of ``benchmarks/perf/``, and no other."""
    text = (ROOT / "README.md").read_text()
    para = next(p for p in text.split("\n\n") if "deplbench.benchmarks.perf.NAME" in p)
    listed = re.findall(r"`(\w+)`", para.split("NAME one of", 1)[1])
    scripts = {p.stem for p in (ROOT / "benchmarks" / "perf").glob("*.py") if p.stem != "__init__"}
    assert sorted(scripts - set(listed)) == [], "README.md, Development: add these perf scripts"
    assert sorted(set(listed) - scripts) == [], "README.md, Development: these perf scripts are gone"
