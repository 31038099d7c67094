"""The tests are laid out after the code (tests/README.md, "Layout"), so the layout cannot drift.

A test file ``tests/<folder>/test_<name>.py`` tests the module ``<folder>/<name>.py`` (or the package
``<folder>/<name>/``) of the repository; ``<name>`` may go on with ``_<topic>`` when a module has several
test files (``test_quantile_caps.py`` tests ``quantile.py``). The suites that test no one module live in
the cross-cutting folders below; nothing else is a test file.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
#: the folders of code the tests mirror (``src/deplbench`` is mirrored as ``tests/src/deplbench``)
CODE = ("src", "instances", "formulations", "heuristics", "benchmarks")
#: cross-cutting folders: suites over many modules at once (kept in step with tests/README.md)
CROSS = ("e2e", "hostile", "docs")
#: test files allowed at the top of tests/
TOP = ("test_layout.py",)


def module_of(test_file: Path) -> Path | None:
    """The module or package a mirrored test file tests, or None when its path names none."""
    rel = test_file.resolve().relative_to(TESTS)
    if not rel.parts or rel.parts[0] not in CODE:
        return None
    folder = ROOT / rel.parent
    parts = rel.stem.removeprefix("test_").split("_")
    for i in range(len(parts), 0, -1):
        name = "_".join(parts[:i])
        for found in (folder / f"{name}.py", folder / name / "__init__.py"):
            if name and found.is_file():
                return found
    return None


def misplaced(test_files) -> list[str]:
    """The test files that break the layout, each with the reason."""
    bad = []
    for f in test_files:
        rel = f.resolve().relative_to(TESTS)
        if len(rel.parts) == 1:
            if rel.name not in TOP:
                bad.append(f"{rel}: a test file at the top of tests/ (move it under the module it tests)")
        elif rel.parts[0] in CROSS:
            continue
        elif not rel.name.startswith("test_"):
            bad.append(f"{rel}: name it test_<module>.py after the module it tests")
        elif module_of(f) is None:
            bad.append(f"{rel}: no module {rel.parent}/{rel.stem.removeprefix('test_')}.py "
                       f"(nor a package, nor a shorter prefix of the name) in the repository")
    return bad


def _test_files() -> list[Path]:
    found = {*TESTS.rglob("test_*.py"), *TESTS.rglob("*_test.py")}
    return sorted(f for f in found if "__pycache__" not in f.parts)


def test_every_test_file_names_the_module_it_tests_or_a_cross_cutting_folder():
    bad = misplaced(_test_files())
    assert bad == [], "tests/README.md gives the layout:\n" + "\n".join(bad)


def test_the_rule_finds_the_module_from_the_test_path():
    assert module_of(TESTS / "instances/evaluator/test_quantile.py") == ROOT / "instances/evaluator/quantile.py"
    assert module_of(TESTS / "src/deplbench/test_registry_open_design.py") == ROOT / "src/deplbench/registry.py"
    assert module_of(TESTS / "heuristics/test_depl_plus.py") == ROOT / "heuristics/depl_plus.py"
    assert module_of(TESTS / "formulations/test_saa_milp.py") == ROOT / "formulations/saa/__init__.py"
    assert module_of(TESTS / "instances/test_nothing_here.py") is None
    assert module_of(TESTS / "docs/test_exact.py") is None


def test_a_drifted_file_is_named():
    bad = misplaced([TESTS / "test_quantile.py", TESTS / "instances/test_no_such_module.py",
                     TESTS / "instances/evaluator/quantile_test.py", TESTS / "e2e/test_anything.py"])
    assert [b.split(":")[0] for b in bad] == ["test_quantile.py", "instances/test_no_such_module.py",
                                              "instances/evaluator/quantile_test.py"]


def test_the_readme_names_every_cross_cutting_folder():
    readme = (TESTS / "README.md").read_text()
    assert all(f"tests/{c}/" in readme for c in CROSS)


def test_every_serial_entry_names_test_files_that_exist():
    """A renamed file must not leave the ``serial`` lane silently (CI would run it beside another test)."""
    from conftest import SERIAL

    files = [p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")]
    for entry in SERIAL:
        assert any(f.startswith(entry) for f in files), entry
