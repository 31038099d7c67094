"""The tuning constants of ``exact`` live in ``formulations/exact/knobs.py`` only (they must not scatter again)."""

from __future__ import annotations

import ast
from pathlib import Path

import deplbench.formulations.exact.knobs as knobs

EXACT = Path(knobs.__file__).parent

#: Module-level numeric constants of ``formulations/exact`` that are not tuning knobs, and why.
NOT_KNOBS = {
    **{("fractional.py", name): "an outcome code of the compiled knapsack" for name in ("MET", "EMPTY", "ONE", "MANY")},
    ("methods.py", "DEFAULT_MAX_NODES"): "a declared parameter's default (users set max_nodes)",
    ("methods.py", "DEFAULT_MAX_SEQUENCES"): "a declared parameter's default (users set max_sequences)",
    ("methods.py", "TEST_PARAMS"): "the conformance checks' parameters, not the search's",
    ("pauses.py", "NEVER"): "a sentinel: the largest C int, a collection threshold never reached",
    ("work.py", "UNITS_PER_S"): "the work unit's definition (about 1 ms of the reference machine)",
    ("work.py", "WORK_MODEL"): "the fitted work model's coefficients (benchmarks/perf/work_model.py)",
}


def _numeric(node: ast.AST) -> bool:
    """A literal built of numbers alone (containers, arithmetic; dict keys of any literal), no names or calls."""
    if any(isinstance(n, (ast.Name, ast.Call, ast.Attribute)) for n in ast.walk(node)):
        return False
    return any(isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(node))


def _targets(stmt: ast.stmt) -> list[str]:
    """The names a module-level assignment binds (tuple targets unpacked)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    else:
        return []
    out = []
    for t in targets:
        out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


def _module_constants(path: Path) -> list[tuple[str, bool]]:
    """``(name, numeric value)`` for every UPPERCASE name a module assigns at its top level."""
    out = []
    for stmt in ast.parse(path.read_text()).body:
        value = getattr(stmt, "value", None)
        for name in _targets(stmt):
            if name.lstrip("_").isupper():
                out.append((name, value is not None and _numeric(value)))
    return out


def _knob_names() -> set[str]:
    return {name for name, _ in _module_constants(EXACT / "knobs.py")}


def test_no_module_but_knobs_defines_a_numeric_constant():
    stray = []
    for path in sorted(EXACT.glob("*.py")):
        if path.name == "knobs.py":
            continue
        stray += [f"{path.name}: {name}" for name, numeric in _module_constants(path)
                  if numeric and (path.name, name) not in NOT_KNOBS]
    assert not stray, f"tuning constants outside knobs.py (move them there, or allow-list a non-knob): {stray}"


def test_no_module_redefines_or_aliases_a_knob():
    names = _knob_names()
    again = [f"{path.name}: {name}" for path in sorted(EXACT.glob("*.py")) if path.name != "knobs.py"
             for name, _ in _module_constants(path) if name in names]
    assert not again, again


def test_every_knob_is_numeric_and_used():
    consts = _module_constants(EXACT / "knobs.py")
    assert len(consts) >= 30 and all(numeric for _, numeric in consts), consts
    code = {p.name: p.read_text() for p in EXACT.glob("*.py") if p.name != "knobs.py"}
    unused = [name for name, _ in consts
              if not any(f"import {name}" in src or f" {name},\n" in src or f", {name}" in src for src in code.values())]
    assert not unused, f"knobs no module imports: {unused}"


def test_the_allow_list_names_real_constants():
    for (module, name), why in NOT_KNOBS.items():
        assert why and (name, True) in _module_constants(EXACT / module), (module, name)


def test_knob_names_are_not_mistaken_for_eps():
    """Neither DepL's ``eps`` nor machine epsilon: no knob is called ``EPS`` or ends in ``_EPS``."""
    assert not [n for n in _knob_names() if n == "EPS" or n.endswith("_EPS") or n.startswith("EPS_")]


def test_the_per_size_tables_cover_the_supports_with_covers():
    sizes = set(range(knobs.COVER_MIN_SIZE, knobs.COVER_MAX_SIZE + 1))
    for table in (knobs.COVER_MARGIN, knobs.TANGENT_MARGIN, knobs.COVER_START_CELLS, knobs.COVER_MAX_CELLS):
        assert set(table) == sizes
    assert knobs.LABEL_RECENT % knobs.LABEL_LEAF == 0
